// An integer tensor is not a weight of a GEMV.
// EXPECT: octo::gemv: W must be a float or block-quantized weight
#include "octo/graph/graph.hpp"
#include "octo/graph/ops.hpp"

constexpr bool build() {
  octo::graph g;
  auto x = g.input<octo::f32>("x", octo::extents<1, 8>{});
  auto ids = g.input<octo::i32>("ids", octo::extents<4, 8>{});
  auto w = g.weight<octo::f32>("w", octo::extents<4, 8>{});
  (void)ids;
  (void)w;
#ifdef OCTO_MUST_FAIL
  (void)octo::gemv(x, ids);
#else
  (void)octo::gemv(x, w);
#endif
  return true;
}
static_assert(build());
