// rmsnorm's weight must be as long as a row.
// EXPECT: octo::rmsnorm: x.s last extent differs from w.s length.*norm_width_matches<octo::extents<1, 64>, octo::extents<32> >
#include "octo/graph/graph.hpp"
#include "octo/graph/ops.hpp"

constexpr bool build() {
  octo::graph g;
  auto x = g.input<octo::f32>("x", octo::extents<1, 64>{});
  auto good = g.weight<octo::f32>("n64", octo::extents<64>{});
  auto bad = g.weight<octo::f32>("n32", octo::extents<32>{});
  (void)good;
  (void)bad;
#ifdef OCTO_MUST_FAIL
  (void)octo::rmsnorm(x, bad, 1e-6);
#else
  (void)octo::rmsnorm(x, good, 1e-6);
#endif
  return true;
}
static_assert(build());
