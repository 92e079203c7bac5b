// add broadcasts a row [H] over a's rows, nothing else.
// EXPECT: octo::add: b must have a.s extents, or be one row \[H\] broadcast over a.s rows.*broadcasts_to<octo::extents<4, 16>, octo::extents<8> >
#include "octo/graph/graph.hpp"
#include "octo/graph/ops.hpp"

constexpr bool build() {
  octo::graph g;
  auto a = g.input<octo::f32>("a", octo::extents<4, 16>{});
  auto row = g.input<octo::f32>("row", octo::extents<16>{});
  auto bad = g.input<octo::f32>("bad", octo::extents<8>{});
  (void)row;
  (void)bad;
#ifdef OCTO_MUST_FAIL
  (void)octo::add(a, bad);
#else
  (void)octo::add(a, row);
#endif
  return true;
}
static_assert(build());
