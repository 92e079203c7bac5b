// attention's k and v caches must have equal extents.
// EXPECT: octo::attention: k and v must have equal extents
#include "octo/graph/graph.hpp"
#include "octo/graph/ops.hpp"

constexpr bool build() {
  octo::graph g;
  auto q = g.input<octo::f32>("q", octo::extents<1, 32>{});
  auto k = g.kv_cache<octo::f32>("k", octo::extents<8, 16>{});
  auto v = g.kv_cache<octo::f32>("v", octo::extents<8, 16>{});
  auto v2 = g.kv_cache<octo::f32>("v2", octo::extents<4, 16>{});
  (void)v;
  (void)v2;
  const octo::attention_params a{.n_heads = 4, .n_kv_heads = 2, .head_dim = 8, .kv_len = 1};
#ifdef OCTO_MUST_FAIL
  (void)octo::attention(q, k, v2, a);
#else
  (void)octo::attention(q, k, v, a);
#endif
  return true;
}
static_assert(build());
