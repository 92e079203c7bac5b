// Compile-time benchmark: a synthetic chain of OCTO_NODES typed nodes (rmsnorm -> gemv -> add blocks),
// built, lowered and validated inside one static_assert. Cost should grow no worse than N log N.
#include "octo/graph/graph.hpp"
#include "octo/graph/ops.hpp"
#include "octo/ir/validate.hpp"

#ifndef OCTO_NODES
#define OCTO_NODES 256
#endif

constexpr octo::ir::program synthetic() {
  octo::graph g;
  auto x = g.input<octo::f32>("x", octo::extents<1, 64>{});
  auto norm = g.weight<octo::f32>("norm.weight", octo::extents<64>{});
  auto w = g.weight<octo::f16>("w", octo::extents<64, 64>{});
  // each block adds 3 op nodes; repetition is a value-level loop, the types are one block's
  for (int i = 0; i < OCTO_NODES / 3; ++i) x = octo::add(x, octo::gemv(octo::rmsnorm(x, norm, 1e-6), w));
  g.output("y", octo::scale(x, 1.0));
  return g.lower(octo::schedule_config{});
}
static_assert(octo::validate(synthetic()).ok);
