// New K/V rows must be as wide as the cache.
// EXPECT: octo::kv_append: kv_new.s width differs from the cache.s.*kv_width_matches<octo::extents<16, 32>, octo::extents<1, 64> >
#include "octo/graph/graph.hpp"
#include "octo/graph/ops.hpp"

constexpr bool build() {
  octo::graph g;
  auto cache = g.kv_cache<octo::f32>("k_cache", octo::extents<16, 32>{});
  auto k = g.input<octo::f32>("k", octo::extents<1, 32>{});
  auto wide = g.input<octo::f32>("wide", octo::extents<1, 64>{});
  (void)k;
  (void)wide;
#ifdef OCTO_MUST_FAIL
  (void)octo::kv_append(cache, wide, 0);
#else
  (void)octo::kv_append(cache, k, 0);
#endif
  return true;
}
static_assert(build());
