// Helpers every kernel planner shares: tensor lookup with checks that name the task and grid shapes
// (push constants: vulkan::push_builder, kernel_registry.hpp). Private to the Vulkan kernels.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "octo/error.hpp"
#include "octo/ir/enums.hpp"
#include "octo/semantics/rope.hpp"
#include "vulkan/kernel_registry.hpp"

namespace octo::vm::vulkan::kernels {

/// One tensor a task names: its IR buffer and device address.
struct tensor_ref {
  const ir::buffer* buf = nullptr;
  std::uint64_t address = 0;
  std::int64_t numel() const { return buf->numel(); }
  ir::dtype dtype() const { return buf->dtype; }
};

/// "task 12 (GEMV_TILE 'q_proj')" for error messages.
inline std::string describe(const task_context& c) {
  std::string s = "task " + std::to_string(c.task.id) + " (" + std::string(ir::name(c.task.op));
  if (!c.task.label.empty()) s += " '" + std::string(std::string_view(c.task.label)) + "'";
  return s + ")";
}

[[noreturn]] inline void fail(const task_context& c, const std::string& what) {
  throw octo::error(describe(c) + ": " + what);
}

inline void require(const task_context& c, bool ok, const std::string& what) {
  if (!ok) fail(c, what);
}

inline tensor_ref tensor(const task_context& c, std::int32_t id) {
  if (id < 0 || static_cast<std::size_t>(id) >= c.program.buffers.size() ||
      static_cast<std::size_t>(id) >= c.buffer_address.size())
    fail(c, "names buffer " + std::to_string(id) + ", which the program does not have");
  const auto& b = c.program.buffers[static_cast<std::size_t>(id)];
  // Kernels index with 32-bit element and byte offsets.
  if (b.nbytes() >= (std::int64_t{1} << 32))
    fail(c, "buffer '" + std::string(std::string_view(b.name)) + "' is 4 GiB or more, beyond 32-bit kernel offsets");
  return {&b, c.buffer_address[static_cast<std::size_t>(id)]};
}
inline tensor_ref input(const task_context& c, std::size_t i) {
  require(c, i < c.task.inputs.size(), "needs input " + std::to_string(i));
  return tensor(c, c.task.inputs[i]);
}
inline tensor_ref output(const task_context& c, std::size_t i = 0) {
  require(c, i < c.task.outputs.size(), "needs output " + std::to_string(i));
  return tensor(c, c.task.outputs[i]);
}

inline std::string dtype_text(ir::dtype t) { return std::string(ir::name(t)); }

inline void require_dtype(const task_context& c, const tensor_ref& t, std::initializer_list<ir::dtype> ok,
                          const char* role) {
  for (auto d : ok)
    if (t.dtype() == d) return;
  fail(c, std::string(role) + " '" + std::string(std::string_view(t.buf->name)) + "' has dtype " +
              dtype_text(t.dtype()) + ", which this kernel does not support");
}

/// A required integer param (validate() guarantees presence for required keys; checked anyway).
inline std::int64_t param_i(const task_context& c, ir::param_key k) {
  const auto* p = c.task.params.find(k);
  if (!p) fail(c, "missing param " + std::string(ir::name(k)));
  return p->is_real ? static_cast<std::int64_t>(p->f) : p->i;
}
inline std::uint32_t param_u32(const task_context& c, ir::param_key k, std::int64_t lo = 0) {
  auto v = param_i(c, k);
  if (v < lo || v > 0xffffffffLL) fail(c, "param " + std::string(ir::name(k)) + " = " + std::to_string(v) + " is out of range");
  return static_cast<std::uint32_t>(v);
}
inline std::uint32_t opt_u32(const task_context& c, ir::param_key k, std::int64_t fallback, std::int64_t lo = 0) {
  if (!c.task.params.has(k)) return static_cast<std::uint32_t>(fallback);
  return param_u32(c, k, lo);
}

inline std::uint32_t u32(const task_context& c, std::int64_t v, const char* what) {
  if (v < 0 || v > 0xffffffffLL) fail(c, std::string(what) + " = " + std::to_string(v) + " is out of range");
  return static_cast<std::uint32_t>(v);
}

/// RoPE's frequency ramp (semantics::rope_ramp) as shaders/common/rope.glsl's specialization constants
/// 16 (on), 17-19 (low_scale, slope, offset: f32 bits), on the launches of a task that has one that may
/// rotate: the main one, its alternatives and those beside it (a module without RoPE ignores them); not
/// the `before` kernels (rounding, dequantizing), which tasks of a wavefront share by equality. The
/// constants between a module's own and 16 keep their defaults (spec_default). Nothing where the task
/// has no ramp.
inline void add_rope_ramp(const task_context& c, kernel_launch& l) {
  const auto r = semantics::rope_ramp_of(c.task.params);
  if (!r.on()) return;
  const auto set = [&](auto& self, kernel_launch& k) -> void {
    if (k.spec_constants.size() < 20) k.spec_constants.resize(20, spec_default);
    k.spec_constants[16] = 1;
    k.spec_constants[17] = std::bit_cast<std::uint32_t>(r.low_scale);
    k.spec_constants[18] = std::bit_cast<std::uint32_t>(r.slope);
    k.spec_constants[19] = std::bit_cast<std::uint32_t>(r.offset);
    for (auto* v : {&k.alternatives, &k.beside})
      for (auto& x : *v) self(self, x);
  };
  set(set, l);
}

/// A 1-D count of workgroups laid over x and z (shaders read octo_group_linear()).
inline std::array<std::uint32_t, 3> grid(std::uint64_t n, std::uint32_t y = 1) {
  constexpr std::uint64_t max_x = 65535;
  if (n == 0) n = 1;
  if (n <= max_x) return {static_cast<std::uint32_t>(n), y, 1};
  return {static_cast<std::uint32_t>(max_x), y, static_cast<std::uint32_t>((n + max_x - 1) / max_x)};
}

/// Groups for a grid-stride kernel over `items`: enough to fill a large GPU, never more than needed.
inline std::array<std::uint32_t, 3> stride_grid(std::uint64_t items, std::uint32_t wg) {
  return grid(std::min<std::uint64_t>((items + wg - 1) / wg, 8192));
}

/// Whether to use the subgroup-arithmetic variant of a kernel: the device must have it, and
/// OCTO_KERNELS_NO_SUBGROUP=1 forces the shared-memory fallback (so CI devices test both).
inline bool use_subgroups(const device_facts& d) {
  const char* off = std::getenv("OCTO_KERNELS_NO_SUBGROUP");
  return d.subgroup_arithmetic && !(off && *off && *off != '0');
}

/// The largest power of two <= min(want, device limit).
inline std::uint32_t workgroup_size(const device_facts& d, std::uint32_t want) {
  std::uint32_t lim = std::min(want, std::max<std::uint32_t>(d.max_workgroup_size_x, 1));
  return std::bit_floor(lim);
}

// Planners, one per opcode family (src/vulkan/kernels/<family>.cpp).
kernel_launch plan_gemv(const task_context&);  // GEMV_TILE and GEMM_TILE

/// A GEMV_TILE / GEMM_TILE task as plan_gemv validated it, for the tiled many-rows planner.
struct gemm_args {
  ir::dtype w_dtype;
  std::uint64_t x, w, bias, y;  // device addresses (bias 0 when absent)
  std::uint32_t K, rows, row0, n_tile, n_off, ldy, w_row_bytes, bias_dtype;
  std::uint32_t w_rows;        // the weight's rows (n_off + n_tile of them are read)
  bool has_bias;
  bool vec;                    // K % 8 == 0 and x (and unquantized W) 16-byte aligned
  std::uint64_t residual = 0;  // GEMV_ADD's r, laid out as y, added to every output (the GEMM kernels); 0: none
  // RMSNORM_GEMV's norm over x's rows (hidden = K) in the GEMM kernels: its weight (0: none), dtype, eps.
  std::uint64_t norm_w = 0;
  std::uint32_t norm_dtype = 0;
  float eps = 0.0f;
  // RMSNORM_SWIGLU's up weight (0: none; w is the gate's, of the same dtype and shape): the GEMM kernels
  // multiply gate and up rows interleaved, 2 n_tile columns, and write silu(gate) * up (their EPI 3, 4;
  // it rides in the push block's residual field).
  std::uint64_t up = 0;
  // RMSNORM_GEMV_ROPE / RMSNORM_GEMV_KV over many rows (prefill's q, k, v; the GEMM kernels' EPI 5, 6):
  // RoPE over the outputs' heads and, for KV, the rows written into the cache (y, ldy its row width) at
  // kv_pos + globals.pos + row in its dtype. rope_pos (the positions, riding in the residual field) is 0
  // without a rotation; rope = head_dim | n_rot << 16, style = rope_style | y dtype << 8 | kv << 16.
  bool rope_kv = false;
  std::uint64_t rope_pos = 0;
  std::uint32_t rope = 0, style = 0, kv_pos = 0;
  float log2_theta = 0.0f;
};
/// The push-constant block every GEMV / GEMM module declares alike (shaders/gemv.comp, gemm*.comp).
push_builder matmul_fields(const task_context& c, const gemm_args& a);
/// The GEMM kernels' block (shaders/gemm*.comp): matmul_fields, then the residual (or the SWIGLU's up
/// weight, or the RoPE's positions), the norm and the RoPE / KV fields.
push_block matmul_push(const task_context& c, const gemm_args& a);
/// matmul_push's fields as a builder, for a module whose block goes on (gemm_coop: the K split's counters).
push_builder matmul_block(const task_context& c, const gemm_args& a);
/// Plans the tiled GEMM (src/vulkan/kernels/gemm.cpp) into `l`; false when none fits this task.
bool plan_gemm_tiled(const task_context& c, const gemm_args& a, kernel_launch& l);
kernel_launch plan_elementwise(const task_context&);  // COPY ADD MUL SILU_MUL GELU ALLREDUCE_SHARD
kernel_launch plan_norm(const task_context&);  // RMSNORM LAYERNORM
kernel_launch plan_softmax(const task_context&);
kernel_launch plan_argmax(const task_context&);
kernel_launch plan_rope(const task_context&);
kernel_launch plan_norm_rope(const task_context&);  // RMSNORM_ROPE RMSNORM_ROPE_KV
kernel_launch plan_embed(const task_context&);
kernel_launch plan_dequant(const task_context&);
kernel_launch plan_kv_append(const task_context&);
kernel_launch plan_attention(const task_context&);
kernel_launch plan_attention_combine(const task_context&);

/// A knob that takes one of a few numbers (one device run to compare, or a test): environment variable
/// `name`'s value, or `fallback` where it is unset or empty; any other value fails, naming the knob.
inline std::uint32_t number_knob(const task_context& c, const char* name, std::initializer_list<std::uint32_t> allowed,
                                 std::uint32_t fallback) {
  const char* e = std::getenv(name);
  if (!e || !*e) return fallback;
  std::string listed;
  std::size_t i = 0;
  for (const std::uint32_t a : allowed) {
    if (std::to_string(a) == e) return a;
    if (i > 0) listed += i + 1 == allowed.size() ? " or " : ", ";
    listed += std::to_string(a);
    ++i;
  }
  fail(c, std::string(name) + "='" + e + "' is not " + listed);
}

/// A switch from the environment that is on unless set to 0 (1 or unset: on; anything else an error).
inline bool on_unless_zero(const task_context& c, const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v || std::string_view(v) == "1") return true;
  if (std::string_view(v) == "0") return false;
  fail(c, std::string(name) + "='" + v + "' is not 0 or 1");
}

}  // namespace octo::vm::vulkan::kernels
