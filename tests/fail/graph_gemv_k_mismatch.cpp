// gemv with x [1, 64] and W [32, 128]: the K mismatch is a compile error naming the op and both shapes.
// EXPECT: octo::gemv: K mismatch.*gemv_k_matches<octo::extents<1, 64>, octo::extents<32, 128> >
#include "octo/graph/graph.hpp"
#include "octo/graph/ops.hpp"

constexpr bool build() {
  octo::graph g;
  auto x = g.input<octo::f32>("x", octo::extents<1, 64>{});
  auto good = g.weight<octo::f16>("w64", octo::extents<32, 64>{});
  auto bad = g.weight<octo::f16>("w128", octo::extents<32, 128>{});
  (void)good;
  (void)bad;
#ifdef OCTO_MUST_FAIL
  (void)octo::gemv(x, bad);
#else
  (void)octo::gemv(x, good);
#endif
  return true;
}
static_assert(build());
