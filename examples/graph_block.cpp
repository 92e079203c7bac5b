// A pre-norm SwiGLU feed-forward block written as a typed graph, proven valid at compile time, then
// run on the CPU reference VM. The graph:
//
//        x [1,64] ─────────────────────────────────────────────┐
//          │                                                   │
//     rmsnorm(·, ffn_norm [64])                                │
//          │                                                   │
//      ┌───┴──────────────┐                                    │
//   gemv(·, gate [128,64])  gemv(·, up [128,64])   (4 tiles each, N_tile = 32)
//      └───┬──────────────┘                                    │
//       silu_mul                                               │
//          │                                                   │
//   gemv(·, down [64,128])                         (2 tiles)   │
//          │                                                   │
//         add ◄────────────────────────────────────────────────┘
//          │
//       y [1,64]  (output)
#include <cmath>
#include <cstdio>
#include <vector>

#include <octo.hpp>

#include "octo/graph/freeze.hpp"
#include "octo/graph/graph.hpp"
#include "octo/graph/ops.hpp"
#include "octo/ir/validate.hpp"
#include "octo/vm/reference_vm.hpp"

// Frozen: a constexpr variable holding the lowered program (see the README, "Write a transformer as a typed graph").
constexpr auto block = octo::freeze<[] {
  octo::graph g;
  auto x = g.input<octo::f32>("x", octo::extents<1, 64>{});
  auto norm = g.weight<octo::f32>("blk.0.ffn_norm.weight", octo::extents<64>{});
  auto gate = g.weight<octo::f32>("blk.0.ffn_gate.weight", octo::extents<128, 64>{});
  auto up = g.weight<octo::f32>("blk.0.ffn_up.weight", octo::extents<128, 64>{});
  auto down = g.weight<octo::f32>("blk.0.ffn_down.weight", octo::extents<64, 128>{});
  auto h = octo::rmsnorm(x, norm, 1e-6);
  auto y = octo::add(x, octo::gemv(octo::silu_mul(octo::gemv(h, gate), octo::gemv(h, up)), down));
  g.output("y", y);
  octo::schedule_config cfg;
  cfg.set_tile("gemv", "N_tile", 32);
  return g.lower(cfg);
}>();
static_assert(octo::validate(block).ok, "the block's schedule is proven deadlock- and race-free");

int main() {
  const octo::ir::program p = block;
  std::printf("%s", octo::validate(p).report().str().c_str());
  octo::vm::reference_vm vm(p);
  auto fill = [](std::size_t n, double f) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(std::sin(f * static_cast<double>(i + 1)) * 0.2);
    return v;
  };
  std::vector<float> ones(64, 1.0f);
  vm.write("blk.0.ffn_norm.weight", ones);
  vm.write("blk.0.ffn_gate.weight", fill(128 * 64, 0.37));
  vm.write("blk.0.ffn_up.weight", fill(128 * 64, 0.11));
  vm.write("blk.0.ffn_down.weight", fill(64 * 128, 0.23));
  vm.write("x", fill(64, 1.3));
  vm.run();
  const auto y = vm.read_f32("y");
  std::printf("ran %zu tasks; y[0..3] = %.5f %.5f %.5f %.5f\n", p.tasks.size(), static_cast<double>(y[0]),
              static_cast<double>(y[1]), static_cast<double>(y[2]), static_cast<double>(y[3]));
  return 0;
}
