// Decode attention per layer: one ATTENTION_TILE task (T = 1, causal, every key of a `ctx`-slot cache
// visible) per "layer", a chain of them over distinct K/V caches (so the caches come from memory, not
// the L2), timed by GPU timestamps around each dispatch (vulkan_options::profile: tasks serialized).
// Prints one JSON object per (shape, context, KV type): the median and best microseconds per layer,
// the layer's K/V bytes and the time reading them once takes at the bandwidth bound, and their ratio.
//
//   bench_attention [--quick] [--shapes 14x2x64,12x2x128] [--ctx 1024,32768] [--kv-types f16,q8_0,f32]
//                   [--passes 20] [--bandwidth-gbs 3071]
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "../bench_support.hpp"
#include "../json_line.hpp"
#include "octo/detail/element_convert.hpp"
#include "octo/detail/quant_blocks.hpp"
#include "octo/error.hpp"
#include "octo/ir/program.hpp"
#include "octo/runtime/model_source.hpp"
#include "octo/vm/vulkan_vm.hpp"

namespace ir = octo::ir;

namespace {

struct shape {
  std::int64_t heads, kv_heads, head_dim;
};

/// `layers` decode attention tasks, each over its own caches "k<i>" / "v<i>" [ctx, kv_heads*head_dim]:
/// kv_len 1 at position 0, so at globals.pos = ctx - 1 every slot is a visible key.
ir::program make_chain(const shape& s, std::int64_t ctx, ir::dtype kv, int layers) {
  ir::program p;
  const std::int64_t kv_width = s.kv_heads * s.head_dim;
  auto q = p.add_buffer("q", ir::buffer_kind::io_input, ir::dtype::f32, {1, s.heads * s.head_dim});
  for (int i = 0; i < layers; ++i) {
    std::string kn = "k", vn = "v", on = "o";  // not "k" + to_string: g++ 12 warns falsely (-Wrestrict)
    kn += std::to_string(i);
    vn += std::to_string(i);
    on += std::to_string(i);
    auto k = p.add_buffer(kn, ir::buffer_kind::kv_cache, kv, {ctx, kv_width});
    auto v = p.add_buffer(vn, ir::buffer_kind::kv_cache, kv, {ctx, kv_width});
    auto o = p.add_buffer(on, ir::buffer_kind::io_output, ir::dtype::f32, {1, s.heads * s.head_dim});
    ir::task t;
    t.op = ir::opcode::attention_tile;
    t.inputs = {q, k, v};
    t.outputs = {o};
    t.out_counter = p.add_counter();
    t.params.set(ir::param_key::head_dim, s.head_dim);
    t.params.set(ir::param_key::kv_start, 0);
    t.params.set(ir::param_key::kv_len, 1);
    t.params.set_real(ir::param_key::scale, 1.0 / std::sqrt(double(s.head_dim)));
    t.params.set(ir::param_key::n_heads, s.heads);
    t.params.set(ir::param_key::n_kv_heads, s.kv_heads);
    t.params.set(ir::param_key::causal, 1);
    t.params.set(ir::param_key::q_pos, 0);
    p.add_task(t);
  }
  return p;
}

/// A cache of random values in [-1, 1) encoded as `kv` (Q8_0: blocks along each row).
std::vector<std::byte> make_cache(ir::dtype kv, std::int64_t rows, std::int64_t width, std::mt19937_64& rng) {
  const auto row_bytes = static_cast<std::size_t>(ir::nbytes(kv, width));
  std::vector<std::byte> out(row_bytes * static_cast<std::size_t>(rows));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(static_cast<std::size_t>(width));
  for (std::int64_t r = 0; r < rows; ++r) {
    for (auto& x : v) x = u(rng);
    octo::detail::quantize_row(kv, v.data(), reinterpret_cast<std::uint8_t*>(out.data()) + row_bytes * std::size_t(r), width);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false, shapes_given = false;
  int passes = -1, failed = 0;
  double bound_gbs = 3071.0, chain_mib = 512.0;
  std::string shapes_arg = "14x2x64,12x2x128,28x4x128", ctx_arg, types_arg = "f16,q8_0,f32";
  CLI::App app("Decode attention time per layer against reading its K/V once, one JSON line per shape, context\n"
               "and KV type.",
               "bench_attention");
  octo_bench::set_up(app);
  app.add_flag("--quick", quick, "one shape (14x2x64), a 256-token context, few passes (a smoke test for lavapipe)");
  octo_bench::option(app, "--shapes", "HxKVxD,...",
                     "query heads x KV heads x head_dim (default 14x2x64,12x2x128,28x4x128: Qwen2.5 0.5B, 1.5B, 7B)",
                     [&](const std::string& v) {
                       shapes_arg = v;
                       shapes_given = true;
                     });
  app.add_option("--ctx", ctx_arg, "visible keys per step (default 1024,32768)")->type_name("N,...");
  app.add_option("--kv-types", types_arg, "KV cache types")->type_name("LIST")->capture_default_str();
  octo_bench::positive_option(app, "--passes", passes, "timed passes after 2 warm-up passes; per-layer times are over all (default 20)");
  octo_bench::positive_real_option(app, "--bandwidth-gbs", bound_gbs, "the bound for reading K/V once (default 3071: the H100's measured HBM read)");
  octo_bench::positive_real_option(app, "--chain-mib", chain_mib, "K/V MiB per pass, spread over that many layers (default 512, at most 64 layers)");
  octo_bench::parse_command_line(app, argc, argv);
  try {
    if (passes < 0) passes = quick ? 2 : 20;
    if (ctx_arg.empty()) ctx_arg = quick ? "256" : "1024,32768";
    if (quick && !shapes_given) shapes_arg = "14x2x64";
    if (quick) chain_mib = 1;
    std::vector<shape> shapes;
    for (const auto& s : octo_bench::split(shapes_arg)) {
      long long h = 0, kv = 0, d = 0;
      char tail = 0;
      if (std::sscanf(s.c_str(), "%lldx%lldx%lld%c", &h, &kv, &d, &tail) != 3 || h <= 0 || kv <= 0 || d <= 0 || h % kv != 0)
        throw octo::error("bench_attention: --shapes: '" + s + "' is not HEADSxKV_HEADSxHEAD_DIM (heads a multiple of kv heads)");
      shapes.push_back({h, kv, d});
    }
    std::vector<std::int64_t> ctxs;
    for (const auto& s : octo_bench::split(ctx_arg)) ctxs.push_back(octo_bench::positive("bench_attention", "--ctx", s));
    std::vector<ir::dtype> types;
    for (const auto& s : octo_bench::split(types_arg)) types.push_back(octo::runtime::parse_kv_type(s));

    octo::vm::vulkan_options vo;
    vo.profile = true;
    octo::vm::vulkan_vm vm(vo);
    const std::string device = vm.device().name;
    using octo_bench::json;
    using octo_bench::print_json_line;
    std::mt19937_64 rng(7);
    for (const auto& s : shapes)
      for (std::int64_t ctx : ctxs)
        for (ir::dtype kv : types) {
          const std::int64_t width = s.kv_heads * s.head_dim;
          json line = {{"name", "attention_decode"}, {"device", device}, {"heads", s.heads},
                       {"kv_heads", s.kv_heads}, {"head_dim", s.head_dim}, {"ctx", ctx},
                       {"kv_type", std::string(ir::name(kv))}};
          try {
            if (kv == ir::dtype::q8_0 && width % 32 != 0)
              throw octo::error("a Q8_0 cache needs kv_heads x head_dim to be a multiple of 32");
            const double layer_bytes = 2.0 * double(ir::nbytes(kv, ctx * width));
            const int layers = static_cast<int>(std::clamp<double>(chain_mib * 1048576.0 / layer_bytes, 1.0, 64.0));
            vm.load(make_chain(s, ctx, kv, layers));
            const auto cache = make_cache(kv, ctx, width, rng);
            for (int i = 0; i < layers; ++i) {
              std::string kn = "k", vn = "v";
              kn += std::to_string(i);
              vn += std::to_string(i);
              vm.write_bytes(kn, cache);
              vm.write_bytes(vn, cache);
            }
            std::vector<float> q(static_cast<std::size_t>(s.heads * s.head_dim));
            for (auto& x : q) x = std::uniform_real_distribution<float>(-1.0f, 1.0f)(rng);
            vm.write("q", q);
            vm.set_position(static_cast<std::uint32_t>(ctx - 1));  // every slot a visible key
            for (int i = 0; i < 2; ++i) vm.execute();              // pipelines, clocks
            std::vector<double> us;
            for (int i = 0; i < passes; ++i) {
              vm.execute();
              for (const auto& t : vm.profile()) us.push_back(t.microseconds);
            }
            std::sort(us.begin(), us.end());
            const double median = us[us.size() / 2];
            const double read_us = layer_bytes / (bound_gbs * 1e3);
            line["layers"] = layers;
            line["us_per_layer"] = median;
            line["us_per_layer_best"] = us.front();
            line["kv_bytes_per_layer"] = layer_bytes;
            line["kv_read_us_at_bound"] = read_us;
            line["ratio_to_kv_read"] = median / read_us;
            line["gb_s"] = layer_bytes / (median * 1e3);
            line["bound_gb_s"] = bound_gbs;
          } catch (const octo::error& e) {  // one case failing (memory, an unsupported shape) spares the rest
            line["error"] = e.what();
            ++failed;
          }
          print_json_line(line);
        }
  } catch (const octo::error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return failed == 0 ? 0 : 1;
}
