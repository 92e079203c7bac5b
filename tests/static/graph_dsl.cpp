// Compiling is the test: DESIGN.md's user view (frozen into a constexpr variable), the typed ops'
// result shapes, tiling, and the small built-in model proven valid inside static_assert.
#include <octo.hpp>

#include "octo/graph/freeze.hpp"
#include "octo/graph/graph.hpp"
#include "octo/graph/ops.hpp"
#include "octo/ir/validate.hpp"
#include "octo/models/configs.hpp"
#include "octo/models/decoder.hpp"

namespace {

// DESIGN.md's snippet; the one deviation: `[] {...}()` becomes `octo::freeze<[] {...}>()`, because a
// constexpr variable cannot own the program's heap memory.
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
static_assert(prog.thaw().tasks.size() == 2);
static_assert(prog.thaw().buffers[2].source == "q.weight");

// The other pattern: a constexpr function, validated where it is called.
constexpr octo::ir::program tiled_block() {
  octo::graph g;
  auto x = g.input<octo::f32>("x", octo::extents<1, 64>{});
  auto w1 = g.weight<octo::q8_0>("w1", octo::extents<96, 64>{});
  auto w2 = g.weight<octo::f16>("w2", octo::extents<64, 96>{});
  auto h = octo::gemv(x, w1);                       // [1, 96]
  static_assert(std::is_same_v<decltype(h), octo::tensor<octo::f32, octo::extents<1, 96>>>);
  auto y = octo::add(x, octo::gemv(octo::gelu(h), w2));  // [1, 64]
  g.output("y", y);
  octo::schedule_config cfg;
  cfg.set_tile("gemv", "N_tile", 32);
  return g.lower(cfg);
}
static_assert(octo::validate(tiled_block()).ok);
// 96/32 = 3 tiles, 64/32 = 2 tiles, gelu, add
static_assert(tiled_block().tasks.size() == 3 + 1 + 2 + 1);
// the gelu waits for all three tiles of the first gemv on their shared counter
static_assert(tiled_block().tasks[3].waits.size() == 1 && tiled_block().tasks[3].waits[0].threshold == 3);
static_assert(tiled_block().tasks[1].params.get(octo::ir::param_key::n_off) == 32);

// dynamic extents: one API, the value carried
constexpr bool dynamic_rows() {
  octo::graph g;
  auto x = g.input<octo::f32>("x", octo::extents<octo::dyn, 64>{5});
  auto w = g.weight<octo::f16>("w", octo::extents<32, 64>{});
  auto y = octo::gemv(x, w);
  return y.extent(0) == 5 && y.extent(1) == 32 && decltype(y)::extents_type::static_extent(0) == octo::dyn;
}
static_assert(dynamic_rows());

// the smallest built-in model, both passes, under g++'s default constexpr limits
static_assert(octo::validate(octo::models::decoder_step(octo::models::stories260k)).ok);
static_assert(octo::validate(octo::models::decoder_step(octo::models::stories260k, {.argmax = true})).ok);
static_assert(octo::validate(octo::models::prefill(octo::models::stories260k, 8)).ok);

}  // namespace
