// Planner for the flat elementwise family (shaders/eltwise.comp): COPY, ADD, MUL, SILU_MUL, GELU,
// ALLREDUCE_SHARD.
#include "vulkan/kernels/planner_support.hpp"

namespace octo::vm::vulkan::kernels {
namespace {

enum : std::uint32_t { op_copy = 0, op_add = 1, op_mul = 2, op_scale = 3, op_silu_mul = 4, op_gelu = 5, op_sum = 6 };


}  // namespace

kernel_launch plan_elementwise(const task_context& c) {
  auto y = output(c);
  require_dtype(c, y, {ir::dtype::f32, ir::dtype::f16, ir::dtype::bf16, ir::dtype::i32}, "output");
  const std::size_t n_in = c.task.inputs.size();
  require(c, n_in >= 1 && n_in <= 8, "needs 1 to 8 inputs");
  std::uint32_t op = 0;
  std::uint32_t nb = 1;
  float alpha = 1.0f;
  switch (c.task.op) {
    case ir::opcode::copy: op = op_copy; break;
    case ir::opcode::add: op = op_add; break;
    case ir::opcode::mul:
      op = n_in == 1 ? op_scale : op_mul;
      alpha = static_cast<float>(c.task.params.get_real(ir::param_key::alpha, 1.0));
      break;
    case ir::opcode::silu_mul: op = op_silu_mul; break;
    case ir::opcode::gelu: op = op_gelu; break;
    case ir::opcode::allreduce_shard: op = op_sum; break;
    default: fail(c, "is not an elementwise opcode");
  }
  const std::int64_t n = y.numel();
  push_builder p;
  std::uint32_t dtypes = 0;
  for (std::size_t i = 0; i < 8; ++i) {
    if (i < n_in) {
      auto t = input(c, i);
      require_dtype(c, t, {ir::dtype::f32, ir::dtype::f16, ir::dtype::bf16, ir::dtype::i32, ir::dtype::i8, ir::dtype::u8},
                    "input");
      dtypes |= static_cast<std::uint32_t>(t.dtype()) << (4 * i);
      const bool broadcast = i == 1 && (op == op_add || op == op_mul);
      if (broadcast) {
        require(c, t.numel() > 0 && n % t.numel() == 0,
                "second input's numel " + std::to_string(t.numel()) + " does not divide " + std::to_string(n));
        nb = u32(c, t.numel(), "broadcast numel");
      } else {
        require(c, t.numel() == n, "input numel " + std::to_string(t.numel()) + " differs from the output's " +
                                       std::to_string(n));
      }
      p.addr(t.address);
    } else {
      p.addr(0);
    }
  }
  const std::uint32_t wg = workgroup_size(c.device, 256);
  const bool half_out = y.dtype() == ir::dtype::f16 || y.dtype() == ir::dtype::bf16;
  kernel_launch l;
  l.shader = "eltwise";
  l.spec_constants = {wg};
  l.groups = stride_grid(static_cast<std::uint64_t>(half_out ? (n + 1) / 2 : n), wg);
  l.push_constants = p.addr(y.address)
                         .u32(u32(c, n, "numel")).u32(nb).u32(op).u32(static_cast<std::uint32_t>(n_in))
                         .u32(dtypes).u32(static_cast<std::uint32_t>(y.dtype())).f32(alpha)
                         .take();
  return l;
}

}  // namespace octo::vm::vulkan::kernels
