// OP_REGISTRY: each opcode's arity and the params that make it mathematically well defined
// (docs/ir.md §7). validate() checks every task against it; docs/opcodes.md gives the semantics.
#pragma once

#include <array>
#include <string_view>

#include "octo/ir/enums.hpp"
#include "octo/ir/param_fields.hpp"

namespace octo::ir {

inline constexpr int max_required_params = 6;

struct op_spec {
  opcode kind;
  int min_inputs;
  int max_inputs;  // capped by abi_max_inputs
  int n_outputs;
  std::array<param_key, max_required_params> required{};
  int n_required = 0;
  std::string_view note;
};

namespace detail {
template <class... K>
constexpr op_spec make_spec(opcode op, int lo, int hi, int outs, std::string_view note, K... keys) {
  op_spec s{op, lo, hi, outs, {}, 0, note};
  ((s.required[static_cast<std::size_t>(s.n_required++)] = keys), ...);
  return s;
}
}  // namespace detail

inline constexpr std::array<op_spec, opcode_count> op_registry{{
    detail::make_spec(opcode::nop, 0, 0, 0, "no-op"),
    detail::make_spec(opcode::copy, 1, 1, 1, "page to page move"),
    detail::make_spec(opcode::embed, 2, 2, 1, "[ids, table[V,H]] -> gathered rows", param_key::hidden),
    detail::make_spec(opcode::rmsnorm, 2, 2, 1, "x*rsqrt(mean(x^2)+eps)*w", param_key::eps, param_key::hidden),
    detail::make_spec(opcode::layernorm, 2, 3, 1, "LayerNorm(x, w[, b])", param_key::eps, param_key::hidden),
    detail::make_spec(opcode::gemv_tile, 2, 3, 1, "out[.., n_off:n_off+N_tile] = x @ W[n_off:..].T (+ b)",
                      param_key::K, param_key::N_tile, param_key::n_off),
    detail::make_spec(opcode::gemm_tile, 2, 3, 1, "tiled GEMM (prefill/batch)", param_key::M_tile,
                      param_key::K, param_key::N_tile, param_key::n_off),
    detail::make_spec(opcode::attention_tile, 3, 4, 1, "GQA attention over a KV window", param_key::head_dim,
                      param_key::kv_start, param_key::kv_len, param_key::scale, param_key::n_heads,
                      param_key::n_kv_heads),
    detail::make_spec(opcode::rope, 2, 2, 1, "rotary embedding", param_key::head_dim, param_key::theta),
    detail::make_spec(opcode::silu_mul, 2, 2, 1, "SwiGLU silu(gate)*up"),
    detail::make_spec(opcode::gelu, 1, 1, 1, "GELU"),
    detail::make_spec(opcode::add, 2, 2, 1, "residual add"),
    detail::make_spec(opcode::mul, 1, 2, 1, "elementwise product / scale"),
    detail::make_spec(opcode::dequant, 2, 3, 1, "int4/int8 + scales -> fp tile", param_key::qdtype,
                      param_key::group),
    detail::make_spec(opcode::softmax, 1, 1, 1, "softmax over the last axis"),
    detail::make_spec(opcode::allreduce_shard, 1, 8, 1, "sum of shards"),
    detail::make_spec(opcode::kv_append, 2, 2, 1, "append new k/v into the KV cache at pos", param_key::pos),
    detail::make_spec(opcode::sample_argmax, 1, 1, 1, "greedy logits -> next token"),
    detail::make_spec(opcode::attention_combine, 2, 8, 1, "merge per-KV-block (o, m, l) flash partials"),
    detail::make_spec(opcode::rmsnorm_gemv, 3, 4, 1, "[x, norm_w, W(, b)]: GEMV_TILE of RMSNORM(x, norm_w)",
                      param_key::eps, param_key::hidden, param_key::K, param_key::N_tile, param_key::n_off),
    detail::make_spec(opcode::gemv_add, 3, 3, 1, "[x, W, r]: r + GEMV_TILE(x, W) over the tile", param_key::K,
                      param_key::N_tile, param_key::n_off),
    detail::make_spec(opcode::rmsnorm_swiglu, 4, 4, 1, "[x, norm_w, W_gate, W_up]: SILU_MUL of two GEMVs of RMSNORM(x)",
                      param_key::eps, param_key::hidden, param_key::K, param_key::N_tile, param_key::n_off),
    detail::make_spec(opcode::rmsnorm_gemv_rope, 4, 5, 1, "[x, norm_w, W, pos(, b)]: ROPE of a GEMV of RMSNORM(x)",
                      param_key::eps, param_key::hidden, param_key::K, param_key::head_dim, param_key::n_rot),
    detail::make_spec(opcode::rmsnorm_gemv_kv, 4, 6, 1,
                      "[x, norm_w, W, cache(, pos if n_rot > 0)(, b)] -> cache: KV_APPEND of a (ROPE of a) GEMV of "
                      "RMSNORM(x)",
                      param_key::eps, param_key::hidden, param_key::K, param_key::head_dim, param_key::n_rot,
                      param_key::pos),
    detail::make_spec(opcode::rmsnorm_rope, 3, 3, 1, "[x, norm_w, pos]: ROPE of a per-head RMSNORM (Qwen3's q)",
                      param_key::eps, param_key::hidden, param_key::head_dim, param_key::n_rot, param_key::theta),
    detail::make_spec(opcode::rmsnorm_rope_kv, 4, 4, 1,
                      "[x, norm_w, cache, pos] -> cache: KV_APPEND of ROPE of a per-head RMSNORM (Qwen3's k)",
                      param_key::eps, param_key::hidden, param_key::head_dim, param_key::n_rot, param_key::theta,
                      param_key::pos),
}};

constexpr const op_spec& spec(opcode op) { return op_registry[static_cast<std::size_t>(op)]; }

}  // namespace octo::ir
