// A KV cache appended to this pass may only be read by tasks ordered after the append.
// EXPECT: "race: ATTENTION_TILE#1 reads KV cache buffer 2 \(k_cache\) without being ordered after KV_APPEND#0
#include <octo/ir/static_check.hpp>

using namespace octo::ir;

constexpr program make() {
  program p;
  auto q = p.add_buffer("q", buffer_kind::io_input, dtype::f32, {1, 8});
  auto kn = p.add_buffer("k_new", buffer_kind::io_input, dtype::f32, {1, 8});
  auto cache = p.add_buffer("k_cache", buffer_kind::kv_cache, dtype::f32, {4, 8});
  auto o = p.add_buffer("o", buffer_kind::io_output, dtype::f32, {1, 8});
  auto c0 = p.add_counter("appended"), c1 = p.add_counter("attended");
  task app{0, opcode::kv_append, {kn, cache}, {cache}, c0, {}, {}, unassigned_sm, 0, 0, {}};
  app.params.set(param_key::pos, 0);
  p.add_task(app);
  task att{0, opcode::attention_tile, {q, cache, cache}, {o}, c1, {{c0, 1}}, {}, unassigned_sm, 0, 0, {}};
  att.params.set(param_key::head_dim, 8).set(param_key::kv_start, 0).set(param_key::kv_len, 1);
  att.params.set_real(param_key::scale, 0.35).set(param_key::n_heads, 1).set(param_key::n_kv_heads, 1);
#ifdef OCTO_MUST_FAIL
  att.waits.clear();
#endif
  p.add_task(att);
  return p;
}
OCTO_STATIC_VALIDATE(make);
