// A value-level rule in constant evaluation: q [1, 32] cannot hold 3 heads of 8; the note names the op.
// EXPECT: octo::attention: q.s width must be n_heads\*head_dim
#include "octo/graph/graph.hpp"
#include "octo/graph/ops.hpp"

constexpr bool build() {
  octo::graph g;
  auto q = g.input<octo::f32>("q", octo::extents<1, 32>{});
  auto k = g.kv_cache<octo::f32>("k", octo::extents<8, 8>{});
  auto v = g.kv_cache<octo::f32>("v", octo::extents<8, 8>{});
#ifdef OCTO_MUST_FAIL
  (void)octo::attention(q, k, v, {.n_heads = 3, .n_kv_heads = 1, .head_dim = 8, .kv_len = 1});
#else
  (void)octo::attention(q, k, v, {.n_heads = 4, .n_kv_heads = 1, .head_dim = 8, .kv_len = 1});
#endif
  return true;
}
static_assert(build());
