// Q4_K blocks hold 256 elements: K = 896 (Qwen2.5-0.5B's hidden) cannot be Q4_K; Q8_0 (blocks of 32) can.
// EXPECT: octo::gemv: K is not a multiple of W.s quantization block.*k_fits_blocks<octo::q4_k, octo::extents<896, 896> >
#include "octo/graph/graph.hpp"
#include "octo/graph/ops.hpp"

constexpr bool build() {
  octo::graph g;
  auto x = g.input<octo::f32>("x", octo::extents<1, 896>{});
  auto good = g.weight<octo::q8_0>("w8", octo::extents<896, 896>{});
  auto bad = g.weight<octo::q4_k>("w4", octo::extents<896, 896>{});
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
