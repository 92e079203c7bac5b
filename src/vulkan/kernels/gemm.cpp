// GEMM_TILE / GEMV_TILE over many rows (prefill): the tiled kernels of shaders/gemm.comp. plan_gemv
// validates the task and asks plan_gemm_tiled first; it answers false when no tiled kernel fits.
#include <cstdlib>
#include <string_view>

#include "vulkan/kernels/planner_support.hpp"

namespace octo::vm::vulkan::kernels {
namespace {

struct gemm_module {
  ir::dtype dtype;
  std::string_view name;
};
constexpr gemm_module gemm_modules[] = {
    {ir::dtype::f32, "gemm_f32"},   {ir::dtype::f16, "gemm_f16"},   {ir::dtype::bf16, "gemm_bf16"},
    {ir::dtype::q8_0, "gemm_q8_0"}, {ir::dtype::q4_0, "gemm_q4_0"}, {ir::dtype::q4_1, "gemm_q4_1"},
    {ir::dtype::q5_0, "gemm_q5_0"}, {ir::dtype::q5_1, "gemm_q5_1"}, {ir::dtype::q2_k, "gemm_q2_k"},
    {ir::dtype::q3_k, "gemm_q3_k"}, {ir::dtype::q4_k, "gemm_q4_k"}, {ir::dtype::q5_k, "gemm_q5_k"},
    {ir::dtype::q6_k, "gemm_q6_k"},
};

}  // namespace

bool plan_gemm_tiled(const task_context& c, const gemm_args& a, kernel_launch& l) {
  const gemm_module* mod = nullptr;
  for (const auto& m : gemm_modules)
    if (m.dtype == a.w_dtype) mod = &m;
  // Many rows: the 64 x 64 tiled kernel reads each weight byte once per 64 rows.
  const bool tiled = mod && a.rows >= 16 && a.K % 32 == 0 && a.vec && c.device.max_workgroup_size_x >= 256 &&
                     c.device.max_shared_memory >= 20000 && !std::getenv("OCTO_KERNELS_NO_GEMM");
  if (!tiled) return false;
  l.shader = mod->name;
  l.groups = grid((a.n_tile + 63) / 64, (a.rows + 63) / 64);
  l.push_constants = push_builder{}
                         .addr(a.x).addr(a.w).addr(a.bias).addr(a.y).addr(c.globals_address)
                         .u32(a.K).u32(a.rows).u32(a.row0).u32(a.n_tile).u32(a.n_off).u32(a.ldy)
                         .u32(a.w_row_bytes).u32(a.has_bias ? 1u : 0u).u32(a.bias_dtype)
                         .take();
  return true;
}

}  // namespace octo::vm::vulkan::kernels
