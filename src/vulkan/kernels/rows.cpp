// Planners for the row-wise kernels: RMSNORM / LAYERNORM (shaders/norm.comp), SOFTMAX
// (shaders/softmax.comp) and SAMPLE_ARGMAX (shaders/argmax.comp): one workgroup per row, up to 1024
// invocations for vocabulary-sized rows (a vocabulary row's argmax: several workgroups a row).
#include "vulkan/kernels/planner_support.hpp"

namespace octo::vm::vulkan::kernels {

kernel_launch plan_norm(const task_context& c) {
  auto x = input(c, 0);
  auto w = input(c, 1);
  auto y = output(c);
  require_dtype(c, x, {ir::dtype::f32}, "input x");
  require_dtype(c, y, {ir::dtype::f32}, "output");
  require_dtype(c, w, {ir::dtype::f32, ir::dtype::f16, ir::dtype::bf16}, "weight");
  const std::uint32_t hidden = param_u32(c, ir::param_key::hidden, 1);
  require(c, x.numel() % hidden == 0, "input numel is not a multiple of hidden");
  require(c, y.numel() % hidden == 0, "output numel is not a multiple of hidden");
  // Fewer output rows than input rows: rows m_off.. of x (RMSNORM's row window, docs/opcodes.md).
  const std::int64_t m_off = c.task.params.get(ir::param_key::m_off, 0);
  const bool layer = c.task.op == ir::opcode::layernorm;
  if (layer) require(c, y.numel() == x.numel() && m_off == 0, "output numel differs from the input's");
  require(c, m_off >= 0 && (m_off + y.numel() / hidden) * hidden <= x.numel(), "output rows run past the input's (m_off)");
  const std::uint64_t x_addr = x.address + static_cast<std::uint64_t>(m_off) * hidden * 4;
  require(c, w.numel() == hidden, "weight numel differs from hidden");
  std::uint64_t b_addr = 0;
  std::uint32_t b_dtype = 0;
  const bool has_b = layer && c.task.inputs.size() > 2;
  if (has_b) {
    auto b = input(c, 2);
    require_dtype(c, b, {ir::dtype::f32, ir::dtype::f16, ir::dtype::bf16}, "bias");
    require(c, b.numel() == hidden, "bias numel differs from hidden");
    b_addr = b.address;
    b_dtype = static_cast<std::uint32_t>(b.dtype());
  }
  const std::uint32_t rows = u32(c, y.numel() / hidden, "rows");
  // About two elements per invocation (up to 1024 wide): a decode row is one workgroup, so its serial
  // loads per invocation are the latency.
  const std::uint32_t wg = workgroup_size(c.device, std::clamp<std::uint32_t>(hidden / 2, 64, 1024));
  kernel_launch l;
  l.shader = "norm";
  l.spec_constants = {wg};
  l.groups = grid(rows);
  l.push_constants = push_builder{}
                         .addr(x_addr).addr(w.address).addr(b_addr).addr(y.address)
                         .u32(hidden).u32(rows).u32(layer ? 1u : 0u).u32(has_b ? 1u : 0u)
                         .u32(static_cast<std::uint32_t>(w.dtype())).u32(b_dtype)
                         .f32(static_cast<float>(c.task.params.get_real(ir::param_key::eps, 0.0)))
                         .take();
  return l;
}

kernel_launch plan_softmax(const task_context& c) {
  auto x = input(c, 0);
  auto y = output(c);
  require_dtype(c, x, {ir::dtype::f32}, "input");
  require_dtype(c, y, {ir::dtype::f32}, "output");
  require(c, !x.buf->shape.empty(), "input has no shape");
  const std::uint32_t dim = opt_u32(c, ir::param_key::dim, x.buf->shape.back(), 1);
  require(c, dim > 0 && x.numel() % dim == 0, "input numel is not a multiple of dim");
  require(c, y.numel() == x.numel(), "output numel differs from the input's");
  const std::uint32_t rows = u32(c, x.numel() / dim, "rows");
  // A vocabulary-sized row (sampling) is one workgroup's three passes: as large a workgroup as allowed.
  const std::uint32_t wg = workgroup_size(c.device, dim >= 16384 ? 1024 : dim >= 256 ? 256 : 64);
  kernel_launch l;
  l.shader = "softmax";
  l.spec_constants = {wg};
  l.groups = grid(rows);
  l.push_constants = push_builder{}.addr(x.address).addr(y.address).u32(dim).u32(rows).take();
  return l;
}

kernel_launch plan_argmax(const task_context& c) {
  auto x = input(c, 0);
  auto y = output(c);
  require_dtype(c, x, {ir::dtype::f32}, "logits");
  require_dtype(c, y, {ir::dtype::i32}, "output");
  require(c, !x.buf->shape.empty() && x.buf->shape.back() > 0, "logits have no last extent");
  const std::int64_t v = x.buf->shape.back();
  const std::int64_t rows = x.numel() / v;
  require(c, y.numel() == rows, "output numel differs from the number of logit rows");
  const bool vec = v % 4 == 0 && x.address % 16 == 0;
  // A vocabulary row (~152k logits, one a greedy step) is split over workgroups of 256 that each read
  // their part in one round of eight 16-byte loads an invocation (8192 logits), the last to arrive
  // merging the parts (shaders/argmax.comp): the row is read by ~19 multiprocessors at once instead of
  // streamed by one. Where the split is off (OCTO_ARGMAX_SPLIT=0), the rows are many (a grid's second
  // dimension holds 65535) or the scratch is not there yet (the first call): one workgroup a row, as large
  // as the device allows.
  constexpr std::uint32_t kSplitWg = 256, kLogitsPerPart = kSplitWg * 32;
  const std::uint64_t parts = (static_cast<std::uint64_t>(v) + kLogitsPerPart - 1) / kLogitsPerPart;
  // Parts and rows each fit a grid dimension (65535); a row of 16384 logits or more has at least 2 parts.
  const bool splittable = v >= 16384 && rows <= 65535 && parts <= 65535;
  const bool split = splittable && on_unless_zero(c, "OCTO_ARGMAX_SPLIT") && c.scratch_address != 0 &&
                     workgroup_size(c.device, kSplitWg) == kSplitWg;
  const std::uint32_t wg = split ? kSplitWg : workgroup_size(c.device, v >= 16384 ? 1024 : 256);
  kernel_launch l;
  l.shader = "argmax";
  l.spec_constants = {wg, vec ? 1u : 0u, split ? static_cast<std::uint32_t>(parts) : 1u};
  if (split) {
    l.groups = {static_cast<std::uint32_t>(parts), static_cast<std::uint32_t>(rows), 1};
  } else {
    l.groups = grid(static_cast<std::uint64_t>(rows));
  }
  // The split's scratch: a counter a row (rounded up to 4), then each row's parts as (value, index).
  l.scratch_bytes = splittable ? 4 * ((static_cast<std::uint64_t>(rows) + 3) / 4 * 4 + 2 * rows * parts) : 0;
  l.push_constants = push_builder{}
                         .addr(x.address).addr(y.address).addr(split ? c.scratch_address : 0)
                         .u32(u32(c, v, "vocab")).u32(u32(c, rows, "rows"))
                         .take();
  return l;
}

}  // namespace octo::vm::vulkan::kernels
