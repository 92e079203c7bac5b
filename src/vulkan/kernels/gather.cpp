// Planners for the kernels that move or convert data by index: EMBED (shaders/embed.comp), DEQUANT
// (shaders/dequant.comp), KV_APPEND (shaders/kv_append.comp) and ROPE (shaders/rope.comp).
#include <cmath>

#include "vulkan/kernels/planner_support.hpp"

namespace octo::vm::vulkan::kernels {

kernel_launch plan_embed(const task_context& c) {
  auto ids = input(c, 0);
  auto table = input(c, 1);
  auto y = output(c);
  require_dtype(c, ids, {ir::dtype::i32}, "ids");
  require_dtype(c, y, {ir::dtype::f32}, "output");
  require_dtype(c, table,
                {ir::dtype::f32, ir::dtype::f16, ir::dtype::bf16, ir::dtype::q8_0, ir::dtype::q4_0, ir::dtype::q4_1,
                 ir::dtype::q5_0, ir::dtype::q5_1, ir::dtype::q2_k, ir::dtype::q3_k, ir::dtype::q4_k, ir::dtype::q5_k,
                 ir::dtype::q6_k, ir::dtype::iq4_nl, ir::dtype::iq4_xs},
                "table");
  const std::uint32_t hidden = param_u32(c, ir::param_key::hidden, 1);
  require(c, hidden % static_cast<std::uint32_t>(ir::layout(table.dtype()).block_elems) == 0,
          "hidden is not a whole number of " + dtype_text(table.dtype()) + " blocks");
  require(c, table.numel() % hidden == 0, "table numel is not a multiple of hidden");
  require(c, table.address % 4 == 0, "table address is not 4-byte aligned");
  const std::int64_t T = ids.numel();
  require(c, y.numel() == T * hidden, "output numel is not ids x hidden");
  const std::uint32_t wg = workgroup_size(c.device, 256);
  kernel_launch l;
  l.shader = "embed";
  l.spec_constants = {wg};
  l.groups = stride_grid(static_cast<std::uint64_t>(T) * hidden, wg);
  l.push_constants = push_builder{}
                         .addr(ids.address).addr(table.address).addr(y.address)
                         .u32(u32(c, T, "tokens")).u32(hidden).u32(u32(c, table.numel() / hidden, "vocab"))
                         .u32(u32(c, ir::nbytes(table.dtype(), hidden), "row bytes"))
                         .u32(static_cast<std::uint32_t>(table.dtype()))
                         .take();
  return l;
}

kernel_launch plan_dequant(const task_context& c) {
  auto q = input(c, 0);
  auto scales = input(c, 1);
  auto y = output(c);
  require_dtype(c, q, {ir::dtype::i8, ir::dtype::i4}, "input q");
  require_dtype(c, y, {ir::dtype::f32}, "output");
  require_dtype(c, scales, {ir::dtype::f32, ir::dtype::f16, ir::dtype::bf16}, "scales");
  const std::uint32_t qd = param_u32(c, ir::param_key::qdtype);
  require(c, qd == static_cast<std::uint32_t>(q.dtype()), "qdtype differs from the input's dtype");
  const std::uint32_t group = param_u32(c, ir::param_key::group, 1);
  const std::int64_t n = y.numel();
  require(c, q.numel() == n, "output numel differs from the input's");
  const std::int64_t groups_needed = (n + group - 1) / group;
  require(c, scales.numel() >= groups_needed, "scales has fewer than numel / group entries");
  std::uint64_t zero_addr = 0;
  std::uint32_t zero_dtype = 0;
  const bool has_zero = c.task.inputs.size() > 2;
  if (has_zero) {
    auto z = input(c, 2);
    require_dtype(c, z, {ir::dtype::f32, ir::dtype::f16, ir::dtype::bf16, ir::dtype::i32, ir::dtype::i8, ir::dtype::u8},
                  "zero");
    require(c, z.numel() >= groups_needed, "zero has fewer than numel / group entries");
    zero_addr = z.address;
    zero_dtype = static_cast<std::uint32_t>(z.dtype());
  }
  const std::uint32_t wg = workgroup_size(c.device, 256);
  kernel_launch l;
  l.shader = "dequant";
  l.spec_constants = {wg};
  l.groups = stride_grid(static_cast<std::uint64_t>(n), wg);
  l.push_constants = push_builder{}
                         .addr(q.address).addr(scales.address).addr(zero_addr).addr(y.address)
                         .u32(u32(c, n, "numel")).u32(group).u32(qd).u32(has_zero ? 1u : 0u)
                         .u32(static_cast<std::uint32_t>(scales.dtype())).u32(zero_dtype)
                         .take();
  return l;
}

kernel_launch plan_kv_append(const task_context& c) {
  auto src = input(c, 0);
  auto cache_in = input(c, 1);
  auto cache = output(c);
  require(c, c.task.inputs[1] == c.task.outputs[0], "must write the cache buffer it reads (input 1)");
  (void)cache_in;
  require_dtype(c, src, {ir::dtype::f32, ir::dtype::f16, ir::dtype::bf16}, "input kv_new");
  require_dtype(c, cache, {ir::dtype::f32, ir::dtype::f16, ir::dtype::bf16, ir::dtype::q8_0}, "cache");
  require(c, cache.buf->shape.size() >= 2 && cache.buf->shape[0] > 0, "cache shape is not [S, ...]");
  const std::int64_t slots = cache.buf->shape[0];
  const std::int64_t row = cache.numel() / slots;
  require(c, row > 0 && src.numel() % row == 0, "kv_new numel is not a multiple of the cache row");
  const std::int64_t T = src.numel() / row;
  const std::uint32_t pos = param_u32(c, ir::param_key::pos);
  require(c, pos + T <= slots,
          "pos + T = " + std::to_string(pos + T) + " exceeds the cache's " + std::to_string(slots) + " slots");
  const bool q8 = cache.dtype() == ir::dtype::q8_0;
  const bool half = cache.dtype() == ir::dtype::f16 || cache.dtype() == ir::dtype::bf16;
  require(c, !half || row % 2 == 0, "a 16-bit cache needs an even row length");
  require(c, !q8 || row % 32 == 0,
          "a Q8_0 cache needs its row (n_kv_heads x head_dim = " + std::to_string(row) + ") to be a multiple of 32");
  const std::uint32_t wg = workgroup_size(c.device, 256);
  // One invocation per 32-bit word written (a Q8_0 block of 32 elements is 17 halfwords).
  const std::int64_t words = q8 ? T * row / 32 * 17 / 2 + 1 : half ? (T * row + 1) / 2 : T * row;
  kernel_launch l;
  l.shader = "kv_append";
  l.spec_constants = {wg};
  l.groups = stride_grid(static_cast<std::uint64_t>(words), wg);
  l.push_constants = push_builder{}
                         .addr(src.address).addr(cache.address).addr(c.globals_address)
                         .u32(u32(c, T, "tokens")).u32(u32(c, row, "row")).u32(u32(c, slots, "slots")).u32(pos)
                         .u32(static_cast<std::uint32_t>(src.dtype())).u32(static_cast<std::uint32_t>(cache.dtype()))
                         .take();
  return l;
}

kernel_launch plan_rope(const task_context& c) {
  auto x = input(c, 0);
  auto pos = input(c, 1);
  auto y = output(c);
  require_dtype(c, x, {ir::dtype::f32}, "input x");
  require_dtype(c, y, {ir::dtype::f32}, "output");
  require_dtype(c, pos, {ir::dtype::i32}, "positions");
  const std::uint32_t hd = param_u32(c, ir::param_key::head_dim, 1);
  const std::uint32_t n_rot = opt_u32(c, ir::param_key::n_rot, hd, 2);
  require(c, n_rot % 2 == 0 && n_rot <= hd, "n_rot must be even and at most head_dim");
  const std::uint32_t style = opt_u32(c, ir::param_key::rope_style, 0);
  require(c, style <= 1, "rope_style must be 0 (NeoX) or 1 (interleaved)");
  const double theta = c.task.params.get_real(ir::param_key::theta, 0.0);
  require(c, theta > 0.0, "theta must be positive");
  const std::int64_t T = pos.numel();
  require(c, T > 0 && x.numel() % (T * hd) == 0, "input numel is not T x heads x head_dim");
  require(c, y.numel() == x.numel(), "output numel differs from the input's");
  const std::int64_t heads = x.numel() / (T * hd);
  const std::uint32_t wg = workgroup_size(c.device, 256);
  kernel_launch l;
  l.shader = "rope";
  l.spec_constants = {wg};
  l.groups = stride_grid(static_cast<std::uint64_t>(T * heads * (hd - n_rot / 2)), wg);
  l.push_constants = push_builder{}
                         .addr(x.address).addr(pos.address).addr(y.address)
                         .u32(u32(c, T, "tokens")).u32(u32(c, heads, "heads")).u32(hd).u32(n_rot).u32(style)
                         .f32(static_cast<float>(std::log2(theta)))
                         .take();
  add_rope_ramp(c, l);
  return l;
}

kernel_launch plan_norm_rope(const task_context& c) {
  const bool kv = c.task.op == ir::opcode::rmsnorm_rope_kv;
  auto x = input(c, 0);
  auto nw = input(c, 1);
  auto pos = input(c, kv ? 3 : 2);
  auto y = output(c);
  require_dtype(c, x, {ir::dtype::f32}, "input x");
  require_dtype(c, nw, {ir::dtype::f32, ir::dtype::f16, ir::dtype::bf16}, "norm weight");
  require_dtype(c, pos, {ir::dtype::i32}, "positions");
  if (kv) {
    require(c, c.task.inputs[2] == c.task.outputs[0], "must write the cache buffer it reads (input 2)");
    require_dtype(c, y, {ir::dtype::f32, ir::dtype::f16, ir::dtype::bf16}, "KV cache");
  } else {
    require_dtype(c, y, {ir::dtype::f32}, "output");
  }
  const std::uint32_t hd = param_u32(c, ir::param_key::head_dim, 2);
  const std::uint32_t n_rot = param_u32(c, ir::param_key::n_rot, 2);
  require(c, hd % 2 == 0 && n_rot % 2 == 0 && n_rot <= hd, "head_dim and n_rot must be even, n_rot at most head_dim");
  require(c, hd <= 512, "head_dim above 512 (norm_rope stages a cache row of at most 512 in shared memory)");
  require(c, param_i(c, ir::param_key::hidden) == hd && nw.numel() == hd, "the norm runs over one head (hidden = head_dim)");
  const std::uint32_t style = opt_u32(c, ir::param_key::rope_style, 0);
  require(c, style <= 1, "rope_style must be 0 (NeoX) or 1 (interleaved)");
  const double theta = c.task.params.get_real(ir::param_key::theta, 0.0);
  require(c, theta > 0.0, "theta must be positive");
  const std::int64_t T = pos.numel();
  require(c, T > 0 && x.numel() % (T * hd) == 0, "input numel is not T x heads x head_dim");
  const std::int64_t heads = x.numel() / (T * hd);
  std::uint32_t kv_pos = 0;
  if (kv) {
    require(c, !y.buf->shape.empty() && y.buf->shape[0] > 0 && y.numel() % y.buf->shape[0] == 0 &&
                   y.numel() / y.buf->shape[0] == heads * hd,
            "the cache row is not heads x head_dim");
    kv_pos = param_u32(c, ir::param_key::pos);
    require(c, kv_pos + T <= y.buf->shape[0],
            "pos + T = " + std::to_string(kv_pos + T) + " exceeds the cache's " + std::to_string(y.buf->shape[0]) + " slots");
  } else {
    require(c, y.numel() == x.numel(), "output numel differs from the input's");
  }
  kernel_launch l;
  l.shader = "norm_rope";
  l.spec_constants = {workgroup_size(c.device, std::clamp<std::uint32_t>(hd / 2, 32, 256))};
  l.groups = grid(static_cast<std::uint64_t>(T * heads));
  l.push_constants = push_builder{}
                         .addr(x.address).addr(nw.address).addr(pos.address).addr(y.address).addr(c.globals_address)
                         .u32(u32(c, T, "tokens")).u32(u32(c, heads, "heads")).u32(hd).u32(n_rot).u32(style)
                         .u32(static_cast<std::uint32_t>(y.dtype())).u32(kv ? 1u : 0u).u32(kv_pos)
                         .u32(static_cast<std::uint32_t>(nw.dtype()))
                         .f32(static_cast<float>(c.task.params.get_real(ir::param_key::eps, 0.0)))
                         .f32(static_cast<float>(std::log2(theta)))
                         .take();
  add_rope_ramp(c, l);
  return l;
}

}  // namespace octo::vm::vulkan::kernels
