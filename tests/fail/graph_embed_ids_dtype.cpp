// Token ids are i32; a float tensor of ids is a compile error.
// EXPECT: octo::embed: ids must be i32
#include "octo/graph/graph.hpp"
#include "octo/graph/ops.hpp"

constexpr bool build() {
  octo::graph g;
  auto ids = g.input<octo::i32>("ids", octo::extents<4>{});
  auto fids = g.input<octo::f32>("fids", octo::extents<4>{});
  auto table = g.weight<octo::f16>("token_embd.weight", octo::extents<100, 16>{});
  (void)ids;
  (void)fids;
#ifdef OCTO_MUST_FAIL
  (void)octo::embed(fids, table);
#else
  (void)octo::embed(ids, table);
#endif
  return true;
}
static_assert(build());
