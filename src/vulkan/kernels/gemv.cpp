// GEMV_TILE / GEMM_TILE and the fused GEMV ops (RMSNORM_GEMV, GEMV_ADD, RMSNORM_SWIGLU,
// RMSNORM_GEMV_ROPE, RMSNORM_GEMV_KV, the head-norm ones: gemv.comp's FUSE modes; RMSNORM_GEMV_QKV:
// plan_qkv, its GEMV_QKV form) planner: picks the weight-dtype module (subgroup or shared-memory reduction),
// the rows per workgroup, and the loop: the per-format chunk loop for block-quantized weights, 16-byte
// unit loads for F32/F16/BF16, or one element at a time where alignment rules those out.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "vulkan/kernels/planner_support.hpp"

namespace octo::vm::vulkan::kernels {
namespace {

struct gemv_module {
  ir::dtype dtype;
  std::string_view sg;
  std::string_view nosg;
  std::string_view qkv;  // sg's RMSNORM_GEMV_QKV form (gemv.comp GEMV_QKV)
};
constexpr gemv_module gemv_modules[] = {
    {ir::dtype::f32, "gemv_f32", "gemv_f32_nosg", "gemv_f32_qkv"},
    {ir::dtype::f16, "gemv_f16", "gemv_f16_nosg", "gemv_f16_qkv"},
    {ir::dtype::bf16, "gemv_bf16", "gemv_bf16_nosg", "gemv_bf16_qkv"},
    {ir::dtype::q8_0, "gemv_q8_0", "gemv_q8_0_nosg", "gemv_q8_0_qkv"},
    {ir::dtype::q4_0, "gemv_q4_0", "gemv_q4_0_nosg", "gemv_q4_0_qkv"},
    {ir::dtype::q4_1, "gemv_q4_1", "gemv_q4_1_nosg", "gemv_q4_1_qkv"},
    {ir::dtype::q5_0, "gemv_q5_0", "gemv_q5_0_nosg", "gemv_q5_0_qkv"},
    {ir::dtype::q5_1, "gemv_q5_1", "gemv_q5_1_nosg", "gemv_q5_1_qkv"},
    {ir::dtype::q2_k, "gemv_q2_k", "gemv_q2_k_nosg", "gemv_q2_k_qkv"},
    {ir::dtype::q3_k, "gemv_q3_k", "gemv_q3_k_nosg", "gemv_q3_k_qkv"},
    {ir::dtype::q4_k, "gemv_q4_k", "gemv_q4_k_nosg", "gemv_q4_k_qkv"},
    {ir::dtype::q5_k, "gemv_q5_k", "gemv_q5_k_nosg", "gemv_q5_k_qkv"},
    {ir::dtype::q6_k, "gemv_q6_k", "gemv_q6_k_nosg", "gemv_q6_k_qkv"},
    {ir::dtype::iq4_nl, "gemv_iq4_nl", "gemv_iq4_nl_nosg", "gemv_iq4_nl_qkv"},
    {ir::dtype::iq4_xs, "gemv_iq4_xs", "gemv_iq4_xs_nosg", "gemv_iq4_xs_qkv"},
};

// The block formats whose GEMV module has a per-format chunk loop (GEMV_BLOCK, shaders/variants.cmake):
// how many invocations share one block, and whether the loop reads 16-byte aligned uvec4s of W.
struct chunk_format {
  ir::dtype dtype;
  std::uint32_t chunks_per_block;
  bool w_aligned16;
};
constexpr chunk_format chunk_formats[] = {
    {ir::dtype::q8_0, 2, false}, {ir::dtype::q4_0, 1, false}, {ir::dtype::q4_1, 1, false}, {ir::dtype::q5_0, 1, false},
    {ir::dtype::q5_1, 1, false}, {ir::dtype::q2_k, 4, false}, {ir::dtype::q3_k, 4, false}, {ir::dtype::q4_k, 8, true},
    {ir::dtype::q5_k, 8, true},  {ir::dtype::q6_k, 4, false}, {ir::dtype::iq4_nl, 1, false}, {ir::dtype::iq4_xs, 8, false},
};

/// The formats with an integer-dot chunk loop (shaders/common/gemv_idot.glsl; the gemv_idot_<dt> modules,
/// subgroup reduction only).
struct idot_module {
  ir::dtype dtype;
  std::string_view name;
  std::string_view qkv;  // its RMSNORM_GEMV_QKV form
};
constexpr idot_module idot_modules[] = {
    {ir::dtype::q8_0, "gemv_idot_q8_0", "gemv_idot_q8_0_qkv"}, {ir::dtype::q4_0, "gemv_idot_q4_0", "gemv_idot_q4_0_qkv"},
    {ir::dtype::q4_1, "gemv_idot_q4_1", "gemv_idot_q4_1_qkv"}, {ir::dtype::q5_0, "gemv_idot_q5_0", "gemv_idot_q5_0_qkv"},
    {ir::dtype::q5_1, "gemv_idot_q5_1", "gemv_idot_q5_1_qkv"}, {ir::dtype::q2_k, "gemv_idot_q2_k", "gemv_idot_q2_k_qkv"},
    {ir::dtype::q3_k, "gemv_idot_q3_k", "gemv_idot_q3_k_qkv"}, {ir::dtype::q4_k, "gemv_idot_q4_k", "gemv_idot_q4_k_qkv"},
    {ir::dtype::q5_k, "gemv_idot_q5_k", "gemv_idot_q5_k_qkv"}, {ir::dtype::q6_k, "gemv_idot_q6_k", "gemv_idot_q6_k_qkv"},
};

/// OCTO_GEMV_IDOT: unset, the integer-dot GEMVs run at the `fast` precision where the device accelerates
/// packed int8 dot products; 1, wherever it has them at all (how lavapipe's tests run them); 0, never.
enum class idot_mode { accelerated, any, off };
idot_mode idot_setting(const task_context& c) {
  const char* v = std::getenv("OCTO_GEMV_IDOT");
  if (!v || !*v) return idot_mode::accelerated;
  if (std::string_view(v) == "1") return idot_mode::any;
  if (std::string_view(v) == "0") return idot_mode::off;
  fail(c, std::string("OCTO_GEMV_IDOT='") + v + "' is not 0 or 1");
}

/// Bytes a run of 16 elements of x takes rounded (shaders/common/x_runs.glsl): 16 of quants, 16 of step,
/// sum of quants and sum of squares (one load).
constexpr std::uint64_t kX8RunBytes = 32;

/// OCTO_GEMV_X8: where the integer-dot GEMVs' x is rounded once, ahead of them, by gemv_quantize_x (a
/// `before` launch into the shared scratch) instead of by every workgroup: 0 nowhere, 1 for the
/// RMSNORM-fused ones, 2 for every one; unset, the default rule (x8_wanted).
enum class x8_mode : std::uint32_t { off = 0, norm_fused = 1, all = 2, by_default = 3 };
x8_mode x8_setting(const task_context& c) {
  const char* v = std::getenv("OCTO_GEMV_X8");
  if (!v || !*v) return x8_mode::by_default;
  const std::string_view s(v);
  if (s == "0" || s == "1" || s == "2") return static_cast<x8_mode>(s[0] - '0');
  fail(c, std::string("OCTO_GEMV_X8='") + v + "' is not 0, 1 or 2");
}

/// The default: the RMSNORM-fused integer GEMVs over rows of at least 1536 take x rounded ahead. On the
/// H200 (benchmarks/results/2026-11-29-h200-xq, call7) decode ran 1.5B Q4_K_M 525 -> 635 tok/s, 7B
/// Q4_K_M 250 -> 344, 7B Q8_0 274 -> 308, but 0.5B Q8_0 (rows of 896) 963 -> 916: there the launch and
/// the barrier it adds cost more than the loads it saves. Every GEMV (level 2, the GEMV_ADDs too) lost
/// to level 1 on all four (781-603-342-270 tok/s).
/// Shorter rows too where the output has at least kX8MinCols columns (an LM head): its tens of thousands
/// of workgroups each read the whole x row, as many bytes as the weight rows they read at 4 rows of Q8_0.
/// The 0.5B's head (151936 x 896, Q8_0) took 71.6 us a step with its own rounding and 45.5 with x rounded
/// ahead (benchmarks/results/2026-11-29-h200-head, call1).
constexpr std::uint32_t kX8MinK = 1536;
bool x8_wanted(const task_context& c, bool norm, std::uint32_t K, std::uint32_t n_tile) {
  constexpr std::uint32_t kX8MinCols = 32768;
  switch (x8_setting(c)) {
    case x8_mode::off: return false;
    case x8_mode::norm_fused: return norm;
    case x8_mode::all: return true;
    case x8_mode::by_default: return norm && (K >= kX8MinK || n_tile >= kX8MinCols);
  }
  return false;
}

/// OCTO_GEMV_X8_WRITER: unset or 1, the integer GEMVs' x is rounded by the GEMV_ADD or RMSNORM_SWIGLU
/// that writes it wherever it can be (rounding_for_readers); 0, never (each takes the rule above).
bool writer_rounding_on(const task_context& c) { return on_unless_zero(c, "OCTO_GEMV_X8_WRITER"); }

/// The task that writes buffer `b`, or null where none or several do.
const ir::task* only_writer(const ir::program& p, std::int32_t b) {
  const ir::task* w = nullptr;
  for (const auto& t : p.tasks)
    for (const auto o : t.outputs)
      if (o == b) {
        if (w && w != &t) return nullptr;
        w = &t;
      }
  return w;
}

/// A tuning knob from the environment (OCTO_GEMV_NR: weight rows per workgroup, OCTO_GEMV_WG: its
/// width, for one x row): a power of two in [1, hi], or 0 when unset. Lets one device run compare
/// shapes without a rebuild.
std::uint32_t knob(const task_context& c, const char* name, std::uint32_t hi) {
  const char* v = std::getenv(name);
  if (!v || !*v) return 0;
  char* end = nullptr;
  const unsigned long n = std::strtoul(v, &end, 10);
  if (*end != '\0' || n == 0 || n > hi || (n & (n - 1)) != 0)
    fail(c, std::string(name) + "='" + v + "' is not a power of two in 1.." + std::to_string(hi));
  return static_cast<std::uint32_t>(n);
}

/// Where a GEMV-family task keeps its operands (docs/opcodes.md), and the fused prologue/epilogue
/// (gemv.comp's FUSE spec constant) it asks for.
struct gemv_operands {
  std::uint32_t fuse = 0;  // gemv.comp: 0 none, 1 norm, 2 add, 3 swiglu, 4 rope, 5 kv, 6 norm + rope, 7 norm + kv
  int w = 1, norm_w = -1, aux = -1, bias = -1, pos = -1;
  bool whole_rows = false;  // RoPE-fused: every column (pairs), no column tile
  int head_norm_w = -1;     // 6, 7: the per-head norm's weight
  int cache = -1;           // 5, 7: the KV cache written in place
  bool kv() const { return fuse == 5 || fuse == 7; }
};

/// The norm a GEMV_ADD rounds its output row with (gemv.comp ROUND): that of the RMSNORM-fused integer
/// GEMVs that read the row.
struct row_rounding {
  std::uint64_t nw = 0;
  std::uint32_t nw_dtype = 0;
};

gemv_operands operands_of(const task_context& c) {
  const auto n_in = static_cast<int>(c.task.inputs.size());
  gemv_operands o;
  switch (c.task.op) {
    case ir::opcode::rmsnorm_gemv: o = {1, 2, 1, -1, n_in > 3 ? 3 : -1, -1, false}; break;
    case ir::opcode::gemv_add: o = {2, 1, -1, 2, -1, -1, false}; break;
    case ir::opcode::rmsnorm_swiglu: o = {3, 2, 1, 3, -1, -1, false}; break;
    case ir::opcode::rmsnorm_gemv_rope: o = {4, 2, 1, 3, n_in > 4 ? 4 : -1, 3, true}; break;
    case ir::opcode::rmsnorm_gemv_kv: {
      const bool rotates = c.task.params.get(ir::param_key::n_rot, 0) > 0;
      const int pos = rotates ? 4 : -1, bias_at = rotates ? 5 : 4;
      o = {5, 2, 1, pos, n_in > bias_at ? bias_at : -1, pos, true};
      o.cache = 3;
      break;
    }
    case ir::opcode::rmsnorm_gemv_norm_rope: o = {6, 2, 1, 4, -1, 4, true, 3}; break;
    case ir::opcode::rmsnorm_gemv_norm_kv: o = {7, 2, 1, 5, -1, 5, true, 3, 4}; break;
    case ir::opcode::rmsnorm_gemv_qkv: o = {4, 2, 1, 5, n_in > 6 ? 6 : -1, 5, true}; break;  // plan_qkv: q's part
    case ir::opcode::rmsnorm_gemv_norm_qkv: o = {6, 2, 1, 5, -1, 5, true, 6}; break;           // (as above)
    default: o.bias = n_in > 2 ? 2 : -1; break;  // GEMV_TILE / GEMM_TILE [x, W(, b)]
  }
  return o;
}

}  // namespace

push_builder matmul_fields(const task_context& c, const gemm_args& a) {
  return push_builder{}
      .addr(a.x).addr(a.w).addr(a.bias).addr(a.y).addr(c.globals_address)
      .u32(a.K).u32(a.rows).u32(a.row0).u32(a.n_tile).u32(a.n_off).u32(a.ldy)
      .u32(a.w_row_bytes).u32(a.has_bias ? 1u : 0u).u32(a.bias_dtype);
}
push_builder matmul_block(const task_context& c, const gemm_args& a) {
  return matmul_fields(c, a)
      .addr(a.up != 0 ? a.up : a.rope_kv ? a.rope_pos : a.residual)
      .addr(a.norm_w).u32(a.norm_dtype).f32(a.eps)
      .u32(a.rope).u32(a.style).u32(a.kv_pos).f32(a.log2_theta);
}

push_block matmul_push(const task_context& c, const gemm_args& a) { return matmul_block(c, a).take(); }

namespace {

bool norm_fused(ir::opcode op) {
  return op == ir::opcode::rmsnorm_gemv || op == ir::opcode::rmsnorm_swiglu || op == ir::opcode::rmsnorm_gemv_rope ||
         op == ir::opcode::rmsnorm_gemv_kv || op == ir::opcode::rmsnorm_gemv_norm_rope ||
         op == ir::opcode::rmsnorm_gemv_norm_kv || op == ir::opcode::rmsnorm_gemv_qkv ||
         op == ir::opcode::rmsnorm_gemv_norm_qkv;
}

/// Whether the integer GEMVs reading the row that `writer` writes take its runs: those of a GEMV_ADD
/// (rounded times the readers' norm weight) go to the RMSNORM-fused readers, those of an RMSNORM_SWIGLU
/// (rounded as they are) to the plain ones (the down projection).
bool takes_runs_of(ir::opcode writer, ir::opcode reader) {
  if (writer == ir::opcode::gemv_add) return norm_fused(reader);
  if (writer == ir::opcode::rmsnorm_swiglu) return !norm_fused(reader);
  return false;
}

/// OCTO_GEMV_SWIGLU_ROUND: unset, an RMSNORM_SWIGLU rounds its row for the down projection where it can
/// (rounding_for_readers) and its rows have at most kSwigluRoundMaxChunks chunks (plan_gemv); 1, where it
/// can at any row length; 0, never (the down projection rounds x in every workgroup).
enum class swiglu_round { by_length, always, never };
swiglu_round swiglu_rounding(const task_context& c) {
  const std::uint32_t v = number_knob(c, "OCTO_GEMV_SWIGLU_ROUND", {0, 1}, 2);
  return v == 0 ? swiglu_round::never : v == 1 ? swiglu_round::always : swiglu_round::by_length;
}

/// x rounded by its writer: where the GEMV_ADD or RMSNORM_SWIGLU `c` writes one whole row y, the integer
/// GEMVs that read y as x and take its runs (takes_runs_of), if any: the norm the runs are rounded with
/// (a GEMV_ADD's readers must share one; a SWIGLU's runs take none, nw = 0). They then read the runs
/// this task's kernel leaves in its scratch (rounded_by_writer) instead of rounding x in every workgroup
/// or in a launch of their own ahead of them (gemv_quantize_x), and lose that launch and the barrier
/// before it. Each reader is planned here as it will be (its own planner, which does not see this task's
/// scratch yet), so the writer rounds exactly for the readers that will take the runs. A reader that
/// would not take them (another kind, or not on the integer loops) rounds x itself: the same bits.
/// By default only rows of at least kX8MinK, where the readers would take the launch ahead: a workgroup
/// owns 16 columns, so a row of 896 (the 0.5B's) leaves 56 workgroups for the H200's 132 SMs, and
/// its down projection (896 x 4864) then set 0.5B Q8_0 decode at 1021 tok/s against 1068 with the
/// readers rounding x themselves, while 1.5B Q8_0 ran 670 against 642 with the launch ahead, 1.5B Q4_K_M
/// 662 against 659, 7B Q4_K_M 372 against 362 (benchmarks/results/2026-12-02-h200-writer, call1).
/// OCTO_GEMV_X8=1 or 2 rounds in the writer at any width.
std::optional<row_rounding> rounding_for_readers(const task_context& c, const tensor_ref& y) {
  if (c.task_scratch_address.empty() || !writer_rounding_on(c)) return std::nullopt;
  if (c.task.op == ir::opcode::rmsnorm_swiglu && swiglu_rounding(c) == swiglu_round::never) return std::nullopt;
  const x8_mode m = x8_setting(c);
  if (m == x8_mode::off || (m == x8_mode::by_default && y.numel() < kX8MinK)) return std::nullopt;
  const std::int32_t yid = c.task.outputs[0];
  if (only_writer(c.program, yid) != &c.task) return std::nullopt;
  std::optional<row_rounding> r;
  for (const auto& t : c.program.tasks) {
    if (t.inputs.empty() || t.inputs[0] != yid || !takes_runs_of(c.task.op, t.op)) continue;
    const task_context rc{c.program, t, c.buffer_address, c.globals_address, c.device, c.fast_precision};
    kernel_launch rl;
    try {
      rl = plan_gemv(rc);
    } catch (const octo::error&) {
      continue;  // its own planning reports it
    }
    if (!rl.shader.starts_with("gemv_idot_")) continue;
    row_rounding mine;
    if (norm_fused(t.op)) {
      const auto nw = tensor(rc, t.inputs[static_cast<std::size_t>(operands_of(rc).norm_w)]);
      if (nw.numel() != y.numel()) return std::nullopt;
      mine = {nw.address, static_cast<std::uint32_t>(nw.dtype())};
    }
    if (r && (r->nw != mine.nw || r->nw_dtype != mine.nw_dtype)) return std::nullopt;
    r = mine;
  }
  return r;
}

/// Where the GEMV_ADD or RMSNORM_SWIGLU that writes this task's x left it rounded for it (its scratch;
/// takes_runs_of), or 0 where it did not (or the VM does not show it to this task:
/// task_scratch_address). Those tasks ask for scratch only to round their row (rounding_for_readers).
std::uint64_t rounded_by_writer(const task_context& c) {
  if (c.task_scratch_address.empty() || !writer_rounding_on(c) || x8_setting(c) == x8_mode::off) return 0;
  const ir::task* w = only_writer(c.program, c.task.inputs[0]);
  if (!w || !takes_runs_of(w->op, c.task.op) || static_cast<std::size_t>(w->id) >= c.task_scratch_address.size())
    return 0;
  return c.task_scratch_address[static_cast<std::size_t>(w->id)];
}

}  // namespace

/// Whether RMSNORM_GEMV_ROPE / RMSNORM_GEMV_KV may take the GEMM kernels' RoPE / KV epilogue: heads of
/// a multiple of 4 dimensions, n_rot too (a NeoX lane's two pairs (i, i + n_rot / 2) and (i + 1, ..)
/// must lie in the rotated half, and i even: 16-bit outputs written a word at a time).
/// OCTO_GEMM_ROPE_KV=0 keeps the GEMV kernel (row blocks) for them, for measuring one against the other.
static bool gemm_rope_kv_fits(const task_context& c, std::uint32_t rope) {
  const std::uint32_t hd = rope & 0xffffu, n_rot = rope >> 16;
  return number_knob(c, "OCTO_GEMM_ROPE_KV", {0, 1}, 1) == 1 && hd % 4 == 0 && n_rot % 4 == 0;
}

namespace {

/// What a GEMV launch's push block holds (plan_gemv_shaped's push), for plan_qkv to gather three into one.
struct gemv_fields {
  bool filled = false;  // a gemv.comp launch (not a tiled GEMM's)
  std::uint64_t x = 0, w = 0, y = 0, nw = 0, aux = 0;
  std::uint32_t K = 0, n_tile = 0, w_row_bytes = 0, rope = 0, style = 0, kv_pos = 0, nw_dtype = 0;
  float eps = 0.0f, log2_theta = 0.0f;
};
/// A shape plan_qkv imposes (k and v at q's rows and width a workgroup); 0: the planner's own.
struct gemv_shape {
  std::uint32_t nr = 0, wg = 0;
};

kernel_launch plan_gemv_shaped(const task_context& c, gemv_shape force, gemv_fields* out);
kernel_launch plan_qkv(const task_context& c);

}  // namespace

kernel_launch plan_gemv(const task_context& c) {
  kernel_launch l = c.task.op == ir::opcode::rmsnorm_gemv_qkv || c.task.op == ir::opcode::rmsnorm_gemv_norm_qkv
                        ? plan_qkv(c)
                        : plan_gemv_shaped(c, {}, nullptr);
  add_rope_ramp(c, l);
  return l;
}

namespace {

kernel_launch plan_gemv_shaped(const task_context& c, gemv_shape force, gemv_fields* out) {
  const bool gemm = c.task.op == ir::opcode::gemm_tile;
  const gemv_operands ops = operands_of(c);
  const bool fused = ops.fuse != 0;
  auto x = input(c, 0);
  auto w = input(c, static_cast<std::size_t>(ops.w));
  auto y = output(c);
  require_dtype(c, x, {ir::dtype::f32}, "input x");
  if (ops.kv()) require_dtype(c, y, {ir::dtype::f32, ir::dtype::f16, ir::dtype::bf16}, "KV cache");
  else require_dtype(c, y, {ir::dtype::f32}, "output");
  const gemv_module* mod = nullptr;
  for (const auto& m : gemv_modules)
    if (m.dtype == w.dtype()) mod = &m;
  if (!mod) fail(c, "weight dtype " + dtype_text(w.dtype()) + " has no GEMV kernel");

  const std::uint32_t K = param_u32(c, ir::param_key::K, 1);
  const auto blk = ir::layout(w.dtype()).block_elems;
  require(c, K % static_cast<std::uint32_t>(blk) == 0,
          "K = " + std::to_string(K) + " is not a multiple of the " + dtype_text(w.dtype()) + " block (" +
              std::to_string(blk) + ")");
  require(c, w.numel() % K == 0, "weight numel is not a multiple of K");
  const std::int64_t n_w = w.numel() / K;
  const std::uint32_t n_tile = ops.whole_rows ? u32(c, n_w, "weight rows") : param_u32(c, ir::param_key::N_tile, 1);
  const std::uint32_t n_off = ops.whole_rows ? 0 : param_u32(c, ir::param_key::n_off);
  require(c, std::int64_t{n_off} + n_tile <= n_w,
          "n_off + N_tile = " + std::to_string(std::int64_t{n_off} + n_tile) + " exceeds the weight's " +
              std::to_string(n_w) + " rows");
  require(c, x.numel() % K == 0, "input numel is not a multiple of K");
  const std::int64_t R = x.numel() / K;
  // A KV cache's row is the projection's width; its rows are positions, not x's rows.
  const std::int64_t ldy = ops.kv() ? n_w : (R > 0 ? y.numel() / R : 0);
  require(c, R > 0 && (ops.kv() ? y.numel() % n_w == 0 : y.numel() % R == 0),
          "output numel is not a multiple of the input's rows");
  require(c, std::int64_t{n_off} + n_tile <= ldy, "n_off + N_tile exceeds the output's columns");

  // The fused operands (docs/opcodes.md "Fused ops").
  std::uint64_t nw_addr = 0, aux_addr = 0;
  float eps = 0.0f, log2_theta = 0.0f;
  std::uint32_t rope = 0, style = 0, kv_pos = 0, nw_dtype = 0;
  if (ops.norm_w >= 0) {
    auto nw = input(c, static_cast<std::size_t>(ops.norm_w));
    require_dtype(c, nw, {ir::dtype::f32, ir::dtype::f16, ir::dtype::bf16}, "norm weight");
    require(c, param_i(c, ir::param_key::hidden) == K && nw.numel() == K, "the norm's hidden must equal K (whole rows)");
    require(c, nw.dtype() != ir::dtype::f32 || nw.address % 16 == 0, "norm weight address is not 16-byte aligned");
    nw_addr = nw.address;
    nw_dtype = static_cast<std::uint32_t>(nw.dtype());
    eps = static_cast<float>(c.task.params.get_real(ir::param_key::eps, 0.0));
  }
  if (ops.fuse == 2) {
    auto r = input(c, static_cast<std::size_t>(ops.aux));
    require_dtype(c, r, {ir::dtype::f32}, "residual");
    require(c, r.numel() == y.numel(), "residual numel differs from the output's");
    aux_addr = r.address;
  }
  if (ops.fuse == 3) {
    auto up = input(c, static_cast<std::size_t>(ops.aux));
    require(c, up.dtype() == w.dtype() && up.numel() == w.numel(), "the up weight differs from the gate weight in dtype or shape");
    require(c, up.address % 4 == 0 && (up.address % 16 == 0) == (w.address % 16 == 0),
            "the up weight's alignment differs from the gate weight's");
    aux_addr = up.address;
  }
  if (ops.whole_rows) {
    const std::uint32_t hd = param_u32(c, ir::param_key::head_dim, 2);
    const std::uint32_t n_rot = param_u32(c, ir::param_key::n_rot);
    require(c, hd % 2 == 0 && hd < 65536 && n_rot % 2 == 0 && n_rot <= hd && n_w % hd == 0,
            "head_dim must be even and divide the projection; n_rot even and at most head_dim");
    require(c, ops.fuse == 5 || n_rot > 0, "needs n_rot > 0");
    const std::uint32_t rs = opt_u32(c, ir::param_key::rope_style, 0);
    require(c, rs <= 1, "rope_style must be 0 (NeoX) or 1 (interleaved)");
    if (n_rot > 0) {
      const double theta = c.task.params.get_real(ir::param_key::theta, 0.0);
      require(c, theta > 0.0, "theta must be positive");
      log2_theta = static_cast<float>(std::log2(theta));
      auto pos = input(c, static_cast<std::size_t>(ops.pos));
      require_dtype(c, pos, {ir::dtype::i32}, "positions");
      require(c, pos.numel() == R, "positions must have one entry per row of x");
      aux_addr = pos.address;
    }
    rope = hd | (n_rot << 16);
    style = rs | (static_cast<std::uint32_t>(y.dtype()) << 8);
    if (ops.kv()) {
      require(c, c.task.inputs[static_cast<std::size_t>(ops.cache)] == c.task.outputs[0],
              "must write the cache buffer it reads (input " + std::to_string(ops.cache) + ")");
      const std::int64_t slots = y.numel() / n_w;
      kv_pos = param_u32(c, ir::param_key::pos);
      require(c, kv_pos + R <= slots,
              "pos + T = " + std::to_string(kv_pos + R) + " exceeds the cache's " + std::to_string(slots) + " slots");
      require(c, y.dtype() == ir::dtype::f32 || y.address % 4 == 0, "cache address is not 4-byte aligned");
    }
  }

  const bool quant = ir::is_block_quantized(w.dtype());
  std::uint32_t rows = u32(c, R, "rows");
  std::uint32_t row0 = 0;
  if (gemm) {
    rows = param_u32(c, ir::param_key::M_tile, 1);
    row0 = opt_u32(c, ir::param_key::m_off, 0);
    require(c, std::int64_t{row0} + rows <= R, "m_off + M_tile exceeds the input's rows");
  }

  std::uint64_t bias_addr = 0;
  std::uint32_t bias_dtype = 0;
  const bool has_bias = ops.bias >= 0;
  if (has_bias) {
    auto b = input(c, static_cast<std::size_t>(ops.bias));
    require_dtype(c, b, {ir::dtype::f32, ir::dtype::f16, ir::dtype::bf16}, "bias");
    require(c, b.numel() >= std::int64_t{n_off} + n_tile, "bias is shorter than n_off + N_tile");
    bias_addr = b.address;
    bias_dtype = static_cast<std::uint32_t>(b.dtype());
  }
  // The per-head norm's weight rides in the bias fields (these ops have no bias; gemv.comp HEAD_NORM).
  if (ops.head_norm_w >= 0) {
    auto hw = input(c, static_cast<std::size_t>(ops.head_norm_w));
    require_dtype(c, hw, {ir::dtype::f32, ir::dtype::f16, ir::dtype::bf16}, "head norm weight");
    require(c, hw.numel() == param_i(c, ir::param_key::head_dim), "the head norm weight must have head_dim elements");
    bias_addr = hw.address;
    bias_dtype = static_cast<std::uint32_t>(hw.dtype());
  }

  require(c, w.address % 4 == 0, "weight address is not 4-byte aligned");
  const bool vec = K % 8 == 0 && x.address % 16 == 0 && (quant || w.address % 16 == 0) &&
                   (ops.fuse != 3 || quant || aux_addr % 16 == 0);
  // Every workgroup reads the whole x row(s) (from cache) once, so more output columns per workgroup
  // keep x's traffic below the weight's when the weight is small per row (quantized decode).
  // One x row (decode) over 16-bit weights takes 2 rows a workgroup, as F32 does: twice the workgroups
  // of 4, and each row's 16-byte units still share x's loads. On the H200, decode at 2 against 4: 0.5B
  // F16 894 against 816 tok/s, 1.5B F16 543 against 490, 7B F16 204 against 197
  // (benchmarks/results/2026-11-29-h200-idot, calls 4 and 5; BF16 runs the same loop, unmeasured).
  const std::uint32_t rb = rows == 1 ? 1 : (rows <= 4 ? 4 : 8);
  std::uint32_t nr = rb == 8 ? 2 : (quant ? 8 : (w.dtype() == ir::dtype::f32 || rb == 1 ? 2 : 4));
  const std::uint32_t wg = workgroup_size(c.device, 64);
  const std::uint32_t w_row_bytes = u32(c, ir::nbytes(w.dtype(), K), "weight row bytes");

  kernel_launch l;
  // Many rows: the tiled GEMM kernels (src/vulkan/kernels/gemm.cpp), GEMV_ADD with its residual in their
  // epilogue, RMSNORM_GEMV and RMSNORM_SWIGLU with the norm ahead of them or in their x staging (the
  // SWIGLU's SiLU.mul in their epilogue), RMSNORM_GEMV_ROPE and RMSNORM_GEMV_KV with RoPE and the cache
  // write there too; the head-norm ops have no GEMM form.
  gemm_args ga{w.dtype(), x.address, w.address, bias_addr, y.address, K, rows, row0, n_tile, n_off,
               u32(c, ldy, "output columns"), w_row_bytes, bias_dtype, u32(c, n_w, "weight rows"), has_bias, vec};
  if (ops.fuse == 2) ga.residual = aux_addr;
  if (ops.fuse == 3) ga.up = aux_addr;
  // RoPE and the cache write (q, k, v of a prefill) in the GEMM kernels' epilogue: whole heads of 4k
  // dimensions (a lane's 4 consecutive columns are two pairs, shaders/common/gemm_rope_kv.glsl).
  if ((ops.fuse == 4 || ops.fuse == 5) && gemm_rope_kv_fits(c, rope)) {
    ga.rope_kv = true;
    ga.rope_pos = aux_addr;
    ga.rope = rope;
    ga.style = style | (ops.kv() ? 1u << 16 : 0u);
    ga.kv_pos = kv_pos;
    ga.log2_theta = log2_theta;
  }
  if (ops.fuse == 1 || ops.fuse == 3 || ga.rope_kv) {
    ga.norm_w = nw_addr;
    ga.norm_dtype = nw_dtype;
    ga.eps = eps;
  }
  if ((!fused || ops.fuse <= 3 || ga.rope_kv) && plan_gemm_tiled(c, ga, l)) return l;
  l.shader = use_subgroups(c.device) ? mod->sg : mod->nosg;
  // On a CPU device every GEMV takes 16 rows a workgroup of 32 (what OCTO_GEMV_NR / OCTO_GEMV_WG would
  // force): lavapipe runs a dispatch's workgroups over a few threads, each workgroup as one loop over its
  // invocations, so the GPU plans' narrow grids of wide workgroups leave its threads waiting. Measured
  // there (2 cores): tiny-qwen's decode step 13.8 ms against 88-107 with the GPU plans, a 50-sum decode
  // test 12.4 against 38.9 s (docs/measurements.md, the thirty-seventh session). OCTO_GEMV_PLAN=gpu
  // keeps the GPU plans on a CPU device (the conformance tests, tests/gpu/CMakeLists.txt), =cpu takes
  // this one anywhere.
  const auto plan_env = std::getenv("OCTO_GEMV_PLAN");
  const std::string_view plan_knob = plan_env ? plan_env : "";
  if (!plan_knob.empty() && plan_knob != "gpu" && plan_knob != "cpu")
    fail(c, "OCTO_GEMV_PLAN='" + std::string(plan_knob) + "' is not gpu or cpu");
  const bool cpu_plan = plan_knob == "cpu" || (c.device.cpu && plan_knob != "gpu");
  const std::uint32_t nr_set = force.nr ? force.nr : knob(c, "OCTO_GEMV_NR", 16);
  const std::uint32_t wg_set = force.wg ? force.wg : knob(c, "OCTO_GEMV_WG", 1024);
  const std::uint32_t nr_knob = nr_set ? nr_set : (cpu_plan ? 16 : 0), wg_knob = wg_set ? wg_set : (cpu_plan ? 32 : 0);
  // The paired modes (SWIGLU gate|up, RoPE halves) need an even number of weight rows per workgroup.
  // The head-norm ops' NR / 2 pairs must lie in one head: halved until they divide hd / 2 (2 rows, one
  // pair, always do), so any even head_dim plans.
  const std::uint32_t half_hd = ops.head_norm_w >= 0 ? param_u32(c, ir::param_key::head_dim, 2) / 2 : 0;
  const auto even = [&](std::uint32_t n) {
    if (!fused || ops.fuse < 3) return n;
    n = std::max<std::uint32_t>(2, n);
    while (half_hd > 0 && n > 2 && half_hd % (n / 2) != 0) n /= 2;
    return n;
  };
  // Output columns a workgroup covers: NR, or NR/2 pairs (SWIGLU columns, RoPE pairs).
  const auto groups_for = [&](std::uint32_t n) -> std::uint64_t {
    const std::uint32_t per = ops.fuse >= 3 ? n / 2 : n;
    const std::uint64_t cols = ops.fuse >= 4 ? n_tile / 2 : n_tile;
    return (cols + per - 1) / per;
  };
  // The block every GEMV / GEMM module shares, then gemv.comp's fused operands.
  std::uint64_t runs_out = 0;  // ROUND: where a GEMV_ADD leaves its row rounded for the GEMVs that read it
  const auto push = [&] {
    if (out) *out = {true, ga.x, ga.w, ga.y, nw_addr, aux_addr, K, n_tile, w_row_bytes, rope, style, kv_pos, nw_dtype, eps, log2_theta};
    return matmul_fields(c, ga)
        .addr(nw_addr).addr(aux_addr)
        .f32(eps).f32(log2_theta).u32(rope).u32(style).u32(kv_pos).u32(nw_dtype)
        .addr(runs_out)
        .take();
  };
  // The head-norm ops (gemv.comp HEAD_NORM): a workgroup's NR / 2 pairs must lie in one head, and the
  // last workgroup of a head finishes its hd / 2 pairs at up to 4 an invocation. The scratch: the (row,
  // head) arrival counters (zeroed once, reset by the kernel), then the rows' sums.
  const auto head_norm_scratch = [&](std::uint32_t nr_final, std::uint32_t wg_final) {
    if (ops.head_norm_w < 0) return;
    const std::uint32_t hd = param_u32(c, ir::param_key::head_dim, 2);
    require(c, (hd / 2) % (nr_final / 2) == 0 && hd / 2 <= 4 * wg_final,
            "head_dim " + std::to_string(hd) + " does not fit the kernel's pairs (" + std::to_string(nr_final / 2) +
                " a workgroup of " + std::to_string(wg_final) + ")");
    const std::uint64_t heads = n_w / hd, counters = (std::uint64_t(R) * heads + 3) / 4 * 4;
    l.scratch_bytes = 4 * (counters + std::uint64_t(R) * n_tile);
    runs_out = c.scratch_address;
  };
  bool unit_loads = vec;
  for (const auto& f : chunk_formats) {
    if (f.dtype != w.dtype()) continue;
    // In these modules VEC selects the chunk loop; where its alignment does not hold, the
    // one-element-at-a-time path runs instead.
    unit_loads = false;
    if (x.address % 16 != 0 || (f.w_aligned16 && (w.address % 16 != 0 || w_row_bytes % 16 != 0))) break;
    if (ops.fuse == 3 && f.w_aligned16 && aux_addr % 16 != 0) break;
    // One invocation per chunk of a block (coalesced 16-byte runs); NR weight rows per workgroup share
    // each x load; RB = up to 4 x rows share each weight load. The workgroup is no wider than a row has
    // chunks (short rows would leave invocations idle), and at least 32 wide.
    const std::uint32_t chunks = K / static_cast<std::uint32_t>(blk) * f.chunks_per_block;
    const std::uint32_t rb_c = std::min<std::uint32_t>(rows, 4);
    require(c, (rows + rb_c - 1) / rb_c <= 65535, "too many rows for one dispatch");
    // x through shared memory in tiles (XS) only with OCTO_GEMV_XS=1: on the H200 it was 1.3-4x slower
    // than each invocation loading its chunk's x (benchmarks/results/2026-11-21-h100-gemv).
    const char* xs_env = std::getenv("OCTO_GEMV_XS");
    const bool xs = xs_env && std::string_view(xs_env) == "1";
    // Rows per workgroup: 2 for outputs up to kNarrowCols columns (Q, K, V, O, the 1.5B / 7B down
    // projections) in the 256-element formats (the K-quants, measured; IQ4_XS goes with them) and, in the
    // 32-element ones, over rows of at most kShortK (twice the workgroups: 13-35% less time each on the
    // H100), else 4 (gate|up and the LM head took 18-33% more at 2; the 7B's Q8_0 projections, K = 3584,
    // 3% more in all).
    // benchmarks/results/2026-11-28-h100-decode (calls 2 and 3).
    constexpr std::uint32_t kNarrowCols = 4096, kShortK = 2048, kLongK = 16384;
    const bool narrow = n_tile <= kNarrowCols && (blk == 256 || K <= kShortK);
    // Integer dot products (docs/precision.md "Decode GEMVs on integer dot products"): the `fast`
    // precision, one x row, subgroup reductions, not in a prefill (a prompt's last-row head keeps f32:
    // its logits' contract, docs/precision.md item 2, is 5e-3 of `accurate`, and the rounded x alone
    // cost 5.2e-3 on a Q8_0 test model).
    const idot_mode im = idot_setting(c);
    bool idot = false;
    // Q2_K and Q3_K take their integer loops by default only where the output is wide or the rows long:
    // on the H200's 3584 x 3584 GEMV (chained) they ran at 0.85x (two rounds) and 0.62-0.65x (one) of
    // the float loops, on gate|up at 1.29-1.46x and on the 7B down projection at 0.98-1.20x
    // (benchmarks/results/2026-11-29-h200-xq, calls 1 and 2). OCTO_GEMV_IDOT=1 takes them everywhere.
    const bool low_bits = w.dtype() == ir::dtype::q2_k || w.dtype() == ir::dtype::q3_k;
    if (im != idot_mode::off && c.fast_precision && c.device.int_dot && c.program.meta_value("regime") != "prefill" &&
        (im == idot_mode::any || (c.device.int_dot_accelerated && !(low_bits && narrow && K < kLongK))) &&
        use_subgroups(c.device) && rb_c == 1 && !xs)
      for (const auto& m : idot_modules)
        if (m.dtype == w.dtype()) {
          l.shader = m.name;
          idot = true;
        }
    // The integer loops over long rows (K >= kLongK: the 7B's down projection, 18944) take
    // OCTO_GEMV_NR_LONG rows (default 4) even where narrow: their arithmetic is light enough that two rows
    // a workgroup leave the memory idle. On the H200 the 7B down GEMV (Q4_K, chained) read 0.32 of HBM at
    // 2 rows, 0.42 at 4, 0.51 at 8, and 7B Q4_K_M decode ran 245 tok/s at 4 against 234 at 2 and 237 at
    // 8; the 1.5B's down projection (K = 8960, half the workgroups) lost 3.7% at 4, so it keeps 2.
    // benchmarks/results/2026-11-29-h200-idot (calls 2 and 3).
    const std::uint32_t nr_long = idot && K >= kLongK ? knob(c, "OCTO_GEMV_NR_LONG", 16) : 0;
    // The integer loops' wide outputs (gate|up, the LM head) take 8 rows over rows of K >= kWideK (the
    // 7B's 3584), else 4; OCTO_GEMV_NR_WIDE forces it. On the H200, 8 rows: 7B Q8_0 decode 275 against
    // 259 tok/s, 7B Q4_K_M 251 against 243 (16: 239 and 225); with 8 over shorter rows too, 0.5B Q8_0
    // -1.3%, 1.5B Q8_0 -0.8%, 1.5B Q4_K_M -4.5% (benchmarks/results/2026-11-29-h200-idot, call6;
    // 2026-11-29-h200-xq, call3).
    // But not where 8 rows would leave fewer than 256 workgroups (outputs under kWideMinCols): the
    // 0.5B's down projection (896 outputs, K = 4864) ran 0.5B Q8_0 decode at 964 tok/s with 8 rows
    // (112 workgroups for the H200's 132 SMs), 999 with 4 (benchmarks/results/2026-11-29-h200-l2, call3).
    // The gate|up pairs (RMSNORM_SWIGLU) go their own way: 8 rows over the short rows of the 32-element
    // formats, 4 elsewhere. On the H200 (tasks serialized) their GEMV took 10.1 against 11.2 us a layer
    // at 0.5B Q8_0 (K = 896) and 17.6 against 18.6 at 1.5B (K = 1536) with 8, while 8 rows cost the
    // down projections and the LM head 1.4-5 us (benchmarks/results/2026-11-29-h200-head, call1);
    // decode 0.5B Q8_0 +2.2%, 1.5B Q8_0 +0.8%, 1.5B Q4_0 +0.2%, but 1.5B Q4_K_M -2.3% (call3). With x
    // rounded ahead the 7B's (K = 3584) run better at 4 than at the wide rule's 8: 7B Q8_0 310.5 against
    // 307.5 tok/s, 7B Q4_K_M 352.9 against 346.6 (16: 293, 311; call4). OCTO_GEMV_NR_SWIGLU forces them.
    constexpr std::uint32_t kWideK = 3072, kWideMinCols = 2048;
    const std::uint32_t nr_wide = idot && !narrow ? knob(c, "OCTO_GEMV_NR_WIDE", 16) : 0;
    const std::uint32_t nr_swiglu = idot && !narrow && ops.fuse == 3 ? knob(c, "OCTO_GEMV_NR_SWIGLU", 16) : 0;
    const bool wide8 = idot && n_tile >= kWideMinCols &&
                       (ops.fuse == 3 ? blk == 32 && K < kWideK : K >= kWideK);
    // Fewer than 1024 outputs over rows of K >= kWideK (the 0.5B's down projection, 896 x 4864; the 7B's
    // K and V, 512 x 3584, in the 32-element formats) take 2 rows: 4 left them 224 and 128 workgroups.
    // On the H200 0.5B Q8_0 decode 1047.8 -> 1054.5 tok/s; the 7B's K and V GEMVs 13.4 -> 10.3 us, its
    // decode unchanged (Q sets their level) (benchmarks/results/2026-11-29-h200-head, call7).
    const bool wide2 = idot && ops.fuse != 3 && K >= kWideK && n_tile < kWideMinCols / 2;
    const std::uint32_t wide = nr_swiglu ? nr_swiglu : (nr_wide ? nr_wide : (wide8 ? 8 : (wide2 ? 2 : 4)));
    // OCTO_GEMV_NR_NARROW forces the narrow outputs' 2 (the long rows' rule above aside). With the
    // integer loops and x rounded ahead, 2 still wins on the H200: 4 rows cost 0.5B Q8_0 1.6%, 1.5B Q8_0
    // 5.5%, 1.5B Q4_K_M 10.7%, 7B Q4_K_M 5.2%; 8 rows 6-28% (benchmarks/results/2026-11-29-h200-l2, call3).
    const std::uint32_t nr_narrow = narrow && !(idot && K >= kLongK) ? knob(c, "OCTO_GEMV_NR_NARROW", 16) : 0;
    // But the RMSNORM-fused integer GEMVs that round x themselves (rows shorter than kX8MinK, where x is
    // not rounded ahead: every workgroup rounds its x row) take 4 rows where 4 still leave at least
    // kSelfRoundMinGroups workgroups: half the workgroups, so half the roundings of x, and for the
    // head-norm ops (Qwen3's q and k) half the arrivals at each head. On the H100 (benchmarks/results/
    // 2026-12-07-h100-narrow) this ran Qwen3-0.6B Q8_0 decode (K = 1024: q, k, v and the gate|up pairs
    // 512, 256, 256 and 1536 workgroups at 4 rows) at 792.8 tok/s against 733.8 at 2 (call3; 786 with
    // its O projection, which has no norm, at 4 too), while every narrow GEMV at 4 cost the 0.5B (K = 896;
    // q 224 workgroups at 4 rows, k and v 32) 1.4% and Qwen3-1.7B / Llama-1B (K = 2048, x rounded ahead)
    // 1.7% / 0.3% (call2); those keep 2. Over Q4_K (2026-12-07-h100-qkv, call3): Qwen3-0.6B Q4_K_M
    // 726.5 against 720.5 tok/s at 2 (+0.8%), its Q8_0 791.6 against 732.5 again. OCTO_GEMV_NR_NARROW forces every narrow
    // GEMV's rows.
    constexpr std::uint64_t kSelfRoundMinGroups = 256;
    const bool self_rounding = idot && ops.norm_w >= 0 && !x8_wanted(c, true, K, n_tile);
    const bool rows4 = self_rounding && groups_for(4) >= kSelfRoundMinGroups;
    const std::uint32_t narrow_rows = nr_narrow ? nr_narrow : (rows4 ? 4 : 2);
    const std::uint32_t nr_c =
        even(nr_knob ? nr_knob : (narrow ? (idot && K >= kLongK ? (nr_long ? nr_long : 4) : narrow_rows) : wide));
    // Width: as many invocations as a row has chunks, rounded down to a power of two, from 32 to 128;
    // but 64 rather than one 32-wide warp where a row has 56-63 chunks (at most 1/8 of the 64 idle: the
    // 0.5B's Q8_0 rows of 896, Q6_K rows of 3584): 0.5B Q8_0 decode +4.5% on the H100. Rounding 48 or
    // 24 chunks up to 64 lost 4% (1.5B Q4_K_M). benchmarks/results/2026-11-28-h100-idot (call4). The
    // same rounding for 112-127 chunks (the 7B's 4-bit rows of 3584 at 128 wide) lost 5% at 7B Q4_K_M
    // decode on the H200 (benchmarks/results/2026-11-28-h200-copies, call3).
    // Q4_K / Q5_K integer loops: a chunk of 16 quant bytes a sub-block pair (HALVES = 1) or of a whole
    // 64-element group, 32 bytes (HALVES = 2, half the chunks: the block header loaded and its scales
    // decoded once per group, for each of the workgroup's rows). HALVES = 2 for the Q4_K gate|up pairs over
    // rows of K >= kK4GroupK, HALVES = 1 elsewhere. On the H200 (benchmarks/results/2026-12-03-h200-halves):
    // 7B Q4_K_M decode 381.6 -> 393.5 tok/s (call2; its SWIGLU 933 -> 850 us a step serialized, call1),
    // 1.5B Q4_K_M 706.0 -> 710.6 (call4, three rounds); but HALVES = 2 everywhere took the 7B's O projection
    // 314 -> 410 and down projection 717 -> 779 us, 1.5B Q4_K_M decode 706 -> 667, and every chained GEMV
    // in bench_gemv_bandwidth lost (Q4_K 37888 x 3584 2108 -> 1689 GB/s, 3584 x 18944 2113 -> 1410: a
    // warp's load then spans twice the blocks); Q5_K's gate|up pairs lost too (7B Q5_K_M 350.2 -> 338.0:
    // their high bits are loaded per half either way). OCTO_GEMV_HALVES=1|2 forces one everywhere.
    constexpr std::uint32_t kK4GroupK = 1536;
    const bool halves_loop = idot && (w.dtype() == ir::dtype::q4_k || w.dtype() == ir::dtype::q5_k);
    const bool k4_wide = w.dtype() == ir::dtype::q4_k && ops.fuse == 3 && K >= kK4GroupK;
    const std::uint32_t halves = halves_loop ? number_knob(c, "OCTO_GEMV_HALVES", {1, 2}, k4_wide ? 2 : 1) : 1;
    const std::uint32_t chunks_run = chunks / halves;  // the chunks a row's invocations take
    std::uint32_t wg_want = std::min<std::uint32_t>(128, std::max<std::uint32_t>(32, chunks_run));
    if (wg_want >= 56 && wg_want < 64) wg_want = 64;
    // OCTO_GEMV_WG_SWIGLU forces the gate|up pairs' width (a lane's, where the SWIGLU rounds its row).
    const std::uint32_t wg_swiglu = ops.fuse == 3 ? knob(c, "OCTO_GEMV_WG_SWIGLU", 1024) : 0;
    const std::uint32_t wg_c = workgroup_size(c.device, wg_knob ? wg_knob : (wg_swiglu ? wg_swiglu : wg_want));
    // x rounded once ahead of the GEMV (OCTO_GEMV_X8, gemv_quantize_x.comp): its K / 16 runs (16 bytes of
    // quants, 8 of step and sum) in the shared scratch, which the GEMV then reads as its x; an RMSNORM
    // goes into the runs (the norm weight into v, the inverse RMS into the steps). The same runs as the
    // GEMV's own rounding; the first call (no scratch yet) plans the launch without it.
    bool x8 = false;
    const bool norm = ops.norm_w >= 0;
    if (idot) {  // rounded by the GEMV_ADD or SWIGLU that wrote x (rounding_for_readers), if it did
      const std::uint64_t runs = rounded_by_writer(c);
      require(c, runs % 16 == 0, "the rounded x is not 16-byte aligned");
      if (runs != 0) {
        ga.x = runs;
        x8 = true;
      }
    }
    if (idot && !x8 && x8_wanted(c, norm, K, n_tile)) {
      l.shared_scratch_bytes = std::uint64_t{K} / 16 * kX8RunBytes;
      // The runs depend on x, the norm and K only: the GEMVs of a wavefront that read the same x with the
      // same norm (Q, K and V) share them, rounded by one launch instead of three. On the H200 decode
      // 1.5B Q8_0 640.5 -> 646.3 tok/s, 1.5B Q4_K_M 659.5 -> 663.9, 7B Q4_K_M 365.5 -> 367.9, 7B Q8_0
      // 316.5 -> 317.5 (benchmarks/results/2026-11-29-h200-round, call3).
      const auto what = push_builder{}.addr(x.address).addr(nw_addr).u32(K).u32(nw_dtype).take();
      l.shared_scratch_key.assign("gemv_quantize_x ");
      l.shared_scratch_key.append(reinterpret_cast<const char*>(what.bytes.data()), what.bytes.size());
      const std::uint64_t runs = c.shared_scratch_address;
      if (runs != 0 && runs % 16 == 0) {
        kernel_launch q;
        q.shader = "gemv_quantize_x";
        q.spec_constants = {workgroup_size(c.device, 256), norm ? 1u : 0u};
        q.push_constants = push_builder{}.addr(x.address).addr(nw_addr).addr(runs).u32(K).u32(nw_dtype).take();
        l.before.push_back(std::move(q));
        ga.x = runs;
        x8 = true;
      }
    }
    // This GEMV_ADD's row rounded for the integer GEMVs that read it (rounding_for_readers, gemv.comp
    // ROUND): a workgroup owns 16 columns in LANES lanes; their norm goes in the fields GEMV_ADD leaves
    // unused. A grid of more than kRoundFewGroups such workgroups gives each lane the GEMV's own nr_c
    // columns and width, so every column keeps the invocations and loads it had. A grid of at most
    // kRoundFewGroups (outputs up to 2048: the 1.5B's 96) is under one wave of the H200's 132 SMs, so
    // its workgroups take 1024 invocations, 4 lanes of 256 over 4 columns: on the H200 1.5B Q8_0 decode
    // 670.9 -> 681.9 tok/s, 1.5B Q4_K_M 667.4 -> 699.2 (its FFN residual 16.2 -> 13.5 us serialized)
    // (benchmarks/results/2026-12-02-h200-lanes, call2). At the 7B's 224 workgroups that shape lost (7B
    // Q8_0 309.7 against 332.5, 7B Q4_K_M 344.0 against 372.7), as did 8 lanes of 2 columns everywhere
    // (1.5B Q8_0 662-664, 7B Q8_0 284) (call1). A forced OCTO_GEMV_NR or OCTO_GEMV_WG keeps the GEMV's
    // own shape here too; OCTO_GEMV_NR_ROUND and OCTO_GEMV_WG_ROUND force a lane's columns and width.
    // Splitting each row's chunks over 2 or 4 workgroups (the last to arrive summing the partials) lost
    // 4-17% on every model: the 7B's FFN residual 29.7 -> 36.0 us, twice its workgroups not fitting at once
    // (benchmarks/results/2026-12-02-h200-ksplit).
    // An RMSNORM_SWIGLU rounds its row the same way for the down projection (its runs as they are,
    // no norm; takes_runs_of), each lane its own NR / 2 outputs at the GEMV's own shape. On the H200
    // decode 7B Q4_K_M 372.5 -> 378.1 tok/s, 1.5B Q8_0 683.0 -> 700.2, 0.5B Q8_0 1082.0 -> 1094.8
    // (benchmarks/results/2026-12-02-h200-act-runs, call1); lanes of 4 outputs (OCTO_GEMV_NR_SWIGLU=8)
    // lost at 7B (352.6, call2).
    // But not over rows of more than kSwigluRoundMaxChunks chunks (the 7B's Q8_0 rows of 3584: 224, where
    // the rounding's lanes take 7 chunks an invocation at 32 wide, 3.5 at 64, against 1.75 at the plain
    // GEMV's 128): on the H200 7B Q8_0 decode 313.3 tok/s rounding (lanes of 32), 321.4 (lanes of 64),
    // 332.6 not rounding; 1.5B Q8_0 (96 chunks) 701.9 rounding against 684.3
    // (benchmarks/results/2026-12-04-h200-q8-swiglu, call1). Every Qwen2.5 K-quant gate|up row has at
    // most 112 chunks and rounds (7B Q4_K_M 372.5 -> 378.1, above).
    constexpr std::uint32_t kRoundFewGroups = 128, kSwigluRoundMaxChunks = 128;
    std::uint32_t lanes = 1, nr_l = nr_c, wg_l = wg_c;
    bool round = false;
    const std::uint32_t sg = c.device.subgroup_size;
    const bool swiglu_row_too_long = ops.fuse == 3 && chunks_run > kSwigluRoundMaxChunks &&
                                     swiglu_rounding(c) != swiglu_round::always;
    if (idot && (ops.fuse == 2 || ops.fuse == 3) && R == 1 && n_off == 0 && n_tile == ldy && n_tile % 16 == 0 &&
        y.address % 16 == 0 && !swiglu_row_too_long) {
      const bool swiglu = ops.fuse == 3;
      const bool few = !swiglu && n_tile / 16 <= kRoundFewGroups && c.device.max_workgroup_size_x >= 1024 &&
                       !nr_knob && !wg_knob;
      const std::uint32_t nr_r = knob(c, "OCTO_GEMV_NR_ROUND", 16), wg_r = knob(c, "OCTO_GEMV_WG_ROUND", 1024);
      const std::uint32_t nr_w = swiglu ? nr_c : (nr_r ? nr_r : (few ? 4 : nr_c));
      // The SWIGLU's lanes over rows of K >= kWideK (the 7B's 3584) are one subgroup of 32 wide: 8
      // lanes make 256-invocation workgroups, five a multiprocessor at its 50 registers where 512 (lanes
      // of 64) fit two. On the H200 7B Q4_K_M decode 378.1 -> 381.4 tok/s (one run each,
      // benchmarks/results/2026-12-02-h200-act-runs, call4); shorter rows keep the GEMV's own width
      // (not measured there).
      const std::uint32_t wg_sw = wg_swiglu || wg_knob || K < kWideK ? wg_c : std::max(std::min(wg_c, 32u), sg);
      const std::uint32_t wg_w =
          swiglu ? wg_sw : (wg_r ? workgroup_size(c.device, wg_r) : (few ? workgroup_size(c.device, 256) : wg_c));
      const std::uint32_t cols = swiglu ? nr_w / 2 : nr_w;  // a lane's outputs
      if (cols > 0 && 16 % cols == 0 && wg_w * (16 / cols) <= c.device.max_workgroup_size_x && sg > 0 && wg_w % sg == 0)
        if (const auto r = rounding_for_readers(c, y)) {
          l.scratch_bytes = std::uint64_t{n_tile} / 16 * kX8RunBytes;
          if (c.scratch_address != 0) {
            require(c, c.scratch_address % 16 == 0, "scratch is not 16-byte aligned");
            round = true;
            nr_l = nr_w;
            wg_l = wg_w;
            lanes = 16 / cols;
            runs_out = c.scratch_address;
            if (!swiglu) {  // the readers' norm, in the fields a GEMV_ADD leaves unused
              nw_addr = r->nw;
              nw_dtype = r->nw_dtype;
            }
          }
        }
    }
    l.spec_constants = {wg_l * lanes, nr_l, rb_c, 1u, xs ? 1u : 0u, ops.fuse};
    if (idot) l.spec_constants.insert(l.spec_constants.end(), {x8 ? 1u : 0u, round ? 1u : 0u, lanes, halves});
    l.groups = grid(groups_for(nr_l) / lanes, (rows + rb_c - 1) / rb_c);
    head_norm_scratch(nr_l, wg_l * lanes);
    l.push_constants = push();
    return l;
  }
  // One x row over F32 / F16 / BF16 weights (the 16-byte unit loop). Narrow outputs (up to 4096
  // columns: Q, K, V, O, the down projections) take 256 invocations and 2 rows: a workgroup's RMSNORM
  // prologue reads the whole x row, K / WG loads an invocation, and a narrow GEMV's grid is a few hundred
  // workgroups, so the wider workgroup shortens that chain and puts more loads in flight. Wide ones
  // (gate|up, the LM head: tens of thousands of workgroups, where 256 invocations took the 0.5B's F16 LM
  // head 114.6 -> 207.8 us) take 4 rows, so each x load serves twice the weight, and 64 invocations, 32
  // where a row has fewer than 192 16-byte units (at least three an invocation). On the H200, through
  // these knobs (benchmarks/results/2026-12-02-h200-argmax, calls 2 and 3) against 64 invocations and 2
  // rows everywhere: 0.5B F16 decode 920 -> 1051 tok/s, 1.5B F16 554 -> 609 (LM head 149.5 -> 112.7 us).
  // OCTO_GEMV_WG_NARROW / OCTO_GEMV_WG_WIDE set the widths, OCTO_GEMV_NR_WIDE16 the wide ones' rows;
  // OCTO_GEMV_NR and OCTO_GEMV_WG force every GEMV.
  const bool unit16 = rb == 1 && (w.dtype() == ir::dtype::f32 || w.dtype() == ir::dtype::f16 || w.dtype() == ir::dtype::bf16);
  constexpr std::uint32_t kNarrow16Cols = 4096, kFewUnits = 192;
  const bool narrow16 = n_tile <= kNarrow16Cols;
  std::uint32_t wg16 = wg, nr16 = nr;
  if (unit16) {
    const std::uint32_t wk = knob(c, narrow16 ? "OCTO_GEMV_WG_NARROW" : "OCTO_GEMV_WG_WIDE", 1024);
    wg16 = workgroup_size(c.device, wk ? wk : narrow16 ? 256 : K / 8 < kFewUnits ? 32 : 64);
    if (!narrow16) {
      const std::uint32_t nk = knob(c, "OCTO_GEMV_NR_WIDE16", 16);
      nr16 = nk ? nk : 4;
    }
  }
  const std::uint32_t nr_g = even(nr_knob && rb == 1 ? nr_knob : nr16);
  l.spec_constants = {wg_knob && rb == 1 ? workgroup_size(c.device, wg_knob) : wg16, nr_g, rb, unit_loads ? 1u : 0u, 0u,
                      ops.fuse};
  const std::uint64_t row_groups = (rows + rb - 1) / rb;
  require(c, row_groups <= 65535, "too many rows for one dispatch");
  l.groups = grid(groups_for(nr_g), static_cast<std::uint32_t>(row_groups));
  head_norm_scratch(nr_g, l.spec_constants[0]);
  l.push_constants = push();
  return l;
}

/// OCTO_GEMV_QKV: 1, RMSNORM_GEMV_QKV runs as one launch wherever it can (plan_qkv); 0, as three launches
/// side by side; unset, one launch but over the 256-element formats (the K-quants, IQ4_XS). On the H100
/// (benchmarks/results/2026-12-07-h100-qkv, calls 1 and 2; two rounds each, against the three tasks) the
/// one launch ran 0.5B Q8_0 decode 1,021 -> 1,045 tok/s (+2.3%), 0.5B F16 949 -> 958 (+1.0%), 1.5B Q8_0
/// 626 -> 633 (+0.9%), 7B Q8_0 279.2 -> 280.6 (+0.5%), but 1.5B and 7B Q4_K_M (their Q4_K layers; the half
/// with a Q6_K v take three launches anyway) 0.3-0.6% behind: 670.4 against 673.2-675.1, 358.2 against
/// 359.6-359.9 (three launches of one task as fast as the three tasks there).
bool qkv_one_launch(const task_context& c, ir::dtype w) {
  const std::uint32_t v = number_knob(c, "OCTO_GEMV_QKV", {0, 1}, 2);
  return v == 2 ? ir::layout(w).block_elems != 256 : v == 1;
}

/// RMSNORM_GEMV_QKV [x, norm_w, W_q, W_k, W_v, pos(, b_qkv)] and RMSNORM_GEMV_NORM_QKV [x, norm_w, W_q,
/// W_k, W_v, pos, hn_qk] -> q, k_cache, v_cache (docs/opcodes.md). Each projection is planned as the task it
/// stands for (RMSNORM_GEMV_ROPE for q, RMSNORM_GEMV_KV for k and v with the bias's parts; Qwen3's form
/// RMSNORM_GEMV_NORM_ROPE for q, RMSNORM_GEMV_NORM_KV for k with their head norms' weights, RMSNORM_GEMV_KV
/// for v), k and v at q's rows and width a workgroup. Where the three are launches of one gemv.comp module
/// alike (one weight format, subgroups, no scratch of their own but the head norms'), they run as one
/// launch of the module's _qkv form (gemv.comp GEMV_QKV) over their three grids one after another: one
/// dispatch where there were three. Elsewhere (weights of different formats, as a Q4_K_M file's Q6_K v
/// beside Q4_K q and k in some layers; no subgroup arithmetic; the 256-element formats by default and
/// everywhere with OCTO_GEMV_QKV=0: qkv_one_launch) the three launches run side by side
/// (kernel_launch::beside), as the three tasks did. The head norms' scratch is the task's: q's counters and
/// sums, then k's from the next 16 bytes.
kernel_launch plan_qkv(const task_context& c) {
  const ir::task& t = c.task;
  const bool normed = t.op == ir::opcode::rmsnorm_gemv_norm_qkv;
  if (normed)
    require(c, t.inputs.size() == 7 && t.outputs.size() == 3,
            "needs inputs [x, norm_w, W_q, W_k, W_v, pos, hn_qk] and outputs q, k_cache, v_cache");
  else
    require(c, (t.inputs.size() == 6 || t.inputs.size() == 7) && t.outputs.size() == 3,
            "needs inputs [x, norm_w, W_q, W_k, W_v, pos(, b_qkv)] and outputs q, k_cache, v_cache");
  const auto id = [&](std::size_t k) { return t.inputs[k]; };
  const auto x = input(c, 0), wq = input(c, 2), wk = input(c, 3), wv = input(c, 4);
  const std::int64_t K = param_i(c, ir::param_key::K);
  require(c, K > 0 && x.numel() == K, "x must be one row of K (a decode step)");
  require(c, wq.numel() % K == 0 && wk.numel() % K == 0 && wv.numel() == wk.numel(),
          "W_q, W_k and W_v must be rows of K, W_k and W_v of one shape");
  const auto kc = tensor(c, t.outputs[1]), vc = tensor(c, t.outputs[2]);
  require(c, kc.dtype() == vc.dtype() && kc.numel() == vc.numel(), "the k and v caches differ in dtype or size");
  // The three tasks, over the program or, with a composite weight (the bias, the head norms), a copy
  // that also holds its parts as buffers of their own.
  ir::program parted_program;
  const ir::program* parts_program = &c.program;
  std::vector<std::uint64_t> address(c.buffer_address.begin(), c.buffer_address.end());
  std::array<std::int32_t, 3> joined_part{-1, -1, -1};  // the biases of q, k, v, or the head norms of q, k
  std::uint32_t joined_dtype = 0;
  if (t.inputs.size() == 7) {
    const auto b = input(c, 6);
    parted_program = c.program;
    parts_program = &parted_program;
    joined_dtype = static_cast<std::uint32_t>(b.dtype());
    const std::int64_t hd = param_i(c, ir::param_key::head_dim);
    const std::array<std::int64_t, 3> n = normed ? std::array<std::int64_t, 3>{hd, hd, 0}
                                                 : std::array<std::int64_t, 3>{wq.numel() / K, wk.numel() / K, wv.numel() / K};
    require(c, b.numel() == n[0] + n[1] + n[2],
            normed ? "hn_qk must hold the q and k head norms' head_dim weights one after another"
                   : "b_qkv must hold the q, k and v biases one after another");
    std::int64_t off = 0;
    for (std::size_t p = 0; p < 3 && n[p] > 0; ++p) {
      joined_part[p] = static_cast<std::int32_t>(parted_program.buffers.size());
      ir::buffer& pb = parted_program.buffers.emplace_back();
      pb.id = joined_part[p];
      pb.name = std::string(b.buf->name.view()) + " part " + std::to_string(p);
      pb.kind = ir::buffer_kind::weight;
      pb.dtype = b.dtype();
      pb.shape = {n[p]};
      address.push_back(b.address + static_cast<std::uint64_t>(ir::nbytes(b.dtype(), off)));
      off += n[p];
    }
  }
  std::array<ir::task, 3> part{t, t, t};
  if (normed) {
    part[0].op = ir::opcode::rmsnorm_gemv_norm_rope;
    part[0].inputs = {id(0), id(1), id(2), joined_part[0], id(5)};
    part[1].op = ir::opcode::rmsnorm_gemv_norm_kv;
    part[1].inputs = {id(0), id(1), id(3), joined_part[1], t.outputs[1], id(5)};
  } else {
    part[0].op = ir::opcode::rmsnorm_gemv_rope;
    part[0].inputs = {id(0), id(1), id(2), id(5)};
    part[1].op = ir::opcode::rmsnorm_gemv_kv;
    part[1].inputs = {id(0), id(1), id(3), t.outputs[1], id(5)};
  }
  part[0].outputs = {t.outputs[0]};
  part[1].outputs = {t.outputs[1]};
  part[2].op = ir::opcode::rmsnorm_gemv_kv;
  part[2].inputs = {id(0), id(1), id(4), t.outputs[2]};
  part[2].outputs = {t.outputs[2]};
  part[2].params.set(ir::param_key::n_rot, 0);
  if (!normed)
    for (std::size_t p = 0; p < 3; ++p)
      if (joined_part[p] >= 0) part[p].inputs.push_back(joined_part[p]);
  std::array<gemv_fields, 3> f;
  std::array<kernel_launch, 3> l;
  std::uint64_t q_scratch = 0;  // q's part of the task's scratch, a multiple of 16 bytes (k's follows)
  const auto plan_parts = [&](std::uint64_t shared_scratch) {
    const auto plan_part = [&](std::size_t p, gemv_shape shape, std::uint64_t scratch) {
      const task_context ctx{*parts_program, part[p], address, c.globals_address, c.device, c.fast_precision,
                             scratch, c.task_scratch_address, shared_scratch, c.transient_scratch_address, {}};
      return plan_gemv_shaped(ctx, shape, &f[p]);
    };
    l[0] = plan_part(0, {}, c.scratch_address);
    q_scratch = (l[0].scratch_bytes + 15) / 16 * 16;
    const bool q_gemv = f[0].filled && l[0].spec_constants.size() >= 6;
    const gemv_shape shape = q_gemv ? gemv_shape{l[0].spec_constants[1], l[0].spec_constants[0]} : gemv_shape{};
    l[1] = plan_part(1, shape, c.scratch_address != 0 ? c.scratch_address + q_scratch : 0);
    l[2] = plan_part(2, shape, 0);
  };
  plan_parts(c.shared_scratch_address);
  // x rounded ahead (a `before` launch into the task's shared scratch) serves all three only where they
  // all take the same rounding: else (weights of formats with and without integer loops) each part
  // rounds x in its own workgroups, or reads it plain.
  for (std::size_t p = 1; p < 3; ++p)
    if (l[p].before.size() != l[0].before.size() || l[p].shared_scratch_key != l[0].shared_scratch_key) {
      plan_parts(0);
      break;
    }
  const std::uint64_t scratch_bytes = l[1].scratch_bytes > 0 ? q_scratch + l[1].scratch_bytes : l[0].scratch_bytes;
  require(c, l[2].scratch_bytes == 0 && (normed || scratch_bytes == 0), "a projection asks for a scratch of its own");

  // One launch: the same module and constants (but FUSE), one row, no indirect count, no scratch of
  // their own (but the head norms'), the same x rounding ahead (if any), and a _qkv form of the module.
  std::string_view qkv_shader;
  for (const auto& m : gemv_modules)
    if (l[0].shader == m.sg) qkv_shader = m.qkv;
  for (const auto& m : idot_modules)
    if (l[0].shader == m.name) qkv_shader = m.qkv;
  bool one = qkv_one_launch(c, wq.dtype()) && !qkv_shader.empty();
  std::uint64_t groups = 0;
  for (std::size_t p = 0; p < 3 && one; ++p) {
    auto sc = l[p].spec_constants, sc0 = l[0].spec_constants;
    one = f[p].filled && l[p].shader == l[0].shader && sc.size() == sc0.size() && sc.size() >= 6;
    if (one) sc[5] = sc0[5] = 0;  // FUSE: q's RoPE, k's and v's cache writes, the head norms
    one = one && sc == sc0 && l[p].groups[1] == 1 && l[p].groups[2] == 1 && !l[p].indirect &&
          l[p].alternatives.empty() && l[p].transient_scratch_bytes == 0 &&
          l[p].weight_copies.empty() && l[p].before.size() == l[0].before.size() &&
          l[p].shared_scratch_key == l[0].shared_scratch_key && f[p].x == f[0].x && f[p].w_row_bytes == f[0].w_row_bytes;
    if (sc.size() > 8) one = one && sc[8] == 1;  // one lane (the integer loops' LANES)
    groups += l[p].groups[0];
  }
  // The grids gemv.comp's qkv_select derives from the widths (ceil(pairs / (NR / 2)) each).
  const std::uint32_t nr = one ? l[0].spec_constants[1] : 2;
  const auto grid_of = [&](std::uint32_t n_tile) { return (n_tile / 2 + nr / 2 - 1) / (nr / 2); };
  one = one && l[0].groups[0] == grid_of(f[0].n_tile) && l[1].groups[0] == grid_of(f[1].n_tile) && groups <= 65535 &&
        f[0].n_tile < 65536 && f[1].n_tile < 65536 && f[1].n_tile == f[2].n_tile && f[1].style == f[2].style &&
        f[1].style < 65536 && f[0].nw_dtype < 256 && joined_dtype < 32;
  if (!one) {  // three launches side by side (the x rounding ahead, if any, once: the first's)
    kernel_launch main = std::move(l[0]);
    main.scratch_bytes = scratch_bytes;
    for (std::size_t p = 1; p < 3; ++p) {
      l[p].before.clear();
      l[p].scratch_bytes = 0;
      main.beside.push_back(std::move(l[p]));
    }
    return main;
  }
  kernel_launch m = std::move(l[0]);
  m.shader = qkv_shader;
  m.spec_constants[5] = 4;  // FUSE_ROPE: the pair mode every part runs (gemv.comp GEMV_QKV)
  m.groups = {static_cast<std::uint32_t>(groups), 1, 1};
  m.scratch_bytes = scratch_bytes;
  const std::uint64_t joined_addr = joined_part[0] >= 0 ? address[static_cast<std::size_t>(joined_part[0])] : 0;
  const std::uint32_t style = f[1].style | f[0].nw_dtype << 16 | joined_dtype << 24 |
                              (!normed && joined_part[0] >= 0 ? 1u << 29 : 0u) | (normed ? 1u << 30 : 0u);
  m.push_constants = push_builder{}
                         .addr(f[0].x).addr(f[0].nw).addr(f[0].w).addr(f[1].w).addr(f[2].w).addr(joined_addr)
                         .addr(f[0].aux).addr(f[0].y).addr(f[1].y).addr(f[2].y).addr(c.globals_address)
                         .addr(normed ? c.scratch_address : 0)
                         .u32(f[0].K).u32(f[0].w_row_bytes)
                         .u32(f[0].n_tile | f[1].n_tile << 16)
                         .u32(f[1].rope).u32(style).u32(f[1].kv_pos)
                         .f32(f[0].eps).f32(f[0].log2_theta)
                         .take();
  return m;
}

}  // namespace

}  // namespace octo::vm::vulkan::kernels
