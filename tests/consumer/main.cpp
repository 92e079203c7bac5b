// A program outside the octo tree, built against an installed octo: include <octo.hpp>, prove a small
// program valid at compile time, run it on the CPU reference VM and check the result by hand.
#include <octo.hpp>

#include <array>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace {

// y = 2 * (a + b) as a typed graph: an ADD, then a MUL by 2 that waits for it. The extents are static,
// so a shape mismatch here would be a compile error.
constexpr octo::ir::program make_program() {
  octo::graph g;
  auto a = g.input<octo::f32>("a", octo::extents<1, 4>{});
  auto b = g.input<octo::f32>("b", octo::extents<1, 4>{});
  g.output("y", octo::scale(octo::add(a, b), 2.0));
  return g.lower(octo::schedule_config{});
}
static_assert(octo::validate(make_program()).ok, "the consumer's program must validate at compile time");
static_assert(make_program().tasks.size() == 2);

}  // namespace

int main() {
  try {
    const std::array<float, 4> a{1.0f, 2.0f, 3.0f, 4.0f};
    const std::array<float, 4> b{0.5f, -1.0f, 0.25f, 10.0f};
    const std::array<float, 4> expected{3.0f, 2.0f, 6.5f, 28.0f};  // 2 * (a + b), by hand
    octo::vm::reference_vm vm(make_program());
    vm.write("a", a);
    vm.write("b", b);
    vm.run();
    const std::vector<float> y = vm.read_f32("y");
    std::printf("octo %s: 2 * (a + b) on the reference VM = [%g, %g, %g, %g]\n", std::string(octo::version()).c_str(),
                static_cast<double>(y.at(0)), static_cast<double>(y.at(1)), static_cast<double>(y.at(2)),
                static_cast<double>(y.at(3)));
    for (std::size_t i = 0; i < expected.size(); ++i)
      if (y.at(i) != expected[i]) {
        std::fprintf(stderr, "consumer: y[%zu] = %g, expected %g\n", i, static_cast<double>(y.at(i)),
                     static_cast<double>(expected[i]));
        return 1;
      }
  } catch (const octo::error& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 1;
  }
  return 0;
}
