// SwiGLU's gate and up must have equal extents.
// EXPECT: octo::silu_mul: gate and up must have equal extents
#include "octo/graph/graph.hpp"
#include "octo/graph/ops.hpp"

constexpr bool build() {
  octo::graph g;
  auto a = g.input<octo::f32>("a", octo::extents<1, 48>{});
  auto b = g.input<octo::f32>("b", octo::extents<1, 48>{});
  auto c = g.input<octo::f32>("c", octo::extents<1, 40>{});
  (void)b;
  (void)c;
#ifdef OCTO_MUST_FAIL
  (void)octo::silu_mul(a, c);
#else
  (void)octo::silu_mul(a, b);
#endif
  return true;
}
static_assert(build());
