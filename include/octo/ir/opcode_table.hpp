// The opcode table: the one list of opcodes, from which the IR's enum, names and op_registry are
// expanded, and against which every layer is checked at compile time (ir::by_opcode, op_registry.hpp).
#pragma once

// One row per opcode, in code order (the code is the IR's canonical number: append, never renumber):
//   X(identifier, code, "NAME", min inputs, max inputs, outputs, "note", required params...)
// Inputs are capped by abi_max_inputs; the required params are those that make the op mathematically
// well defined (docs/ir.md §7), which validate() demands.
//
// How to add an opcode:
//   1. Append a row here. Everything in the IR (enum, name, arity, required params) follows from it.
//   2. Build. Each layer keeps its own per-opcode table and the build fails, naming the opcode in the
//      "[with ... Op = octo::ir::opcode::<name>; ... Rows = <table>]" line, until that table has its row:
//        reference_rows   src/vm/reference_vm.cpp: its reference semantics (include/octo/semantics/<name>.hpp)
//        kernel_rows      src/vulkan/kernels/registry.cpp: its Vulkan planner, or no_kernel with the reason
//        builder_rows     tests/static/opcode_coverage.cpp: a graph built with its DSL builder
//                         (include/octo/graph/ops/), or no_builder with the reason
//   3. Document its numerics in docs/opcodes.md (unit_opcode_docs fails without its row). A new shader
//      module goes in shaders/variants.cmake (or is a shaders/<name>.comp of its own); unit_vk_kernel_plans
//      fails until every compiled module is reached by a planned task and each push-constant block a
//      planner packs matches the one its module declares. Add the new opcode's tasks to that test.
#define OCTO_OPCODE_TABLE(X)                                                                                 \
  X(nop, 0, "NOP", 0, 0, 0, "no-op")                                                                          \
  X(copy, 1, "COPY", 1, 1, 1, "page to page move")                                                            \
  X(embed, 2, "EMBED", 2, 2, 1, "[ids, table[V,H]] -> gathered rows", param_key::hidden)                      \
  X(rmsnorm, 3, "RMSNORM", 2, 2, 1, "x*rsqrt(mean(x^2)+eps)*w", param_key::eps, param_key::hidden)            \
  X(layernorm, 4, "LAYERNORM", 2, 3, 1, "LayerNorm(x, w[, b])", param_key::eps, param_key::hidden)            \
  X(gemv_tile, 5, "GEMV_TILE", 2, 3, 1, "out[.., n_off:n_off+N_tile] = x @ W[n_off:..].T (+ b)", param_key::K, \
    param_key::N_tile, param_key::n_off)                                                                      \
  X(gemm_tile, 6, "GEMM_TILE", 2, 3, 1, "tiled GEMM (prefill/batch)", param_key::M_tile, param_key::K,       \
    param_key::N_tile, param_key::n_off)                                                                      \
  X(attention_tile, 7, "ATTENTION_TILE", 3, 4, 1, "GQA attention over a KV window", param_key::head_dim,       \
    param_key::kv_start, param_key::kv_len, param_key::scale, param_key::n_heads, param_key::n_kv_heads)      \
  X(rope, 8, "ROPE", 2, 2, 1, "rotary embedding", param_key::head_dim, param_key::theta)                      \
  X(silu_mul, 9, "SILU_MUL", 2, 2, 1, "SwiGLU silu(gate)*up")                                                 \
  X(gelu, 10, "GELU", 1, 1, 1, "GELU")                                                                        \
  X(add, 11, "ADD", 2, 2, 1, "residual add")                                                                  \
  X(mul, 12, "MUL", 1, 2, 1, "elementwise product / scale")                                                   \
  X(dequant, 13, "DEQUANT", 2, 3, 1, "int4/int8 + scales -> fp tile", param_key::qdtype, param_key::group)    \
  X(softmax, 14, "SOFTMAX", 1, 1, 1, "softmax over the last axis")                                            \
  X(allreduce_shard, 15, "ALLREDUCE_SHARD", 1, 8, 1, "sum of shards")                                         \
  X(kv_append, 16, "KV_APPEND", 2, 2, 1, "append new k/v into the KV cache at pos", param_key::pos)           \
  X(sample_argmax, 17, "SAMPLE_ARGMAX", 1, 1, 1, "greedy logits -> next token")                               \
  X(attention_combine, 18, "ATTENTION_COMBINE", 2, 8, 1, "merge per-KV-block (o, m, l) flash partials")      \
  /* The fused decode ops (docs/opcodes.md "Fused ops"): each is the composition of the plain ops it */        \
  /* names, made by lowering from schedule_config::fusion_grouping (docs/ir.md 5.1). */                        \
  X(rmsnorm_gemv, 19, "RMSNORM_GEMV", 3, 4, 1, "[x, norm_w, W(, b)]: GEMV_TILE of RMSNORM(x, norm_w)",           \
    param_key::eps, param_key::hidden, param_key::K, param_key::N_tile, param_key::n_off)                     \
  X(gemv_add, 20, "GEMV_ADD", 3, 3, 1, "[x, W, r]: r + GEMV_TILE(x, W) over the tile", param_key::K,           \
    param_key::N_tile, param_key::n_off)                                                                      \
  X(rmsnorm_swiglu, 21, "RMSNORM_SWIGLU", 4, 4, 1, "[x, norm_w, W_gate, W_up]: SILU_MUL of two GEMVs of RMSNORM(x)", \
    param_key::eps, param_key::hidden, param_key::K, param_key::N_tile, param_key::n_off)                     \
  X(rmsnorm_gemv_rope, 22, "RMSNORM_GEMV_ROPE", 4, 5, 1, "[x, norm_w, W, pos(, b)]: ROPE of a GEMV of RMSNORM(x)", \
    param_key::eps, param_key::hidden, param_key::K, param_key::head_dim, param_key::n_rot)                   \
  X(rmsnorm_gemv_kv, 23, "RMSNORM_GEMV_KV", 4, 6, 1,                                                          \
    "[x, norm_w, W, cache(, pos if n_rot > 0)(, b)] -> cache: KV_APPEND of a (ROPE of a) GEMV of RMSNORM(x)",  \
    param_key::eps, param_key::hidden, param_key::K, param_key::head_dim, param_key::n_rot, param_key::pos)   \
  X(rmsnorm_rope, 24, "RMSNORM_ROPE", 3, 3, 1, "[x, norm_w, pos]: ROPE of a per-head RMSNORM (Qwen3's q)",     \
    param_key::eps, param_key::hidden, param_key::head_dim, param_key::n_rot, param_key::theta)               \
  X(rmsnorm_rope_kv, 25, "RMSNORM_ROPE_KV", 4, 4, 1,                                                          \
    "[x, norm_w, cache, pos] -> cache: KV_APPEND of ROPE of a per-head RMSNORM (Qwen3's k)", param_key::eps,   \
    param_key::hidden, param_key::head_dim, param_key::n_rot, param_key::theta, param_key::pos)                \
  /* Qwen3's q and k in one task each: the per-head norm between the GEMV and RoPE (both norms take eps). */   \
  X(rmsnorm_gemv_norm_rope, 26, "RMSNORM_GEMV_NORM_ROPE", 5, 5, 1,                                            \
    "[x, norm_w, W, head_norm_w, pos]: ROPE of a per-head RMSNORM of a GEMV of RMSNORM(x) (Qwen3's q)",       \
    param_key::eps, param_key::hidden, param_key::K, param_key::head_dim, param_key::n_rot, param_key::theta) \
  X(rmsnorm_gemv_norm_kv, 27, "RMSNORM_GEMV_NORM_KV", 6, 6, 1,                                                \
    "[x, norm_w, W, head_norm_w, cache, pos] -> cache: KV_APPEND of RMSNORM_GEMV_NORM_ROPE (Qwen3's k)",      \
    param_key::eps, param_key::hidden, param_key::K, param_key::head_dim, param_key::n_rot, param_key::pos) \
  /* One norm's q, k and v projections in one task (docs/ir.md 5.1): q rotated, k rotated into its cache,  */  \
  /* v into its cache unrotated; three outputs, the caches written and not read.                           */  \
  X(rmsnorm_gemv_qkv, 28, "RMSNORM_GEMV_QKV", 6, 7, 3,                                                        \
    "[x, norm_w, W_q, W_k, W_v, pos(, b_qkv)] -> q, k_cache, v_cache: RMSNORM_GEMV_ROPE (q), RMSNORM_GEMV_KV (k, v)", \
    param_key::eps, param_key::hidden, param_key::K, param_key::head_dim, param_key::n_rot, param_key::pos) \
  /* Qwen3's form: q and k with their per-head norms (their weights one after another in hn_qk).        */  \
  X(rmsnorm_gemv_norm_qkv, 29, "RMSNORM_GEMV_NORM_QKV", 7, 7, 3,                                              \
    "[x, norm_w, W_q, W_k, W_v, pos, hn_qk] -> q, k_cache, v_cache: RMSNORM_GEMV_NORM_ROPE (q), RMSNORM_GEMV_NORM_KV (k), RMSNORM_GEMV_KV (v)", \
    param_key::eps, param_key::hidden, param_key::K, param_key::head_dim, param_key::n_rot, param_key::pos)
