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
// old|reg|coop|coopf picks one where it can run (whatever the precision); OCTO_GEMM_TILE=MxN forces a
// tile of the chosen kernel; gemm_coop's own knobs (OCTO_GEMM_COOP, OCTO_GEMM_BK, OCTO_GEMM_MIN_GROUPS,
// OCTO_GEMM_NARROW) are at pick_coop, OCTO_GEMM_SPLITK at split_for; OCTO_GEMM_DEQUANT at plan_weights_f16, OCTO_GEMM_X16 at plan_x_f16, OCTO_GEMM_NORM_AHEAD
// at plan_norm_x, OCTO_GEMM_DEEP and OCTO_GEMM_EPI_REGS (the tensor-core epilogue from registers) at
// plan_gemm_tiled's end; OCTO_GEMM_ROPE_KV (the RoPE / KV epilogue) at gemv.cpp's gemm_rope_kv_fits.
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <optional>
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
  std::string_view to_f16;  // shaders/weights_f16.comp: the weight tile dequantized once for gemm_coopf_f16
};
#define OCTO_GEMM_ROW(dt) \
  {ir::dtype::dt, "gemm_" #dt, "gemm_reg_" #dt, "gemm_coop_" #dt, "gemm_coopf_" #dt, "weights_f16_" #dt}
constexpr gemm_module gemm_modules[] = {
    {ir::dtype::f32, "gemm_f32", "gemm_reg_f32", {}, {}, {}},  // no tensor-core module: see can_coop
    {ir::dtype::f16, "gemm_f16", "gemm_reg_f16", "gemm_coop_f16", "gemm_coopf_f16", {}},  // read as stored
    OCTO_GEMM_ROW(bf16), OCTO_GEMM_ROW(q8_0), OCTO_GEMM_ROW(q4_0),
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

/// One gemm_coop configuration (shaders/gemm_coop.comp's spec constants): wg invocations as wm x
/// (wg / 32 / wm) subgroups, each owning fm x fn fragments of 16 x 8; the tile is bm x bn.
struct coop_config {
  std::uint32_t bm, bn, wg, wm, fm, fn;
};
constexpr std::uint32_t coop_bm(std::uint32_t wm, std::uint32_t fm) { return 16 * fm * wm; }
constexpr std::uint32_t coop_bn(std::uint32_t wg, std::uint32_t wm, std::uint32_t fn) { return 8 * fn * (wg / 32 / wm); }
#define OCTO_COOP(wg, wm, fm, fn) {coop_bm(wm, fm), coop_bn(wg, wm, fn), wg, wm, fm, fn}
// Largest first; OCTO_GEMM_TILE=MxN names the first of a tile that fits.
constexpr coop_config coop_configs[] = {
    OCTO_COOP(256, 2, 4, 4),  // 128 x 128: subgroups of 64 x 32
    OCTO_COOP(256, 4, 2, 4),  // 128 x 64: subgroups of 32 x 32
    OCTO_COOP(256, 2, 2, 4),  // 64 x 128
    OCTO_COOP(256, 2, 2, 2),  // 64 x 64: 8 subgroups of 32 x 16
    OCTO_COOP(128, 2, 2, 4),  // 64 x 64: 4 subgroups of 32 x 32 (devices with 128-invocation workgroups)
};
/// 32 x 32 in 4 subgroups of 16 x 16, for narrow outputs only (pick_coop).
constexpr coop_config coop_narrow = OCTO_COOP(128, 2, 1, 2);
#undef OCTO_COOP
static_assert(coop_configs[0].bm == 128 && coop_configs[0].bn == 128 && coop_configs[2].bn == 128 &&
              coop_configs[3].bm == 64 && coop_configs[3].bn == 64 && coop_configs[4].bn == 64);

/// gemm_coop's shared memory: two f16 buffers of the x and W tiles in rows of bk + 8 halves (twice that
/// with the split) and one 16 x 8 f32 staging fragment per subgroup (the norm's sums reuse the x tiles).
std::uint32_t coop_shared_bytes(const coop_config& c, std::uint32_t bk, bool split) {
  return 2 * (c.bm + c.bn) * (bk + 8) * 2 * (split ? 2 : 1) + c.wg / 32 * 512;
}

/// A gemm_coop launch: its configuration, K per step and the workgroups each output tile's K steps are
/// split over (1: none).
struct coop_choice {
  coop_config cfg;
  std::uint32_t bk;
  std::uint32_t ksplit = 1;
};

/// The K split of a grid of `tiles` output tiles (shaders/gemm_coop.comp, KSPLIT): the most splits, at
/// most max_split, whose workgroups still fit one wave (min_groups) while each split keeps at least
/// kSplitMinK of K, where that fills at least half a wave; else 1. On the H100 at 512 rows
/// (benchmarks/results/2026-12-07-h100-ksplit, call1) the 1.5B's down projection (48 tiles, K = 8960)
/// ran 199 -> 137 us split in 2, while shorter rows gained nothing (its q / o, K = 1536, split in 2: 40.7
/// -> 40.8 us; the 0.5B's down, K = 4864, in 4: 55.9 -> 56.4). OCTO_GEMM_SPLITK=N forces N (1: none)
/// where every split keeps a K step.
/// Whether `s` splits of `steps` K steps (ceil(steps / s) each, the last shorter) leave every split a step.
bool every_split_steps(std::uint32_t steps, std::uint32_t s) {
  return s >= 1 && s <= steps && (s - 1) * ((steps + s - 1) / s) < steps;
}

std::uint32_t split_for(std::uint64_t tiles, std::uint32_t K, std::uint32_t bk, std::uint64_t min_groups,
                        std::uint32_t max_split) {
  constexpr std::uint32_t kSplitMinK = 2048;
  const std::uint32_t steps = K / bk;
  const auto fits = [&](std::uint32_t s) { return s <= max_split && every_split_steps(steps, s); };
  if (const std::string f = env("OCTO_GEMM_SPLITK"); !f.empty()) {
    const auto s = static_cast<std::uint32_t>(std::strtoul(f.c_str(), nullptr, 10));
    return fits(s) ? s : 1;
  }
  for (std::uint32_t s = max_split; s >= 2; --s)
    if (fits(s) && tiles * s <= min_groups && K / s >= kSplitMinK && tiles * s >= min_groups / 2) return s;
  return 1;
}

/// The configuration for a rows x n x K GEMM. Measured on the H100 at 512 rows
/// (benchmarks/results/2026-11-27-h100-gemm-coop, per weight shape of Qwen2.5-0.5B / 1.5B / 7B):
///  - 128 x 128 (subgroups of 64 x 32) where its grid has 3/4 of a wave (99 workgroups of min_groups'
///    132, below): 10-15% over 64 x 64 on gate/up (152-592 workgroups), and 20-33% on the 7B's q/o/down
///    (112), while at 1.5B's 48 and 0.5B's 28 it was 30-35% slower;
///  - 64 x 64 otherwise, with 8 subgroups of 32 x 16 (up to 30% faster than 4 of 32 x 32: more loads in
///    flight for the same tile). 128 x 64 and 64 x 128 (subgroups of 32 x 32) lost to both everywhere;
///  - a grid under one wave (min_groups = 132 workgroups; OCTO_GEMM_MIN_GROUPS) is bound by each step's
///    load latency, not by throughput: there K steps of 64 (half the steps; K % 64 == 0) were 15-25%
///    faster, and 10-50% slower where the grid is larger (more registers, fewer workgroups per
///    multiprocessor).
/// Tuning: OCTO_GEMM_COOP=wg,wm,fm,fn and OCTO_GEMM_TILE=MxN force a configuration, OCTO_GEMM_BK=32|64
/// the K step, where they fit. None when no configuration fits the device.
std::optional<coop_choice> pick_coop(std::uint32_t rows, std::uint32_t n, std::uint32_t K, bool split,
                                     const device_facts& d, bool deep = false, std::uint32_t max_ksplit = 1) {
  const auto fits = [&](const coop_config& c, std::uint32_t bk) {
    return K % bk == 0 && coop_shared_bytes(c, bk, split) <= d.max_shared_memory && c.wg <= d.max_workgroup_size_x &&
           c.wg / 32 % c.wm == 0 && c.bm * (bk / 8) % c.wg == 0 && c.bn * (bk / 8) % c.wg == 0;
  };
  const auto groups = [&](const coop_config& c) {
    return std::uint64_t{(rows + c.bm - 1) / c.bm} * ((n + c.bn - 1) / c.bn);
  };
  std::uint64_t min_groups = 132;
  if (const std::string g = env("OCTO_GEMM_MIN_GROUPS"); !g.empty()) min_groups = std::strtoull(g.c_str(), nullptr, 10);
  const std::string bk_env = env("OCTO_GEMM_BK");
  // The K step: forced, or 64 where the grid is under a wave and it fits, else 32. The three-stage loop
  // (`deep`) takes 64 wherever it fits: on the H200 the 1.5B shapes ran 75.5 TFLOP/s with it against
  // 62.6 at 32 (benchmarks/results/2026-11-30-h200-x16, call4).
  const auto step_for = [&](const coop_config& c) -> std::uint32_t {
    if ((bk_env == "64" || bk_env == "32") && fits(c, bk_env == "64" ? 64 : 32)) return bk_env == "64" ? 64 : 32;
    return (deep || groups(c) < min_groups) && fits(c, 64) ? 64 : 32;
  };

  unsigned wg = 0, wm = 0, fm = 0, fn = 0;
  if (std::sscanf(env("OCTO_GEMM_COOP").c_str(), "%u,%u,%u,%u", &wg, &wm, &fm, &fn) == 4 && wg % 32 == 0 && wm > 0 &&
      wg / 32 % wm == 0) {
    const coop_config c{coop_bm(wm, fm), coop_bn(wg, wm, fn), wg, wm, fm, fn};
    if (fits(c, step_for(c))) return coop_choice{c, step_for(c)};
  }
  std::vector<coop_config> all;
  for (const coop_config& c : coop_configs)
    if (fits(c, 32)) all.push_back(c);
  if (all.empty()) return std::nullopt;
  unsigned tm = 0, tn = 0;
  if (std::sscanf(env("OCTO_GEMM_TILE").c_str(), "%ux%u", &tm, &tn) == 2)
    for (const coop_config& c : all)
      if (c.bm == tm && c.bn == tn) return coop_choice{c, step_for(c)};
  for (const coop_config& c : all)
    if (c.bm == 128 && c.bn == 128 && groups(c) >= min_groups * 3 / 4) return coop_choice{c, step_for(c)};
  // Under 3/4 of a wave of 128 x 128 tiles: the same tiles with each one's K split over several
  // workgroups where that fills the wave over long rows (the 1.5B's down projection: 48 tiles, split in 2).
  for (const coop_config& c : all)
    if (c.bm == 128 && c.bn == 128)
      if (const std::uint32_t s = split_for(groups(c), K, step_for(c), min_groups, max_ksplit); s > 1)
        return coop_choice{c, step_for(c), s};
  // OCTO_GEMM_NARROW=1: outputs of at most kNarrowCols columns (the K and V projections of Qwen2.5 0.5B /
  // 1.5B / 7B) on 32 x 32 tiles in 4 subgroups, four times the workgroups of 64 x 64 ones. On the H100 at
  // 512 rows (benchmarks/results/2026-12-07-h100-attn-regs, call2, through OCTO_GEMM_COOP=128,2,1,2) the
  // 1.5B's K / V GEMM ran 22.2 -> 15.0 us, the 0.5B's 16.1 -> 11.3, while every wider shape lost with it.
  // On request: on an H200 (benchmarks/results/2026-12-07-h100-narrow, call1) it passed conformance and
  // ran the K / V GEMMs 25-31% faster, but pp512 did not move (K and V run beside Q, which sets the pace).
  constexpr std::uint32_t kNarrowCols = 512;
  if (n <= kNarrowCols && fits(coop_narrow, 32) && env("OCTO_GEMM_NARROW") == "1")
    return coop_choice{coop_narrow, step_for(coop_narrow)};
  // The first 64 x 64 configuration that fits (all holds at least the last one).
  for (const coop_config& c : all)
    if (c.bm == 64 && c.bn == 64) return coop_choice{c, step_for(c)};
  return coop_choice{all.back(), step_for(all.back())};
}

/// weights_f16 over rows n_off .. n_off + n_tile of the weight at `w` into f16 rows at `dst`.
kernel_launch dequant_rows(std::string_view shader, std::uint64_t w, std::uint64_t dst, std::uint32_t n_tile,
                           std::uint32_t n_off, std::uint32_t K, std::uint32_t w_row_bytes) {
  kernel_launch dq;
  dq.shader = shader;
  dq.spec_constants = {256};
  dq.groups = stride_grid(std::uint64_t{n_tile} * (K / 8), 256);
  dq.push_constants = push_builder{}.addr(w).addr(dst).u32(n_tile).u32(n_off).u32(K / 8).u32(w_row_bytes).take();
  return dq;
}

/// Whether plan_weights_f16 has the tensor-core GEMM read a quantized weight as f16 rows: from
/// kDequantRows rows (OCTO_GEMM_DEQUANT=0: never, =1: at any row count).
bool dequant_wanted(const gemm_args& a) {
  constexpr std::uint32_t kDequantRows = 256;
  const std::string knob = env("OCTO_GEMM_DEQUANT");
  return knob != "0" && (knob == "1" || a.rows >= kDequantRows);
}

/// Prefill sizes on tensor cores: the GEMM multiplies the weight as f16 rows (gemm_coopf_f16) instead of
/// every row block of the output dequantizing its tile again inside gemm_coopf (4 times at 512 rows with
/// 128-row tiles). Both convert through w16_unit, so the products are the same. On the H200 at 512 rows
/// gemm_coopf ran Q4_K at 27-38 and Q6_K at 12-18 TFLOP/s on the 1.5B shapes where F16 ran at 55-83
/// (benchmarks/results/2026-11-28-h200-persistent, call5). The f16 rows come from the VM's copy of the
/// whole weight where it keeps one (kernel_launch::weight_copies: made once, no pass per run), else from a
/// `before` launch that dequantizes the tile into the shared scratch on every run. Below kDequantRows
/// rows neither pays (the GEMM is near the memory bound, and f16 rows are 3.5x the Q4_K bytes).
/// OCTO_GEMM_DEQUANT=0 turns both off, =1 takes them at any row count (and, for tests, with gemm_reg too).
/// Without a copy or a shared scratch (the planner's first call, or no memory) `l` stays the direct launch.
/// `a` becomes the arguments the launch now has (the f16 weight rows).
void plan_weights_f16(const task_context& c, gemm_args& a, const gemm_module& mod, std::string_view f16_kernel,
                      kernel_launch& l) {
  if (!dequant_wanted(a)) return;
  const std::uint64_t row_bytes = std::uint64_t{a.K} * 2;
  l.weight_copies = {weight_copy_request{a.w, mod.to_f16, a.w_rows, a.K, a.w_row_bytes}};
  // The SWIGLU's gate and up: both copies, or the direct launch (the scratch holds no two weight tiles).
  if (a.up != 0) l.weight_copies.push_back(weight_copy_request{a.up, mod.to_f16, a.w_rows, a.K, a.w_row_bytes});
  gemm_args f = a;
  f.w_dtype = ir::dtype::f16;
  f.w_row_bytes = static_cast<std::uint32_t>(row_bytes);
  if (a.up != 0) {
    if (c.weight_copy_address[0] == 0 || c.weight_copy_address[1] == 0) return;
    f.w = c.weight_copy_address[0];
    f.up = c.weight_copy_address[1];
  } else if (c.weight_copy_address[0] != 0) {
    f.w = c.weight_copy_address[0];  // every row, as the weight: the GEMM reads rows n_off ..
  } else {
    l.shared_scratch_bytes = row_bytes * a.n_tile;
    if (c.shared_scratch_address == 0) return;
    l.before.push_back(dequant_rows(mod.to_f16, a.w, c.shared_scratch_address, a.n_tile, a.n_off, a.K, a.w_row_bytes));
    // The scratch holds rows n_off .. n_off + n_tile; the GEMM addresses weight row n_off + n (as it does
    // the output's column), so its base sits n_off rows before the scratch (only rows from n_off are read).
    f.w = c.shared_scratch_address - std::uint64_t{a.n_off} * row_bytes;
  }
  l.shader = f16_kernel;
  l.push_constants = matmul_push(c, f);
  a = f;
}

/// x as f16 rows for the tensor-core GEMM: the `before` launch rows_f16_f32 (shaders/weights_f16.comp
/// over x's rows) rounds rows row0 .. row0 + rows into the shared scratch once, and the kernel (spec
/// constant 6, X16) copies them to shared memory as loaded, instead of every column tile of the output
/// loading x in f32 and rounding it again (28 times for the 7B's q projection). The same rounding
/// (pack_sat), so the products are gemm_coopf's bit for bit. On the H200 at 512 rows, the kernel with f16
/// x (benchmarks/results/2026-11-30-h200-x16, call1): 1.5B shapes 69.3 -> 75.2 TFLOP/s, 7B 113.1 ->
/// 119.1 (K and V: 16.2 -> 19.8, 37.9 -> 48.3). The tasks of a wavefront that read the same rows of one x
/// (Q, K and V; gate and up) share one part of the scratch and one launch (shared_scratch_key).
/// From kX16Rows rows (below, the launch and its barrier cost about what the tiles save); not with a norm
/// in the staging (a.norm_w: it squares x in f32) nor where the weight tile already has the scratch.
/// OCTO_GEMM_X16=0 turns it off; =1 takes it at any row count and, for the tests, before gemm_reg as
/// well (f32 products of f16-rounded x: lavapipe runs it that way in CI).
/// True where the launch now reads x as f16 rows (`a` then holds the arguments the launch reads).
bool plan_x_f16(const task_context& c, gemm_args& a, bool reg, kernel_launch& l) {
  constexpr std::uint32_t kX16Rows = 256;
  const std::string knob = env("OCTO_GEMM_X16");
  if (knob == "0" || (reg && knob != "1") || (knob != "1" && a.rows < kX16Rows)) return false;
  if (a.norm_w != 0 || l.shared_scratch_bytes != 0 || !l.before.empty()) return false;
  // rows_f16_f32 addresses an x row's bytes in 32 bits.
  if ((std::uint64_t{a.row0} + a.rows) * a.K * 4 > 0xffffffffull) return false;
  const std::uint64_t row_bytes = std::uint64_t{a.K} * 2;
  l.shared_scratch_bytes = row_bytes * a.rows;
  const auto what = push_builder{}.addr(a.x).u32(a.row0).u32(a.rows).u32(a.K).take();
  l.shared_scratch_key.assign("rows_f16_f32 ");
  l.shared_scratch_key.append(reinterpret_cast<const char*>(what.bytes.data()), what.bytes.size());
  if (c.shared_scratch_address == 0) return false;
  l.before.push_back(dequant_rows("rows_f16_f32", a.x, c.shared_scratch_address, a.rows, a.row0, a.K, a.K * 4));
  gemm_args f = a;
  // The scratch holds rows row0 .. row0 + rows; the kernel addresses x row row0 + m, so its base sits
  // row0 rows before the scratch.
  f.x = c.shared_scratch_address - std::uint64_t{a.row0} * row_bytes;
  l.push_constants = matmul_push(c, f);
  l.spec_constants.resize(7, 0);
  l.spec_constants[6] = 1;
  a = f;
  return true;
}

/// The RMSNORM of an RMSNORM_GEMV over many rows (prefill's q, k and v), in one pass ahead of the GEMM
/// instead of in its x staging: the `before` launch norm_f16 (shaders/norm.comp; `f16`, for the kernels
/// reading x as f16 rows, X16) or norm (f32 rows, for the others) writes rows row0 .. row0 + rows of
/// RMSNORM(x) into the shared scratch, and the GEMM reads them as a plain GEMM_TILE's x. The tasks of a
/// wavefront that normalize the same rows of one x with one weight (Q, K and V) share the part and the
/// launch (shared_scratch_key). The same values as the unfused RMSNORM, then rows_f16_f32 where `f16`.
/// The norm in the staging took each GEMM 24-54% longer on the H200 than the plain one, more than the
/// RMSNORM pass it saved (benchmarks/results/2026-11-28-h200-prefill-fusion, call2), so from
/// kNormAheadRows rows this form replaces it. OCTO_GEMM_NORM_AHEAD=0 keeps the norm in the staging, =1
/// takes this form at any row count. `a` becomes the arguments the launch now has. True where it did.
bool plan_norm_x(const task_context& c, gemm_args& a, bool f16, kernel_launch& l) {
  // The runtime folds a prefill's norms into its GEMMs from as many rows (models::kFoldNormsRows).
  constexpr std::uint32_t kNormAheadRows = 256;
  const std::uint32_t knob = number_knob(c, "OCTO_GEMM_NORM_AHEAD", {0, 1}, 2);
  if (a.norm_w == 0 || knob == 0 || (knob != 1 && a.rows < kNormAheadRows)) return false;
  if (l.shared_scratch_bytes != 0 || !l.before.empty() || a.K % 2 != 0) return false;
  const std::uint64_t elem = f16 ? 2 : 4, row_bytes = std::uint64_t{a.K} * elem;
  l.shared_scratch_bytes = row_bytes * a.rows;
  const auto what = push_builder{}.addr(a.x).addr(a.norm_w).u32(a.row0).u32(a.rows).u32(a.K).u32(a.norm_dtype).f32(a.eps).take();
  l.shared_scratch_key.assign(f16 ? "norm_f16 " : "norm ");
  l.shared_scratch_key.append(reinterpret_cast<const char*>(what.bytes.data()), what.bytes.size());
  if (c.shared_scratch_address == 0) return false;
  kernel_launch n;
  n.shader = f16 ? "norm_f16" : "norm";
  n.spec_constants = {workgroup_size(c.device, std::clamp<std::uint32_t>(a.K / 2, 64, 1024))};
  n.groups = grid(a.rows);
  n.push_constants = push_builder{}
                         .addr(a.x + std::uint64_t{a.row0} * a.K * 4).addr(a.norm_w).addr(0).addr(c.shared_scratch_address)
                         .u32(a.K).u32(a.rows).u32(0).u32(0).u32(a.norm_dtype).u32(0).f32(a.eps)
                         .take();
  l.before.push_back(std::move(n));
  // The scratch holds rows row0 .. row0 + rows; the kernel addresses x row row0 + m.
  a.x = c.shared_scratch_address - std::uint64_t{a.row0} * row_bytes;
  a.norm_w = 0;
  a.norm_dtype = 0;
  a.eps = 0.0f;
  l.push_constants = matmul_push(c, a);
  l.spec_constants[5] = a.up != 0 ? 3 : a.rope_kv ? 5 : 0;  // the epilogue without the norm
  if (f16) {
    l.spec_constants.resize(7, 0);
    l.spec_constants[6] = 1;  // X16
  }
  return true;
}

/// gemm_coop's K split (gemm_coopf_f16_ksplit, spec constant 9 KSPLIT; shaders/gemm_coop.comp): each of
/// the row_groups x col_groups output tiles takes `ksplit` workgroups (along y), which write their sums
/// into the task's transient scratch ([tile][split][bm x bn] floats, in the norm weight's field of the
/// push block) and count their arrivals on the tile's counter in the task's own scratch (zero-filled
/// once, put back to 0 by the last); the last adds the splits in order and runs the epilogue. Only over
/// f16 weight rows (gemm_coopf_f16: F16 weights, or a quantized weight's f16 copy or dequantized tile).
/// The recorder's first calls have no scratch: the launch asks for both and stays unsplit. `a` is what
/// the launch reads.
void plan_ksplit(const task_context& c, gemm_args a, const tile& t, std::uint64_t row_groups, std::uint64_t col_groups,
                 std::uint32_t ksplit, kernel_launch& l) {
  const std::uint32_t steps = a.K / l.spec_constants.at(3);  // spec constant 3: the K step
  const std::uint32_t epi = l.spec_constants.at(5);
  const bool norm_staged = epi == 1 || epi == 4 || epi == 6;
  if (ksplit < 2 || !every_split_steps(steps, ksplit) || norm_staged || row_groups * ksplit > 65535 || l.shader != "gemm_coopf_f16")
    return;
  const std::uint64_t tiles = row_groups * col_groups;
  l.scratch_bytes = (tiles * 4 + 15) / 16 * 16;
  l.transient_scratch_bytes = tiles * ksplit * t.bm * t.bn * 4;
  if (c.scratch_address == 0 || c.transient_scratch_address == 0) return;
  l.shader = "gemm_coopf_f16_ksplit";
  l.spec_constants.resize(10, 0);
  l.spec_constants[9] = ksplit;
  l.groups[1] = static_cast<std::uint32_t>(row_groups * ksplit);
  a.norm_w = c.transient_scratch_address;
  l.push_constants = matmul_block(c, a).addr(c.scratch_address).take();
}

}  // namespace

bool plan_gemm_tiled(const task_context& c, const gemm_args& task_args, kernel_launch& l) {
  // The SWIGLU (task_args.up): gate and up rows interleaved, two kernel columns an output.
  const bool swiglu = task_args.up != 0;
  gemm_args a = task_args;
  if (swiglu) a.n_tile *= 2;
  const gemm_module* mod = nullptr;
  for (const auto& m : gemm_modules)
    if (m.dtype == a.w_dtype) mod = &m;
  const std::string off = env("OCTO_KERNELS_NO_GEMM");
  if (!mod || a.rows < 16 || !a.vec || (!off.empty() && off != "0")) return false;
  const device_facts& d = c.device;
  const std::string force = env("OCTO_GEMM_KERNEL");
  const std::string no_coop = env("OCTO_KERNELS_NO_COOPMAT");

  const bool can_old = a.K % 32 == 0 && d.max_workgroup_size_x >= 256 && d.max_shared_memory >= 20000;  // 17 KB
  const bool can_reg = a.K % 16 == 0 && d.max_workgroup_size_x >= 256 && d.max_shared_memory >= 17 * 1024;
  const bool coop_device = a.K % 32 == 0 && d.cooperative_matrix_nv && d.subgroup_size == 32 &&
                           a.w_dtype != ir::dtype::f32 && (no_coop.empty() || no_coop == "0");
  // The K split (pick_coop) for gemm_coopf_f16's epilogues without the norm in the staging (its partial
  // sums take the field of the norm's weight, shaders/gemm_coop.comp): where the GEMM reads f16 weight
  // rows (F16 weights, or a quantized weight's f16 rows: plan_weights_f16).
  const bool f16_rows = a.w_dtype == ir::dtype::f16 || dequant_wanted(a);
  const std::uint32_t max_ksplit = a.norm_w == 0 && f16_rows ? 8 : 1;
  const std::optional<coop_choice> coop_cfg =
      coop_device ? pick_coop(a.rows, a.n_tile, a.K, false, d, false, max_ksplit) : std::nullopt;
  // The split kernel (f16 high + low parts) runs only on request.
  const std::optional<coop_choice> split_cfg =
      coop_device && force == "coop" ? pick_coop(a.rows, a.n_tile, a.K, true, d) : std::nullopt;

  // gemm_reg pays off once the grid is well over one wave of a large GPU (see the header).
  const std::uint64_t big_groups = std::uint64_t{(a.rows + 127) / 128} * ((a.n_tile + 63) / 64);
  // (0.5B's gate/up, K = 896, stayed 10% faster on gemm.)
  const bool reg_first = a.rows >= 256 && a.K >= 1024 && big_groups >= 200;

  std::string_view kind;
  if (force == "old" && can_old && !swiglu && !a.rope_kv) kind = "old";
  else if (force == "reg" && can_reg) kind = "reg";
  else if (force == "coopf" && coop_cfg) kind = "coopf";
  else if (force == "coop" && split_cfg) kind = "coop";
  // The default where the VM's precision is `fast` and the device has tensor cores (docs/precision.md).
  else if (force.empty() && c.fast_precision && coop_cfg) kind = "coopf";
  else if (can_reg && (reg_first || !can_old || swiglu || a.rope_kv)) kind = "reg";  // gemm.comp has neither epilogue
  else if (can_old && !swiglu && !a.rope_kv) kind = "old";
  else return false;

  tile t{64, 64};
  // gemm_reg: 128x128 is left out (it spills its 64 sums per invocation there, 10x slower on the
  // H200). gemm_coop has its own list (coop_configs).
  // Wide outputs (gate/up: N >= 4K) ran 10-20% faster as 64x128, the rest as 128x64.
  static constexpr std::array<tile, 3> wide{{{64, 128}, {128, 64}, {64, 64}}};
  static constexpr std::array<tile, 3> other{{{128, 64}, {64, 128}, {64, 64}}};
  const std::span<const tile> tiles = std::uint64_t{a.n_tile} >= 4ull * a.K ? std::span<const tile>(wide)
                                                                            : std::span<const tile>(other);
  // The fused epilogue, gemm*.comp's spec constant 5 (the others' ids 0-4 left at their defaults): 1 the
  // norm, 2 the residual, 3 SiLU.mul, 4 the norm and SiLU.mul, 5 RoPE / the cache write
  // (common/gemm_rope_kv.glsl), 6 the norm and those.
  const std::uint32_t epi = swiglu ? (a.norm_w ? 4 : 3) : a.rope_kv ? (a.norm_w ? 6 : 5) : a.norm_w ? 1 : (a.residual ? 2 : 0);
  const bool norm_epi = epi == 1 || epi == 4 || epi == 6;
  if (kind == "old") {
    l.shader = mod->old;
    l.spec_constants = {256, 0, 0, 0, 0, epi};
  } else if (kind == "reg") {
    l.shader = mod->reg;
    // xs and ws: 16 k rows of (BM + 4) and (BN + 4) floats (the norm's sums reuse xs).
    t = pick_tile(tiles, a.rows, a.n_tile, d.max_shared_memory,
                  [](tile x) { return 16 * 4 * (x.bm + x.bn + 8); });
    l.spec_constants = {256, t.bm / 16, t.bn / 16, 0, 0, epi};
  } else {
    const bool split = kind == "coop";
    l.shader = split ? mod->coop : mod->coopf;
    const coop_choice ch = split ? *split_cfg : *coop_cfg;
    t = {ch.cfg.bm, ch.cfg.bn};
    l.spec_constants = {ch.cfg.wg, ch.cfg.fm, ch.cfg.fn, ch.bk, ch.cfg.wm, epi};
  }
  const std::uint64_t col_groups = (a.n_tile + t.bn - 1) / t.bn;
  const std::uint64_t row_groups = (a.rows + t.bm - 1) / t.bm;
  require(c, row_groups <= 65535, "too many rows for one dispatch");
  l.groups = grid(col_groups, static_cast<std::uint32_t>(row_groups));
  l.push_constants = matmul_push(c, a);
  gemm_args now = a;  // as the launch reads them
  if (!mod->to_f16.empty() && kind == "coopf") plan_weights_f16(c, now, *mod, "gemm_coopf_f16", l);
  // Tests: the same two passes into the SIMT kernel on any device (weights rounded to f16 then, whatever
  // the precision), so a device without tensor cores (lavapipe in CI) runs weights_f16 and the recorder's
  // shared scratch.
  else if (!mod->to_f16.empty() && kind == "reg" && env("OCTO_GEMM_DEQUANT") == "1")
    plan_weights_f16(c, now, *mod, "gemm_reg_f16", l);
  // With x as f16 tiles, gemm_coop's three-stage K loop (spec constant 7; the registers x's f32 tiles
  // took now hold a second step's loads) and the K step it wants. OCTO_GEMM_DEEP=0 keeps two stages.
  // The norm ahead: as f16 rows where the kernel takes x16 (coopf; gemm_reg only with OCTO_GEMM_X16=1,
  // the tests' way of running the X16 mode on lavapipe), else as f32 rows.
  const std::string x16_knob = env("OCTO_GEMM_X16");
  const bool x16_kernel = x16_knob != "0" && (kind == "coopf" || (kind == "reg" && x16_knob == "1"));
  bool x16 = false;
  const std::uint32_t ksplit = kind == "coopf" ? coop_cfg->ksplit : 1;
  if (norm_epi) x16 = plan_norm_x(c, now, x16_kernel, l) && x16_kernel;
  else if (kind == "coopf" || kind == "reg") x16 = plan_x_f16(c, now, kind == "reg", l);
  // The epilogue from each invocation's own elements (spec constant 8) on request (OCTO_GEMM_EPI_REGS=1),
  // where the VM's probe found NVIDIA's fragment layout; not with the RoPE / KV epilogue. Off by default
  // (every fragment staged through shared memory): on the H100 it passed conformance and lost 2-4% of
  // pp512 (benchmarks/results/2026-12-07-h100-attn-regs, call4; docs/vulkan.md).
  const bool epi_regs = (kind == "coopf" || kind == "coop") && c.device.coop_mma_layout && !a.rope_kv &&
                        number_knob(c, "OCTO_GEMM_EPI_REGS", {0, 1}, 0) == 1;
  if (x16 && kind == "coopf" && env("OCTO_GEMM_DEEP") != "0") {
    // The same tile; only the K step may change. (Tiles of their own for it, 64 x 64 in 4 subgroups of
    // 32 x 32 below K = 1024, ran the 0.5B's GEMMs 8% faster alone but its prefill 4% slower:
    // benchmarks/results/2026-11-30-h200-x16, calls 6 and 7.)
    const std::optional<coop_choice> deep = pick_coop(a.rows, a.n_tile, a.K, false, d, true, max_ksplit);
    if (deep && deep->cfg.bm == t.bm && deep->cfg.bn == t.bn && deep->ksplit == ksplit) {
      l.spec_constants[3] = deep->bk;
      l.spec_constants.resize(8, 0);
      l.spec_constants[7] = 1;
    }
  }
  if (epi_regs && ksplit == 1) {
    l.spec_constants.resize(9, 0);
    l.spec_constants[8] = 1;
  }
  if (kind == "coopf") plan_ksplit(c, now, t, row_groups, col_groups, ksplit, l);
  return true;
}

}  // namespace octo::vm::vulkan::kernels

namespace octo::vm::vulkan {

kernel_launch plan_weight_copy(const weight_copy_request& r, std::uint64_t dst) {
  return kernels::dequant_rows(r.fill_shader, r.weight, dst, r.rows, 0, r.K, r.row_bytes);
}

}  // namespace octo::vm::vulkan
