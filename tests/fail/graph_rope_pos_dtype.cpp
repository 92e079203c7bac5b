// RoPE positions are i32.
// EXPECT: octo::rope: pos must be i32
#include "octo/graph/graph.hpp"
#include "octo/graph/ops.hpp"

constexpr bool build() {
  octo::graph g;
  auto x = g.input<octo::f32>("x", octo::extents<2, 16>{});
  auto pos = g.input<octo::i32>("pos", octo::extents<2>{});
  auto fpos = g.input<octo::f32>("fpos", octo::extents<2>{});
  (void)pos;
  (void)fpos;
#ifdef OCTO_MUST_FAIL
  (void)octo::rope(x, fpos, {.head_dim = 8});
#else
  (void)octo::rope(x, pos, {.head_dim = 8});
#endif
  return true;
}
static_assert(build());
