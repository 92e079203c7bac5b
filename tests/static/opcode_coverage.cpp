// Compiling is the test: the graph DSL's column of the opcode table (include/octo/ir/opcode_table.hpp).
// Each opcode has a row here, or the build fails naming it (ir::by_opcode): a small graph built with
// its builder (include/octo/graph/ops/), checked below to lower to a task of that opcode, or
// no_builder with the reason the DSL has none.
#include <string_view>

#include "octo/graph/graph.hpp"
#include "octo/graph/ops.hpp"
#include "octo/ir/op_registry.hpp"
#include "octo/ir/validate.hpp"
#include "octo/models/decoder.hpp"

namespace {

using octo::ir::opcode;

struct builder_row {
  opcode op;
  octo::ir::program (*example)();  // null: no builder
  std::string_view no_builder;
};

constexpr builder_row no_builder(opcode op, std::string_view reason) { return {op, nullptr, reason}; }

// One float input x [2, 64] and weights of matching widths.
struct inputs {
  octo::graph g;
  octo::tensor<octo::f32, octo::extents<2, 64>> x = g.input<octo::f32>("x", octo::extents<2, 64>{});
  octo::tensor<octo::f32, octo::extents<64>> w = g.weight<octo::f32>("w", octo::extents<64>{});
  constexpr octo::ir::program lower(const auto& y) {
    g.output("y", y);
    return g.lower(octo::schedule_config{});
  }
  /// As lower, with every fusion a decode step gets.
  constexpr octo::ir::program fused(const auto& y) {
    g.output("y", y);
    return g.lower(octo::models::fused_decode_schedule());
  }
};

constexpr builder_row builder_rows[] = {
    no_builder(opcode::nop, "a schedule placeholder, never a value in a graph"),
    no_builder(opcode::copy, "a page move a scheduler inserts; a graph value is never copied"),
    {opcode::embed,
     [] {
       inputs in;
       auto ids = in.g.input<octo::i32>("ids", octo::extents<2>{});
       return in.lower(octo::embed(ids, in.g.weight<octo::f16>("table", octo::extents<100, 64>{})));
     },
     {}},
    {opcode::rmsnorm, [] { inputs in; return in.lower(octo::rmsnorm(in.x, in.w, 1e-6)); }, {}},
    {opcode::layernorm, [] { inputs in; return in.lower(octo::layernorm(in.x, in.w, in.w, 1e-5)); }, {}},
    {opcode::gemv_tile,
     [] {
       inputs in;
       return in.lower(octo::gemv(in.x, in.g.weight<octo::q8_0>("wq", octo::extents<32, 64>{})));
     },
     {}},
    {opcode::gemm_tile,
     [] {
       inputs in;
       return in.lower(octo::gemm(in.x, in.g.weight<octo::f16>("wq", octo::extents<32, 64>{})));
     },
     {}},
    {opcode::attention_tile,
     [] {
       inputs in;
       auto kc = in.g.kv_cache<octo::f32>("k", octo::extents<8, 32>{});
       auto vc = in.g.kv_cache<octo::f32>("v", octo::extents<8, 32>{});
       return in.lower(octo::attention(in.x, kc, vc, {.n_heads = 2, .n_kv_heads = 1, .head_dim = 32, .kv_len = 2}));
     },
     {}},
    {opcode::rope,
     [] {
       inputs in;
       auto pos = in.g.input<octo::i32>("pos", octo::extents<2>{});
       return in.lower(octo::rope(in.x, pos, {.head_dim = 32}));
     },
     {}},
    {opcode::silu_mul, [] { inputs in; return in.lower(octo::silu_mul(in.x, in.x)); }, {}},
    {opcode::gelu, [] { inputs in; return in.lower(octo::gelu(in.x)); }, {}},
    {opcode::add, [] { inputs in; return in.lower(octo::add(in.x, in.w)); }, {}},
    {opcode::mul, [] { inputs in; return in.lower(octo::scale(in.x, 0.5)); }, {}},
    no_builder(opcode::dequant, "graph weights stay quantized; every kernel that reads one dequantizes it"),
    {opcode::softmax, [] { inputs in; return in.lower(octo::softmax(in.x)); }, {}},
    no_builder(opcode::allreduce_shard, "the graph is one device's; sharding is not lowered yet"),
    {opcode::kv_append,
     [] {
       inputs in;
       // The appended cache is written in place, so a value read from it is the output.
       auto kc = octo::kv_append(in.g.kv_cache<octo::f32>("k", octo::extents<8, 64>{}), in.x, 0);
       return in.lower(octo::attention(in.x, kc, kc, {.n_heads = 2, .n_kv_heads = 2, .head_dim = 32, .kv_len = 2}));
     },
     {}},
    {opcode::sample_argmax, [] { inputs in; return in.lower(octo::argmax(in.x)); }, {}},
    no_builder(opcode::attention_combine,
               "split-KV attention is planned below the graph (the engine's decode over KV blocks)"),
    // The fused ops have no builder of their own: lowering makes them from plain ops' chains named in
    // schedule_config::fusion_grouping (docs/ir.md 5.1), which these examples ask for.
    {opcode::rmsnorm_gemv,
     [] {
       inputs in;
       return in.fused(octo::gemv(octo::rmsnorm(in.x, in.w, 1e-6), in.g.weight<octo::q8_0>("wq", octo::extents<32, 64>{})));
     },
     {}},
    {opcode::gemv_add,
     [] {
       inputs in;
       return in.fused(octo::add(in.x, octo::gemv(in.x, in.g.weight<octo::f16>("wo", octo::extents<64, 64>{}))));
     },
     {}},
    {opcode::rmsnorm_swiglu,
     [] {
       inputs in;
       const auto h = octo::rmsnorm(in.x, in.w, 1e-6);
       return in.fused(octo::silu_mul(octo::gemv(h, in.g.weight<octo::q8_0>("wg", octo::extents<32, 64>{})),
                                      octo::gemv(h, in.g.weight<octo::q8_0>("wu", octo::extents<32, 64>{}))));
     },
     {}},
    {opcode::rmsnorm_gemv_rope,
     [] {
       inputs in;
       auto pos = in.g.input<octo::i32>("pos", octo::extents<2>{});
       const auto q = octo::gemv(octo::rmsnorm(in.x, in.w, 1e-6), in.g.weight<octo::f16>("wq", octo::extents<64, 64>{}));
       return in.fused(octo::rope(q, pos, {.head_dim = 32}));
     },
     {}},
    {opcode::rmsnorm_gemv_kv,
     [] {
       inputs in;
       auto pos = in.g.input<octo::i32>("pos", octo::extents<2>{});
       const auto k = octo::gemv(octo::rmsnorm(in.x, in.w, 1e-6), in.g.weight<octo::f16>("wk", octo::extents<64, 64>{}));
       auto kc = octo::kv_append(in.g.kv_cache<octo::f32>("k", octo::extents<8, 64>{}), octo::rope(k, pos, {.head_dim = 32}), 0);
       return in.fused(octo::attention(in.x, kc, kc, {.n_heads = 2, .n_kv_heads = 2, .head_dim = 32, .kv_len = 2}));
     },
     {}},
    {opcode::rmsnorm_rope,
     [] {
       inputs in;
       auto pos = in.g.input<octo::i32>("pos", octo::extents<2>{});
       const auto wh = in.g.weight<octo::f32>("q_norm", octo::extents<32>{});
       return in.fused(octo::rope(octo::head_rmsnorm(in.x, wh, 1e-6), pos, {.head_dim = 32}));
     },
     {}},
    {opcode::rmsnorm_rope_kv,
     [] {
       inputs in;
       auto pos = in.g.input<octo::i32>("pos", octo::extents<2>{});
       const auto wh = in.g.weight<octo::f32>("k_norm", octo::extents<32>{});
       auto kc = octo::kv_append(in.g.kv_cache<octo::f16>("k", octo::extents<8, 64>{}),
                                 octo::rope(octo::head_rmsnorm(in.x, wh, 1e-6), pos, {.head_dim = 32}), 0);
       return in.fused(octo::attention(in.x, kc, kc, {.n_heads = 2, .n_kv_heads = 2, .head_dim = 32, .kv_len = 2}));
     },
     {}},
    {opcode::rmsnorm_gemv_norm_rope,
     [] {
       inputs in;
       auto pos = in.g.input<octo::i32>("pos", octo::extents<2>{});
       const auto q = octo::gemv(octo::rmsnorm(in.x, in.w, 1e-6), in.g.weight<octo::q8_0>("wq", octo::extents<64, 64>{}));
       const auto wh = in.g.weight<octo::f32>("q_norm", octo::extents<32>{});
       return in.fused(octo::rope(octo::head_rmsnorm(q, wh, 1e-6), pos, {.head_dim = 32}));
     },
     {}},
    {opcode::rmsnorm_gemv_norm_kv,
     [] {
       inputs in;
       auto pos = in.g.input<octo::i32>("pos", octo::extents<2>{});
       const auto k = octo::gemv(octo::rmsnorm(in.x, in.w, 1e-6), in.g.weight<octo::q8_0>("wk", octo::extents<64, 64>{}));
       const auto wh = in.g.weight<octo::f32>("k_norm", octo::extents<32>{});
       auto kc = octo::kv_append(in.g.kv_cache<octo::f16>("k", octo::extents<8, 64>{}),
                                 octo::rope(octo::head_rmsnorm(k, wh, 1e-6), pos, {.head_dim = 32}), 0);
       return in.fused(octo::attention(in.x, kc, kc, {.n_heads = 2, .n_kv_heads = 2, .head_dim = 32, .kv_len = 2}));
     },
     {}},
    {opcode::rmsnorm_gemv_qkv,
     [] {
       inputs in;
       auto pos = in.g.input<octo::i32>("pos", octo::extents<1>{});
       // one row: a decode step's (the Q|K|V task is one row's)
       const auto h = octo::rmsnorm(in.g.input<octo::f32>("x1", octo::extents<1, 64>{}), in.w, 1e-6);
       const auto q = octo::rope(octo::gemv(h, in.g.weight<octo::q8_0>("wq", octo::extents<64, 64>{})), pos, {.head_dim = 32});
       const auto k = octo::rope(octo::gemv(h, in.g.weight<octo::q8_0>("wk", octo::extents<64, 64>{})), pos, {.head_dim = 32});
       const auto v = octo::gemv(h, in.g.weight<octo::q8_0>("wv", octo::extents<64, 64>{}));
       auto kc = octo::kv_append(in.g.kv_cache<octo::f16>("k", octo::extents<8, 64>{}), k, 0);
       auto vc = octo::kv_append(in.g.kv_cache<octo::f16>("v", octo::extents<8, 64>{}), v, 0);
       return in.fused(octo::attention(q, kc, vc, {.n_heads = 2, .n_kv_heads = 2, .head_dim = 32, .kv_len = 2}));
     },
     {}},
    {opcode::rmsnorm_gemv_norm_qkv,
     [] {
       inputs in;
       auto pos = in.g.input<octo::i32>("pos", octo::extents<1>{});
       // Qwen3's: q and k through their per-head norms
       const auto h = octo::rmsnorm(in.g.input<octo::f32>("x1", octo::extents<1, 64>{}), in.w, 1e-6);
       const auto qn = in.g.weight<octo::f32>("q_norm", octo::extents<32>{});
       const auto kn = in.g.weight<octo::f32>("k_norm", octo::extents<32>{});
       const auto q = octo::rope(octo::head_rmsnorm(octo::gemv(h, in.g.weight<octo::q8_0>("wq", octo::extents<64, 64>{})), qn, 1e-6),
                                 pos, {.head_dim = 32});
       const auto k = octo::rope(octo::head_rmsnorm(octo::gemv(h, in.g.weight<octo::q8_0>("wk", octo::extents<64, 64>{})), kn, 1e-6),
                                 pos, {.head_dim = 32});
       const auto v = octo::gemv(h, in.g.weight<octo::q8_0>("wv", octo::extents<64, 64>{}));
       auto kc = octo::kv_append(in.g.kv_cache<octo::f16>("k", octo::extents<8, 64>{}), k, 0);
       auto vc = octo::kv_append(in.g.kv_cache<octo::f16>("v", octo::extents<8, 64>{}), v, 0);
       return in.fused(octo::attention(q, kc, vc, {.n_heads = 2, .n_kv_heads = 2, .head_dim = 32, .kv_len = 2}));
     },
     {}},
};

constexpr auto builder_table = octo::ir::by_opcode<builder_rows>();

// Each example is a valid program holding a task of its row's opcode.
constexpr bool example_emits(const builder_row& row) {
  if (!row.example) return !row.no_builder.empty();
  const auto p = row.example();
  if (!octo::validate(p).ok) return false;
  for (const auto& t : p.tasks)
    if (t.op == row.op) return true;
  return false;
}
template <std::size_t I>
constexpr bool emits = example_emits(builder_table[I]);

static_assert([]<std::size_t... I>(std::index_sequence<I...>) {
  return (emits<I> && ...);
}(std::make_index_sequence<builder_table.size()>{}));

}  // namespace
