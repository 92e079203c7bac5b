// See vm_kernels.hpp. Their push blocks mirror shaders/vm_*.comp field for field.
#include "vm_kernels.hpp"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <string>

#include "octo/error.hpp"

namespace octo::vm::vulkan {
namespace {

std::array<std::uint32_t, 3> stride_groups(std::int64_t n, std::uint32_t wg) {
  auto g = std::clamp<std::int64_t>((n + wg - 1) / wg, 1, 4096);
  return {static_cast<std::uint32_t>(g), 1, 1};
}

}  // namespace

kernel_launch plan_vm_regulator(std::uint64_t outbox, std::uint64_t metrics, std::uint64_t control, std::uint32_t n,
                                std::uint32_t instance, std::uint32_t n_instances, bool regulate, float target_norm,
                                const device_facts& d) {
  kernel_launch l;
  l.shader = "vm_regulator";
  l.spec_constants = {std::min<std::uint32_t>(256, std::bit_floor(std::max<std::uint32_t>(d.max_workgroup_size_x, 1)))};
  l.groups = {1, 1, 1};
  l.push_constants = push_builder()
                         .addr(outbox)
                         .addr(metrics)
                         .addr(control)
                         .u32(n)
                         .u32(instance)
                         .u32(n_instances)
                         .u32(regulate ? 1u : 0u)
                         .f32(target_norm)
                         .take();
  return l;
}

kernel_launch plan_vm_message(std::uint64_t outbox, std::uint64_t inbox, std::uint64_t control, std::uint32_t n,
                              std::uint32_t receiver) {
  kernel_launch l;
  l.shader = "vm_message";
  l.spec_constants = {64};
  l.groups = stride_groups(static_cast<std::int64_t>(n) + 4, 64);
  l.push_constants = push_builder().addr(outbox).addr(inbox).addr(control).u32(n).u32(receiver).take();
  return l;
}

kernel_launch plan_vm_observe(std::uint64_t table, std::uint64_t ring, std::uint64_t globals, std::uint64_t partials,
                              std::uint32_t records, std::uint32_t slots, std::uint32_t chunks, const device_facts& d) {
  if (records > 65535) throw octo::error("octo: the layer observer takes at most 65535 layers a program");
  kernel_launch l;
  l.shader = "vm_observe";
  l.spec_constants = {std::min<std::uint32_t>(256, std::bit_floor(std::max<std::uint32_t>(d.max_workgroup_size_x, 1)))};
  l.groups = {chunks, records, 1};
  l.push_constants = push_builder().addr(table).addr(ring).addr(globals).addr(partials).u32(records).u32(slots).take();
  return l;
}

std::uint32_t observe_chunks(std::uint64_t values) {
  constexpr std::uint64_t per_group = 16384;
  return static_cast<std::uint32_t>(std::clamp<std::uint64_t>((values + per_group - 1) / per_group, 1, 1024));
}

kernel_launch plan_vm_token_loop(std::uint64_t next_token, std::uint64_t tokens, std::uint64_t pos,
                                 std::uint64_t globals, std::uint64_t ring, std::uint32_t ring_slots) {
  kernel_launch l;
  l.shader = "vm_token_loop";
  l.groups = {1, 1, 1};
  l.push_constants =
      push_builder().addr(next_token).addr(tokens).addr(pos).addr(globals).addr(ring).u32(ring_slots).take();
  return l;
}

kernel_launch plan_vm_dispatch_size(std::uint64_t rules, std::uint64_t args, std::uint64_t globals,
                                    std::uint64_t control, std::uint64_t layer_control, std::uint32_t count) {
  kernel_launch l;
  l.shader = "vm_dispatch_size";
  l.spec_constants = {64};
  l.groups = {(count + 63) / 64, 1, 1};
  l.push_constants =
      push_builder().addr(rules).addr(args).addr(globals).addr(control).addr(layer_control).u32(count).take();
  return l;
}

std::array<std::uint32_t, indirect_rule_words> indirect_rule_record(const indirect_groups& r,
                                                                    const std::array<std::uint32_t, 3>& groups,
                                                                    const dispatch_gate& gate) {
  return {static_cast<std::uint32_t>(r.add), r.limit, r.div, r.min, r.max, r.mul, r.tokens ? 1u : 0u,
          groups[1], groups[2], gate.layer >= 0 ? static_cast<std::uint32_t>(gate.layer) + 1 : 0u,
          gate.when_skipped ? 1u : 0u, gate.precision | gate.instance << 8, r.n_min, r.n_max, 0};
}

kernel_launch plan_vm_copy(std::uint64_t src, std::uint64_t dst, std::uint64_t words) {
  kernel_launch l;
  l.shader = "vm_copy";
  l.spec_constants = {256};
  l.groups = stride_groups(static_cast<std::int64_t>(words), 256);
  l.push_constants = push_builder().addr(src).addr(dst).u32(static_cast<std::uint32_t>(words)).take();
  return l;
}

kernel_launch plan_vm_keep_awake(std::uint64_t sink, std::uint32_t iterations) {
  kernel_launch l;
  l.shader = "vm_keep_awake";
  l.spec_constants = {32};
  l.groups = {1, 1, 1};
  l.push_constants = push_builder().addr(sink).u32(iterations).take();
  return l;
}

kernel_launch plan_vm_coop_layout(std::uint64_t out) {
  kernel_launch l;
  l.shader = "vm_coop_layout";
  l.spec_constants = {32};
  l.groups = {1, 1, 1};
  l.push_constants = push_builder().addr(out).take();
  return l;
}

std::optional<std::uint32_t> coop_mma_factor_order(std::span<const float> probe) {
  if (probe.size() < 386 || probe[384] != 4.0f || probe[385] != 8.0f) return std::nullopt;
  const auto factor_matches = [&](std::uint32_t order) {
    for (std::uint32_t lane = 0; lane < 32; ++lane) {
      const std::uint32_t g = lane / 4, t = lane % 4;
      for (std::uint32_t i = 0; i < 8; ++i) {  // pair p = i / 2: its row half and column half
        const std::uint32_t p = i / 2, row_half = order == 0 ? p % 2 : p / 2, col_half = order == 0 ? p / 2 : p % 2;
        const std::uint32_t r = g + 8 * row_half, c = 2 * t + i % 2 + 8 * col_half;
        if (probe[128 + 8 * lane + i] != static_cast<float>(r * 16 + c)) return false;
      }
    }
    return true;
  };
  for (std::uint32_t lane = 0; lane < 32; ++lane) {
    const std::uint32_t g = lane / 4, t = lane % 4;
    for (std::uint32_t i = 0; i < 4; ++i) {  // 16 x 8: (g + 8 (i / 2), 2 t + i % 2)
      const std::uint32_t r = g + 8 * (i / 2), c = 2 * t + i % 2;
      if (probe[4 * lane + i] != static_cast<float>(r * 8 + c)) return std::nullopt;
    }
  }
  for (std::uint32_t order : {0u, 1u})
    if (factor_matches(order)) return order;
  return std::nullopt;
}

std::string describe_coop_layout(std::span<const float> probe) {
  if (probe.size() < 386) return {};
  // The driver wrote these floats: printed as floats (%g), never converted to integers (a NaN or a huge
  // value would make that undefined).
  const auto num = [](float v) {
    char b[32];
    std::snprintf(b, sizeof b, "%g", static_cast<double>(v));
    return std::string(b);
  };
  std::string s;
  const auto part = [&](const char* name, std::size_t base, std::size_t per, float len) {
    const std::size_t n = len >= 0.0f && len <= static_cast<float>(per) ? static_cast<std::size_t>(len) : per;
    s += std::string(name) + " (length " + num(len) + "):";
    for (std::size_t lane = 0; lane < 32; ++lane) {
      s += " l" + std::to_string(lane) + " [";
      for (std::size_t i = 0; i < n; ++i) s += (i ? " " : "") + num(probe[base + per * lane + i]);
      s += "]";
    }
  };
  part("16x8", 0, 4, probe[384]);
  s += "; ";
  part("16x16", 128, 8, probe[385]);
  return s;
}

bool same_launch(const kernel_launch& a, const kernel_launch& b) {
  return a.shader == b.shader && a.spec_constants == b.spec_constants && a.groups == b.groups &&
         a.push_constants.bytes == b.push_constants.bytes && a.indirect == b.indirect &&
         a.alternatives.size() == b.alternatives.size() && a.before.size() == b.before.size() &&
         a.beside.size() == b.beside.size() &&
         a.shared_scratch_bytes == b.shared_scratch_bytes && a.shared_scratch_key == b.shared_scratch_key &&
         a.transient_scratch_bytes == b.transient_scratch_bytes;
}

}  // namespace octo::vm::vulkan
