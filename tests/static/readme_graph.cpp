// Compiling is the test: the code of the README section "Write a transformer as a typed graph",
// verbatim between the markers; tests/unit/graph_readme_sync.cpp fails if the two drift apart.
// --- begin readme ---
#include <octo.hpp>

#include "octo/graph/freeze.hpp"
#include "octo/graph/graph.hpp"
#include "octo/graph/ops.hpp"
#include "octo/ir/validate.hpp"
#include "octo/models/configs.hpp"
#include "octo/models/decoder.hpp"

// One attention-free block: types carry dtype and extents; a K mismatch is a compile error.
constexpr auto prog = octo::freeze<[] {
  octo::graph g;
  auto x = g.input<octo::f32>("x", octo::extents<1, 64>{});
  auto w = g.weight<octo::f32>("norm.weight", octo::extents<64>{});
  auto wq = g.weight<octo::f16>("q.weight", octo::extents<64, 64>{});
  auto q = octo::gemv(octo::rmsnorm(x, w, 1e-6f), wq);
  g.output("q", q);
  return g.lower(octo::schedule_config{});
}>();
static_assert(octo::validate(prog).ok);

// The same graph as a constexpr function: no freezing needed where it is only checked.
constexpr octo::ir::program swiglu_block() {
  octo::graph g;
  auto x = g.input<octo::f32>("x", octo::extents<1, 64>{});
  auto norm = g.weight<octo::f32>("blk.0.ffn_norm.weight", octo::extents<64>{});
  auto gate = g.weight<octo::q8_0>("blk.0.ffn_gate.weight", octo::extents<128, 64>{});
  auto up = g.weight<octo::q8_0>("blk.0.ffn_up.weight", octo::extents<128, 64>{});
  auto down = g.weight<octo::q8_0>("blk.0.ffn_down.weight", octo::extents<64, 128>{});
  auto h = octo::rmsnorm(x, norm, 1e-6);
  auto y = octo::add(x, octo::gemv(octo::silu_mul(octo::gemv(h, gate), octo::gemv(h, up)), down));
  g.output("y", y);
  octo::schedule_config cfg;
  cfg.set_tile("gemv", "N_tile", 32);  // each 128-wide GEMV becomes 4 GEMV_TILE tasks on one counter
  return g.lower(cfg);
}
static_assert(octo::validate(swiglu_block()).ok);

// A whole model: the same function works at compile time (known config) and at run time (from GGUF).
static_assert(octo::validate(octo::models::decoder_step(octo::models::stories260k)).ok);
// --- end readme ---
