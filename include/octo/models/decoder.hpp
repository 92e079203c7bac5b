// decoder_step(config) and prefill(config, T): a decoder-only transformer (llama / qwen2 / qwen3) as a
// typed graph, lowered to an ir::program. constexpr functions of a config value: the same code proves a
// built-in model's schedule inside static_assert and builds the program of a GGUF file at run time.
#pragma once

#include <cstdint>

#include "octo/graph/graph.hpp"
#include "octo/graph/ops.hpp"
#include "octo/ir/program.hpp"
#include "octo/ir/schedule_config.hpp"
#include "octo/models/model_config.hpp"

namespace octo::models {

/// A contiguous part of the model, for running it as a chain of programs (layer streaming): the
/// embedding, layers [first_layer, end_layer), the head (final norm + LM head). Where a segment starts
/// after the embedding it reads the hidden state from input "hidden_in" (f32 [T, hidden]); where it
/// ends before the head it writes output "hidden_out" (f32 [T, hidden]). The default is the whole model.
/// Weights and KV caches keep their names, so a chain of segments computes what the whole program does.
struct segment {
  bool embed = true;              // starts with the token embedding (input "tokens")
  std::int64_t first_layer = 0;
  std::int64_t end_layer = -1;    // one past the last layer; -1: the config's layer count
  bool head = true;               // ends with the final norm and the LM head (output "logits")

  static constexpr segment embedding() { return {true, 0, 0, false}; }
  static constexpr segment layers(std::int64_t first, std::int64_t end) { return {false, first, end, false}; }
  static constexpr segment output_head(std::int64_t layers) { return {false, layers, layers, true}; }
};

/// The schedule a decode step gets by default: every fusion lowering knows (docs/ir.md §5.1), so a
/// layer is RMSNORM_GEMV_QKV (q, k and v with their RoPE and cache writes) | attention | GEMV_ADD (o) |
/// RMSNORM_SWIGLU | GEMV_ADD (down), and the head RMSNORM_GEMV; Qwen3's q, k and v, with q's and k's
/// per-head norms, are RMSNORM_GEMV_NORM_QKV. `qkv` = false leaves q, k and v three tasks
/// (RMSNORM_GEMV_ROPE, RMSNORM_GEMV_KV twice; Qwen3's RMSNORM_GEMV_NORM_ROPE, RMSNORM_GEMV_NORM_KV and
/// RMSNORM_GEMV_KV; the runtime's OCTO_FUSION=no-qkv). A prefill's default is prefill_schedule(), below.
/// `head_norm_projections` = false leaves out the chains that take a per-head norm into its projection
/// (Qwen3's q and k then take two tasks each: RMSNORM_GEMV, then RMSNORM_ROPE(_KV)), for measuring one
/// form against the other (the runtime's OCTO_FUSION=no-head-norm).
constexpr ir::schedule_config fused_decode_schedule(bool head_norm_projections = true, bool qkv = true) {
  ir::schedule_config s;
  if (qkv) s.fusion_grouping.push_back({"RMSNORM", "GEMV_TILE", "GEMV_TILE", "GEMV_TILE"});
  s.fusion_grouping.insert(s.fusion_grouping.end(), {{"RMSNORM", "GEMV_TILE", "ROPE", "KV_APPEND"}, {"RMSNORM", "GEMV_TILE", "KV_APPEND"},
                       {"RMSNORM", "GEMV_TILE", "ROPE"}, {"RMSNORM", "GEMV_TILE", "SILU_MUL"},
                       {"GEMV_TILE", "ADD"}, {"RMSNORM", "GEMV_TILE"}, {"RMSNORM", "ROPE", "KV_APPEND"},
                       {"RMSNORM", "ROPE"}});
  if (head_norm_projections) {
    s.fusion_grouping.push_back({"RMSNORM", "GEMV_TILE", "RMSNORM", "ROPE", "KV_APPEND"});
    s.fusion_grouping.push_back({"RMSNORM", "GEMV_TILE", "RMSNORM", "ROPE"});
  }
  return s;
}

/// The prompt length from which the runtime lowers a prefill with prefill_schedule() (the norms folded);
/// shorter passes take prefill_schedule(false). The same row count from which the Vulkan VM runs such a
/// norm once ahead of its GEMMs (src/vulkan/kernels/gemm.cpp, plan_norm_x), the form that was measured
/// faster (src/runtime/model_source.cpp).
inline constexpr std::int64_t kFoldNormsRows = 256;

/// The schedule a prefill gets by default: the residual ADD of a GEMM (the o and down projections)
/// becomes GEMV_ADD over every row, r added in the tiled GEMM kernels' epilogue (on the H200 the fused
/// GEMM took what the GEMM alone took: 1.5B Q4_K_M, tasks serialized, 1,838 against 1,787 + 247 us;
/// benchmarks/results/2026-11-28-h200-prefill-fusion, call2); an RMSNORM feeding GEMMs becomes
/// RMSNORM_GEMV in each (q, k, v), and the gate and up GEMMs of one norm with their SILU_MUL one
/// RMSNORM_SWIGLU, whose kernel multiplies gate and up rows interleaved and writes silu(gate) * up. On
/// tensor cores the norm runs once ahead of a wavefront's GEMMs, into the f16 rows they read
/// (src/vulkan/kernels/gemm.cpp, plan_norm_x); q, k and v take their RoPE and cache writes into the
/// GEMMs' epilogue (RMSNORM_GEMV_ROPE, RMSNORM_GEMV_KV); Qwen3's per-head q / k norms fold into their RoPE
/// (RMSNORM_ROPE, RMSNORM_ROPE_KV). docs/ir.md §5.1. `fold_norms` = false keeps the norms
/// and the SILU_MUL as their own tasks (the runtime's OCTO_PREFILL_FUSION=residual), for measuring one
/// form against the other.
constexpr ir::schedule_config prefill_schedule(bool fold_norms = true) {
  ir::schedule_config s;
  s.fusion_grouping = {{"GEMM_TILE", "ADD"}};
  if (fold_norms) {
    s.fusion_grouping.push_back({"RMSNORM", "GEMM_TILE", "SILU_MUL"});
    s.fusion_grouping.push_back({"RMSNORM", "GEMM_TILE"});
    // q, k and v with their RoPE and cache writes in the GEMM kernels' epilogue (RMSNORM_GEMV_ROPE,
    // RMSNORM_GEMV_KV over every row; common/gemm_rope_kv.glsl).
    s.fusion_grouping.push_back({"RMSNORM", "GEMM_TILE", "ROPE", "KV_APPEND"});
    s.fusion_grouping.push_back({"RMSNORM", "GEMM_TILE", "ROPE"});
    s.fusion_grouping.push_back({"RMSNORM", "GEMM_TILE", "KV_APPEND"});
    // Qwen3's per-head q / k norms with their RoPE (and k's cache write): one pass over the rows instead
    // of two or three (shaders/norm_rope.comp).
    s.fusion_grouping.push_back({"RMSNORM", "ROPE", "KV_APPEND"});
    s.fusion_grouping.push_back({"RMSNORM", "ROPE"});
  }
  return s;
}

struct build_options {
  bool argmax = false;                        // also output "next_token" (SAMPLE_ARGMAX of the logits)
  std::int64_t max_ctx = 0;                   // KV cache rows; 0: the config's max_ctx
  /// The KV caches' dtype: F32, F16 or Q8_0 (kv_heads*head_dim a multiple of 32); docs/precision.md.
  ir::dtype kv_dtype = ir::dtype::f32;
  /// Tiling, fusion etc.; nullptr: the defaults, fused_decode_schedule() for a decode step. A schedule
  /// without fusion_grouping gives the plain ops (the unfused path).
  const ir::schedule_config* schedule = nullptr;
  const ir::gpu_target* target = nullptr;     // when set, tasks get SMs
  segment part{};                             // which part of the model; default: all of it
  /// Prefill: the final norm and the LM head for every prompt row (logits [T, vocab]). Default: for the
  /// last prompt row only (logits [1, vocab]), the one a generate loop reads; the head of a 7B model is
  /// about 6% of its prefill, of a 0.5B model a quarter.
  bool all_logits = false;
};

namespace detail {
using act = tensor<f32, dextents<2>>;

/// Everything the graph needs of one layer's KV cache and the pass's position.
struct pass_shape {
  std::int64_t tokens = 1;   // rows this pass processes
  bool prefill = false;      // GEMM tiles and a causal mask over the prompt
};

constexpr act project(const act& x, const tensor<any_dtype, dextents<2>>& w, bool prefill) {
  return prefill ? octo::gemm(x, w) : octo::gemv(x, w);
}
constexpr act project(const act& x, const tensor<any_dtype, dextents<2>>& w, const tensor<f32, dextents<1>>& b,
                      bool prefill) {
  return prefill ? octo::gemm(x, w, b) : octo::gemv(x, w, b);
}

/// One decoder layer; types are those of one block, the layer index is a value.
constexpr act decoder_layer(graph& g, const model_config& c, std::int64_t l, const act& x,
                            const tensor<i32, dextents<1>>& pos, std::int64_t ctx, ir::dtype kv_dtype,
                            const pass_shape& s) {
  const auto key = [l](std::string_view what) { return octo::detail::name_buf("blk.").append(l, ".", what); };
  const auto mat = [&](std::string_view what, std::int64_t n, std::int64_t k) {
    return g.weight(c.weight_dtype, key(what).view(), dextents<2>{n, k});
  };
  const auto vec = [&](std::string_view what, std::int64_t n) {
    return g.weight<f32>(key(what).view(), dextents<1>{n});
  };
  const std::int64_t q_width = c.heads * c.head_dim, kv_width = c.kv_heads * c.head_dim;
  g.set_layer(static_cast<std::int32_t>(l));

  // attention
  const act h = octo::rmsnorm(x, vec("attn_norm.weight", c.hidden), c.rms_eps).named(key("attn_norm").view());
  act q, k, v;
  if (c.qkv_bias) {
    q = project(h, mat("attn_q.weight", q_width, c.hidden), vec("attn_q.bias", q_width), s.prefill);
    k = project(h, mat("attn_k.weight", kv_width, c.hidden), vec("attn_k.bias", kv_width), s.prefill);
    v = project(h, mat("attn_v.weight", kv_width, c.hidden), vec("attn_v.bias", kv_width), s.prefill);
  } else {
    q = project(h, mat("attn_q.weight", q_width, c.hidden), s.prefill);
    k = project(h, mat("attn_k.weight", kv_width, c.hidden), s.prefill);
    v = project(h, mat("attn_v.weight", kv_width, c.hidden), s.prefill);
  }
  q.named(key("q").view());
  k.named(key("k").view());
  v.named(key("v").view());
  if (c.qk_norm) {
    q = octo::head_rmsnorm(q, vec("attn_q_norm.weight", c.head_dim), c.rms_eps).named(key("q_norm").view());
    k = octo::head_rmsnorm(k, vec("attn_k_norm.weight", c.head_dim), c.rms_eps).named(key("k_norm").view());
  }
  const rope_params rp{.head_dim = c.head_dim, .theta = c.rope_theta, .style = c.rope, .n_rot = 0, .ramp = c.rope_ramp};
  q = octo::rope(q, pos, rp).named(key("q_rope").view());
  k = octo::rope(k, pos, rp).named(key("k_rope").view());
  const auto k_cache = g.kv_cache(kv_dtype, key("k_cache").view(), dextents<2>{ctx, kv_width});
  const auto v_cache = g.kv_cache(kv_dtype, key("v_cache").view(), dextents<2>{ctx, kv_width});
  const auto kc = octo::kv_append(k_cache, k, 0);
  const auto vc = octo::kv_append(v_cache, v, 0);
  const attention_params ap{.n_heads = c.heads, .n_kv_heads = c.kv_heads, .head_dim = c.head_dim, .kv_start = 0,
                            .kv_len = s.tokens, .scale = 0.0, .causal = true, .q_pos = 0};
  const act o = octo::attention(q, kc, vc, ap).named(key("attn").view());
  const act attn_out = project(o, mat("attn_output.weight", c.hidden, q_width), s.prefill).named(key("attn_out").view());
  const act x1 = octo::add(x, attn_out).named(key("attn_residual").view());

  // feed-forward (SwiGLU)
  const act h2 = octo::rmsnorm(x1, vec("ffn_norm.weight", c.hidden), c.rms_eps).named(key("ffn_norm").view());
  const act gate = project(h2, mat("ffn_gate.weight", c.ffn, c.hidden), s.prefill).named(key("ffn_gate").view());
  const act up = project(h2, mat("ffn_up.weight", c.ffn, c.hidden), s.prefill).named(key("ffn_up").view());
  const act act_ = octo::silu_mul(gate, up).named(key("ffn_act").view());
  const act down = project(act_, mat("ffn_down.weight", c.hidden, c.ffn), s.prefill).named(key("ffn_down").view());
  return octo::add(x1, down).named(key("ffn_residual").view());
}

constexpr ir::program build(const model_config& c, const pass_shape& s, const build_options& o) {
  c.check();
  const std::int64_t ctx = o.max_ctx > 0 ? o.max_ctx : c.max_ctx;
  if (s.tokens <= 0 || s.tokens > ctx) octo::detail::graph_error("octo::models: T must be in [1, max_ctx]");
  const segment& seg = o.part;
  const std::int64_t first = seg.first_layer, end = seg.end_layer < 0 ? c.layers : seg.end_layer;
  if (first < 0 || first > end || end > c.layers)
    octo::detail::graph_error("octo::models: a segment's layers must satisfy 0 <= first <= end <= layers");
  if (!seg.embed && !seg.head && first == end) octo::detail::graph_error("octo::models: the segment is empty");
  if (o.argmax && !seg.head) octo::detail::graph_error("octo::models: argmax needs a segment with the head");
  graph g;
  act x;
  tensor<any_dtype, dextents<2>> embd;
  const bool need_embd = seg.embed || (seg.head && c.tied_embeddings);
  if (seg.embed) {
    const auto tokens = g.input<i32>("tokens", dextents<1>{s.tokens});
    embd = g.weight(c.weight_dtype, "token_embd.weight", dextents<2>{c.vocab, c.hidden});
    x = octo::embed(tokens, embd).named("embed");
  } else {
    x = g.input<f32>("hidden_in", dextents<2>{s.tokens, c.hidden});
  }
  if (first < end) {
    const auto pos = g.input<i32>("pos", dextents<1>{s.tokens});
    for (std::int64_t l = first; l < end; ++l) x = decoder_layer(g, c, l, x, pos, ctx, o.kv_dtype, s);
  }
  if (seg.head) {
    if (need_embd && !seg.embed) embd = g.weight(c.weight_dtype, "token_embd.weight", dextents<2>{c.vocab, c.hidden});
    g.set_layer(-1);
    // Only the rows that are read go through the head: the last one, unless all are asked for.
    const bool all_rows = o.all_logits || s.tokens == 1;
    const auto norm_w = g.weight<f32>("output_norm.weight", dextents<1>{c.hidden});
    const act xn = (all_rows ? octo::rmsnorm(x, norm_w, c.rms_eps) : octo::rmsnorm_rows(x, norm_w, c.rms_eps, s.tokens - 1, 1))
                       .named("output_norm");
    const bool head_gemm = s.prefill && all_rows;
    const act logits = c.tied_embeddings
                           ? project(xn, embd, head_gemm)
                           : project(xn, g.weight(c.weight_dtype, "output.weight", dextents<2>{c.vocab, c.hidden}),
                                     head_gemm);
    g.output("logits", logits);
    if (o.argmax) g.output("next_token", octo::argmax(logits));
  } else {
    g.output("hidden_out", x);
  }
  ir::schedule_config defaults;  // no `?:` (below)
  if (s.prefill) defaults = prefill_schedule();
  else defaults = fused_decode_schedule();
  const ir::schedule_config& sc = o.schedule ? *o.schedule : defaults;
  // no `?:` on programs: g++ 12 frees the temporary's storage too early in constant evaluation
  ir::program p;
  if (o.target) p = g.lower(sc, *o.target);
  else p = g.lower(sc);
  p.set_meta("model", c.name);
  p.set_meta("regime", s.prefill ? "prefill" : "decode");
  return p;
}
}  // namespace detail

/// One decode step: one token at position 0 of the pass (a VM adds the running position, see
/// docs/opcodes.md), logits [1, vocab] as output "logits". Inputs "tokens" and "pos" (i32 [1]); KV
/// caches "blk.N.k_cache" / "blk.N.v_cache" [max_ctx, kv_heads*head_dim].
/// @code
///   static_assert(octo::validate(octo::models::decoder_step(octo::models::qwen2_5_7b)).ok);
/// @endcode
constexpr ir::program decoder_step(const model_config& c, const build_options& o = {}) {
  return detail::build(c, detail::pass_shape{1, false}, o);
}

/// A prompt of T tokens at positions 0..T-1: GEMM tiles, causal attention, logits [1, vocab] of the last
/// prompt row (build_options::all_logits: [T, vocab], every row).
constexpr ir::program prefill(const model_config& c, std::int64_t tokens, const build_options& o = {}) {
  return detail::build(c, detail::pass_shape{tokens, true}, o);
}

}  // namespace octo::models
