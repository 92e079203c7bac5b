// A vcpkg manifest-mode consumer of octo: include <octo.hpp>, prove a small program valid at compile time,
// run it on the CPU reference VM and check the result by hand.
#include <octo.hpp>

#include <array>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace {

// y = 2 * (a + b): an ADD, then a MUL (alpha = 2) that waits for it.
constexpr octo::ir::program make_program() {
  using namespace octo::ir;
  program p;
  const auto a = p.add_buffer("a", buffer_kind::io_input, dtype::f32, {1, 4});
  const auto b = p.add_buffer("b", buffer_kind::io_input, dtype::f32, {1, 4});
  const auto s = p.add_buffer("s", buffer_kind::activation, dtype::f32, {1, 4});
  const auto y = p.add_buffer("y", buffer_kind::io_output, dtype::f32, {1, 4});
  task add;
  add.op = opcode::add;
  add.inputs = {a, b};
  add.outputs = {s};
  add.out_counter = p.add_counter("added");
  add.label = "a + b";
  p.add_task(add);
  task mul;
  mul.op = opcode::mul;
  mul.inputs = {s};
  mul.outputs = {y};
  mul.out_counter = p.add_counter("scaled");
  mul.waits = {{add.out_counter, 1}};
  mul.params.set_real(param_key::alpha, 2.0);
  mul.label = "2 * s";
  p.add_task(mul);
  return p;
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
        std::fprintf(stderr, "octo_vcpkg_consumer: y[%zu] = %g, expected %g\n", i, static_cast<double>(y.at(i)),
                     static_cast<double>(expected[i]));
        return 1;
      }
  } catch (const octo::error& e) {
    std::fprintf(stderr, "octo_vcpkg_consumer: %s\n", e.what());
    return 1;
  }
  return 0;
}
