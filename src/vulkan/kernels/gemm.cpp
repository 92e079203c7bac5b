// GEMM_TILE / GEMV_TILE over many rows (prefill): picks one of three tiled kernels and its tile.
//   gemm_reg_<dt>   shaders/gemm_reg.comp: SIMT, 256 invocations each holding 4x8 or 8x4 (or 4x4)
//                   sums, f32 throughout: the default for large grids (many rows and columns).
//   gemm_<dt>       shaders/gemm.comp: the first 64x64 kernel (4x4 sums, 32 of K per step): the
//                   default for small grids, where half as many K steps matter more than the FMAs.
//   gemm_coop_<dt>  shaders/gemm_coop.comp: tensor cores (VK_NV_cooperative_matrix, subgroup size 32),
//                   each factor split into f16 high + low parts (about f32 precision), f32 sums.
//   gemm_coopf_<dt> the same with plain f16 factors (llama.cpp's precision: ~1e-3 relative error).
// Measured on an H200 (benchmarks/results/2026-11-21-h100-gemm): gemm_reg 1.1-1.3x gemm's speed when
// the 128x64 grid has 200+ workgroups (7B shapes at T=512: 25-31 TFLOP/s), 0.7-1.0x below that;
// gemm_coop about gemm_reg's speed; gemm_coopf 2.5-3.2x gemm's (60-98 TFLOP/s at T=512).
// gemm_coopf changes the arithmetic (f16 factors): it is the default where the VM's precision is `fast`
// (vulkan_options::precision, the default; the contract is docs/precision.md) and the device has
// cooperative matrices; `accurate` keeps gemm_reg / gemm (f32). gemm_coop runs on request only.
// plan_gemv validates the task and asks plan_gemm_tiled first; it answers false when none fits (then
// the GEMV kernel runs row block by row block).
// Environment (benchmarks and tests): OCTO_KERNELS_NO_GEMM=1 disables all four; OCTO_GEMM_KERNEL=
// old|reg|coop|coopf picks one where it can run (whatever the precision); OCTO_GEMM_TILE=MxN forces a tile of the chosen kernel;
// OCTO_GEMM_BK=64 gives gemm_coop steps of 64 along K (where K % 64 == 0): on the H100 it made pp512
// 19-20% slower than the default 32 (benchmarks/results/2026-11-27-h100-gemm-bk), so 32 stays.
#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <span>
#include <string_view>
#include <vector>

#include "vulkan/kernels/planner_support.hpp"

namespace octo::vm::vulkan::kernels {
namespace {

struct gemm_module {
  ir::dtype dtype;
  std::string_view old, reg, coop, coopf;
};
#define OCTO_GEMM_ROW(dt) {ir::dtype::dt, "gemm_" #dt, "gemm_reg_" #dt, "gemm_coop_" #dt, "gemm_coopf_" #dt}
constexpr gemm_module gemm_modules[] = {
    {ir::dtype::f32, "gemm_f32", "gemm_reg_f32", {}, {}},  // no tensor-core module: see can_coop
    OCTO_GEMM_ROW(f16),  OCTO_GEMM_ROW(bf16), OCTO_GEMM_ROW(q8_0), OCTO_GEMM_ROW(q4_0),
    OCTO_GEMM_ROW(q4_1), OCTO_GEMM_ROW(q5_0), OCTO_GEMM_ROW(q5_1), OCTO_GEMM_ROW(q2_k), OCTO_GEMM_ROW(q3_k),
    OCTO_GEMM_ROW(q4_k), OCTO_GEMM_ROW(q5_k), OCTO_GEMM_ROW(q6_k), OCTO_GEMM_ROW(iq4_nl), OCTO_GEMM_ROW(iq4_xs),
};
#undef OCTO_GEMM_ROW

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

struct tile {
  std::uint32_t bm, bn;
};

/// The largest tile (by area) whose grid still has `min_groups` workgroups; the smallest otherwise.
/// A forced OCTO_GEMM_TILE wins when it is one of the kernel's tiles.
/// `shared_bytes(t)` > `max_shared` rules a tile out.
template <class F>
tile pick_tile(std::span<const tile> all, std::uint32_t rows, std::uint32_t n, std::uint32_t max_shared,
               F shared_bytes) {
  std::vector<tile> tiles;
  for (const tile& t : all)
    if (shared_bytes(t) <= max_shared) tiles.push_back(t);
  const std::string forced = env("OCTO_GEMM_TILE");
  unsigned fm = 0, fn = 0;
  if (!forced.empty() && std::sscanf(forced.c_str(), "%ux%u", &fm, &fn) == 2)
    for (const tile& t : tiles)
      if (t.bm == fm && t.bn == fn) return t;
  // Half a workgroup per multiprocessor of a large GPU (H100/H200: 132 SMs) is still better served by
  // the larger tile (measured: 1.5B q_proj at T=512, 96 groups of 128x64 beat 192 of 64x64).
  constexpr std::uint64_t min_groups = 64;
  for (const tile& t : tiles) {  // listed largest first
    const std::uint64_t groups = std::uint64_t{(rows + t.bm - 1) / t.bm} * ((n + t.bn - 1) / t.bn);
    if (groups >= min_groups) return t;
  }
  return tiles.back();
}

}  // namespace

/// gemm_coop's K per step (spec constant BK); OCTO_GEMM_BK=64 asks for 64 where K % 64 == 0.
constexpr std::uint32_t kCoopStepK = 32;

bool plan_gemm_tiled(const task_context& c, const gemm_args& a, kernel_launch& l) {
  const gemm_module* mod = nullptr;
  for (const auto& m : gemm_modules)
    if (m.dtype == a.w_dtype) mod = &m;
  const std::string off = env("OCTO_KERNELS_NO_GEMM");
  if (!mod || a.rows < 16 || !a.vec || (!off.empty() && off != "0")) return false;
  const device_facts& d = c.device;
  const std::string force = env("OCTO_GEMM_KERNEL");
  const std::string no_coop = env("OCTO_KERNELS_NO_COOPMAT");

  const bool can_old = a.K % 32 == 0 && d.max_workgroup_size_x >= 256 && d.max_shared_memory >= 20000;
  const bool can_reg = a.K % 16 == 0 && d.max_workgroup_size_x >= 256 && d.max_shared_memory >= 17 * 1024;
  const bool can_coop = a.K % 32 == 0 && d.cooperative_matrix_nv && d.subgroup_size == 32 &&
                        d.max_workgroup_size_x >= 128 && d.max_shared_memory >= 24 * 1024 &&
                        a.w_dtype != ir::dtype::f32 && (no_coop.empty() || no_coop == "0");

  // gemm_reg pays off once the grid is well over one wave of a large GPU (see the header).
  const std::uint64_t big_groups = std::uint64_t{(a.rows + 127) / 128} * ((a.n_tile + 63) / 64);
  // (0.5B's gate/up, K = 896, stayed 10% faster on gemm.)
  const bool reg_first = a.rows >= 256 && a.K >= 1024 && big_groups >= 200;

  std::string_view kind;
  if (force == "old" && can_old) kind = "old";
  else if (force == "reg" && can_reg) kind = "reg";
  else if (force == "coopf" && can_coop) kind = "coopf";
  else if (force == "coop" && can_coop) kind = "coop";
  // The default where the VM's precision is `fast` and the device has tensor cores (docs/precision.md).
  else if (force.empty() && c.f16_matmul && can_coop) kind = "coopf";
  else if (can_reg && (reg_first || !can_old)) kind = "reg";
  else if (can_old) kind = "old";
  else return false;

  tile t{64, 64};
  // 128x128 is left out: gemm_reg spills its 64 sums per invocation there (10x slower on the H200),
  // and gemm_coopf ran it at 2/3 of the speed of 128x64.
  // Wide outputs (gate/up: N >= 4K) ran 10-20% faster as 64x128, the rest as 128x64.
  static constexpr std::array<tile, 3> wide{{{64, 128}, {128, 64}, {64, 64}}};
  static constexpr std::array<tile, 3> other{{{128, 64}, {64, 128}, {64, 64}}};
  const std::span<const tile> tiles = std::uint64_t{a.n_tile} >= 4ull * a.K ? std::span<const tile>(wide)
                                                                            : std::span<const tile>(other);
  if (kind == "old") {
    l.shader = mod->old;
  } else if (kind == "reg") {
    l.shader = mod->reg;
    // xs and ws: 16 k rows of (BM + 4) and (BN + 4) floats.
    t = pick_tile(tiles, a.rows, a.n_tile, d.max_shared_memory,
                  [](tile x) { return 16 * 4 * (x.bm + x.bn + 8); });
    l.spec_constants = {256, t.bm / 16, t.bn / 16};
  } else {
    const bool split = kind == "coop";
    l.shader = split ? mod->coop : mod->coopf;
    // K steps of kCoopStepK, or 64 on request.
    const std::string bk_env = env("OCTO_GEMM_BK");
    const std::uint32_t bk = bk_env == "64" && a.K % 64 == 0 ? 64 : kCoopStepK;
    // f16 tiles of (bk + 8)-half rows (two of each with the split), plus 2 KiB of epilogue staging.
    t = pick_tile(tiles, a.rows, a.n_tile, d.max_shared_memory,
                  [split, bk](tile x) { return (x.bm + x.bn) * (bk + 8) * 2 * (split ? 2 : 1) + 2048; });
    l.spec_constants = {128, t.bm / 32, t.bn / 16, bk};
  }
  const std::uint64_t col_groups = (a.n_tile + t.bn - 1) / t.bn;
  const std::uint64_t row_groups = (a.rows + t.bm - 1) / t.bm;
  require(c, row_groups <= 65535, "too many rows for one dispatch");
  l.groups = grid(col_groups, static_cast<std::uint32_t>(row_groups));
  l.push_constants = matmul_push(c, a);
  return true;
}

}  // namespace octo::vm::vulkan::kernels
