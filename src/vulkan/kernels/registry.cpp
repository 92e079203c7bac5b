// The Vulkan column of the opcode table (include/octo/ir/opcode_table.hpp): each opcode's planner, or
// no_kernel with the reason. ir::by_opcode fails the build, naming the opcode, when a row is missing.
// Conventions shared with the VM (src/vulkan/kernel_registry.hpp):
//   * kernel_launch::shader names a module: the stem of shaders/<name>.comp, or a variant listed in
//     shaders/variants.cmake. Spec constant 0 is the workgroup size (local_size_x_id = 0).
//   * An empty shader name or a zero group count means "no dispatch": the VM records nothing but still
//     treats the task's counter as signalled.
//   * Push constants start at offset 0 and are exactly the shader's push_constant block (<= 128 bytes;
//     unit_vk_kernel_plans checks each planner's push_builder fields against the compiled module).
//     Tensors are uvec2 device addresses, so every kernel needs bufferDeviceAddress; no descriptor sets.
//   * Grids larger than 65535 workgroups are laid over x and z; kernels read octo_group_linear().
#include "octo/ir/op_registry.hpp"
#include "vulkan/kernel_registry.hpp"
#include "vulkan/kernels/planner_support.hpp"

namespace octo::vm::vulkan {
namespace {

using namespace kernels;
using ir::opcode;

constexpr kernel_row no_kernel(opcode op, std::string_view reason) { return {op, nullptr, reason}; }

constexpr kernel_row kernel_rows[] = {
    no_kernel(opcode::nop, "NOP dispatches nothing; the VM orders its counter like any task's"),
    {opcode::copy, plan_elementwise, {}},
    {opcode::embed, plan_embed, {}},
    {opcode::rmsnorm, plan_norm, {}},
    {opcode::layernorm, plan_norm, {}},
    {opcode::gemv_tile, plan_gemv, {}},
    {opcode::gemm_tile, plan_gemv, {}},
    {opcode::attention_tile, plan_attention, {}},
    {opcode::rope, plan_rope, {}},
    {opcode::silu_mul, plan_elementwise, {}},
    {opcode::gelu, plan_elementwise, {}},
    {opcode::add, plan_elementwise, {}},
    {opcode::mul, plan_elementwise, {}},
    {opcode::dequant, plan_dequant, {}},
    {opcode::softmax, plan_softmax, {}},
    {opcode::allreduce_shard, plan_elementwise, {}},
    {opcode::kv_append, plan_kv_append, {}},
    {opcode::sample_argmax, plan_argmax, {}},
    {opcode::attention_combine, plan_attention_combine, {}},
    {opcode::rmsnorm_gemv, plan_gemv, {}},
    {opcode::gemv_add, plan_gemv, {}},
    {opcode::rmsnorm_swiglu, plan_gemv, {}},
    {opcode::rmsnorm_gemv_rope, plan_gemv, {}},
    {opcode::rmsnorm_gemv_kv, plan_gemv, {}},
    {opcode::rmsnorm_rope, plan_norm_rope, {}},
    {opcode::rmsnorm_rope_kv, plan_norm_rope, {}},
    {opcode::rmsnorm_gemv_norm_rope, plan_gemv, {}},
    {opcode::rmsnorm_gemv_norm_kv, plan_gemv, {}},
    {opcode::rmsnorm_gemv_qkv, plan_gemv, {}},
    {opcode::rmsnorm_gemv_norm_qkv, plan_gemv, {}},
};

constexpr auto kernel_table = ir::by_opcode<kernel_rows>();

}  // namespace

const kernel_row& kernel_for(ir::opcode op) {
  const auto i = static_cast<std::size_t>(op);
  if (i >= kernel_table.size()) throw octo::error("no opcode " + std::to_string(i) + " in the IR");
  return kernel_table[i];
}

}  // namespace octo::vm::vulkan
