// find_planner: the opcode -> planner table. Conventions shared with the VM (src/vulkan/kernel_registry.hpp):
//   * kernel_launch::shader names a module: the stem of shaders/<name>.comp, or a variant listed in
//     shaders/variants.cmake. Spec constant 0 is the workgroup size (local_size_x_id = 0).
//   * groups == {0, 0, 0} (and an empty shader name) means "no dispatch": NOP. The VM records nothing
//     for it but still treats its counter as signalled.
//   * Push constants start at offset 0 and are exactly the shader's push_constant block (<= 128 bytes).
//     Tensors are uvec2 device addresses, so every kernel needs bufferDeviceAddress; no descriptor sets.
//   * Grids larger than 65535 workgroups are laid over x and z; kernels read octo_group_linear().
#include "vulkan/kernel_registry.hpp"
#include "vulkan/kernels/planner_support.hpp"

namespace octo::vm::vulkan {

namespace kernels {
kernel_launch plan_nop(const task_context&) {
  kernel_launch l;
  l.groups = {0, 0, 0};
  return l;
}
}  // namespace kernels

kernel_planner find_planner(ir::opcode op) {
  using namespace kernels;
  switch (op) {
    case ir::opcode::nop: return plan_nop;
    case ir::opcode::copy: return plan_elementwise;
    case ir::opcode::embed: return plan_embed;
    case ir::opcode::rmsnorm: return plan_norm;
    case ir::opcode::layernorm: return plan_norm;
    case ir::opcode::gemv_tile: return plan_gemv;
    case ir::opcode::gemm_tile: return plan_gemv;
    case ir::opcode::attention_tile: return plan_attention;
    case ir::opcode::rope: return plan_rope;
    case ir::opcode::silu_mul: return plan_elementwise;
    case ir::opcode::gelu: return plan_elementwise;
    case ir::opcode::add: return plan_elementwise;
    case ir::opcode::mul: return plan_elementwise;
    case ir::opcode::dequant: return plan_dequant;
    case ir::opcode::softmax: return plan_softmax;
    case ir::opcode::allreduce_shard: return plan_elementwise;
    case ir::opcode::kv_append: return plan_kv_append;
    case ir::opcode::sample_argmax: return plan_argmax;
    case ir::opcode::attention_combine: return plan_attention_combine;
    case ir::opcode::rmsnorm_gemv: return plan_gemv;
    case ir::opcode::gemv_add: return plan_gemv;
    case ir::opcode::rmsnorm_swiglu: return plan_gemv;
    case ir::opcode::rmsnorm_gemv_rope: return plan_gemv;
    case ir::opcode::rmsnorm_gemv_kv: return plan_gemv;
    case ir::opcode::rmsnorm_rope: return plan_norm_rope;
    case ir::opcode::rmsnorm_rope_kv: return plan_norm_rope;
  }
  return nullptr;
}

}  // namespace octo::vm::vulkan
