// vulkan_options::profile: one GPU time per dispatched task in recording order, named by opcode and first
// output, with results unchanged against the reference VM; nothing recorded when profiling is off.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "gpu_support.hpp"
#include "octo/error.hpp"
#include "octo/ir/program.hpp"
#include "octo/vm/reference_vm.hpp"

namespace ir = octo::ir;

namespace {

ir::task make_task(ir::opcode op, std::vector<std::int32_t> in, std::vector<std::int32_t> out, std::int32_t counter,
                   std::vector<ir::wait> waits = {}) {
  ir::task t;
  t.op = op;
  t.inputs = std::move(in);
  t.outputs = std::move(out);
  t.out_counter = counter;
  t.waits = std::move(waits);
  return t;
}

// h = W x (GEMV_TILE), y = h + b (ADD), z = copy of x (COPY, independent of the other two).
ir::program chain(std::int64_t K, std::int64_t N) {
  ir::program p;
  auto x = p.add_buffer("x", ir::buffer_kind::io_input, ir::dtype::f32, {1, K});
  auto w = p.add_buffer("W", ir::buffer_kind::weight, ir::dtype::f32, {N, K});
  auto b = p.add_buffer("bias", ir::buffer_kind::weight, ir::dtype::f32, {1, N});
  auto h = p.add_buffer("h", ir::buffer_kind::activation, ir::dtype::f32, {1, N});
  auto y = p.add_buffer("y", ir::buffer_kind::io_output, ir::dtype::f32, {1, N});
  auto z = p.add_buffer("z", ir::buffer_kind::io_output, ir::dtype::f32, {1, K});
  auto c0 = p.add_counter(), c1 = p.add_counter(), c2 = p.add_counter();
  auto t = make_task(ir::opcode::gemv_tile, {x, w}, {h}, c0);
  t.params.set(ir::param_key::K, K).set(ir::param_key::N_tile, N).set(ir::param_key::n_off, 0);
  p.add_task(t);
  p.add_task(make_task(ir::opcode::add, {h, b}, {y}, c1, {{c0, 1}}));
  p.add_task(make_task(ir::opcode::copy, {x}, {z}, c2));
  return p;
}

}  // namespace

TEST_CASE("profile: one record per task with opcode, first output and a positive GPU time") {
  const std::int64_t K = 1024, N = 512;
  const auto p = chain(K, N);
  auto xs = octo_test::random_floats(static_cast<std::size_t>(K), 1);
  auto ws = octo_test::random_floats(static_cast<std::size_t>(N * K), 2);
  auto bs = octo_test::random_floats(static_cast<std::size_t>(N), 3);

  auto o = octo_test::small_options();
  o.profile = true;
  octo::vm::vulkan_vm vm(o);
  vm.load(p);
  CHECK(vm.profile().empty());  // nothing has run yet
  vm.write("x", xs);
  vm.write("W", ws);
  vm.write("bias", bs);
  vm.execute();

  const auto prof = vm.profile();
  REQUIRE(prof.size() == 3);
  // Recording order: the first wavefront (GEMV, COPY) then the ADD.
  CHECK(prof[0].task == 0);
  CHECK(prof[0].opcode == "GEMV_TILE");
  CHECK(prof[0].output == "h");
  CHECK(prof[1].task == 2);
  CHECK(prof[1].opcode == "COPY");
  CHECK(prof[1].output == "z");
  CHECK(prof[2].task == 1);
  CHECK(prof[2].opcode == "ADD");
  CHECK(prof[2].output == "y");
  for (const auto& r : prof) {
    CAPTURE(r.opcode);
    CHECK(r.instance == 0u);
    CHECK(std::isfinite(r.microseconds));
    CHECK(r.microseconds >= 0.0);
    CHECK(r.microseconds < 10e6);  // under 10 s: not a wrapped or garbage counter
  }
  // A 512x1024 matvec (2 MiB of weights) is not free, even on a fast GPU.
  CHECK(prof[0].microseconds > 0.0);

  // Profiling serializes tasks but changes no result: the float64 oracle and the reference VM agree.
  octo::vm::reference_vm ref(p);
  ref.write("x", xs);
  ref.write("W", ws);
  ref.write("bias", bs);
  ref.run();
  const auto y = vm.read_f32("y");
  const auto want = ref.read_f32("y");
  REQUIRE(want.size() == y.size());
  for (std::size_t i = 0; i < y.size(); ++i) REQUIRE(y[i] == doctest::Approx(want[i]).epsilon(1e-4));
  for (std::int64_t n = 0; n < N; n += 37) {
    double acc = bs[static_cast<std::size_t>(n)];
    for (std::int64_t k = 0; k < K; ++k)
      acc += static_cast<double>(xs[static_cast<std::size_t>(k)]) * ws[static_cast<std::size_t>(n * K + k)];
    CHECK(y[static_cast<std::size_t>(n)] == doctest::Approx(acc).epsilon(1e-4));
  }
  CHECK(vm.read_f32("z") == xs);
  // Serialized: a barrier before each task after the first (one more than the plan's single barrier).
  CHECK(vm.stats().barriers == 2);
  octo_test::check_clean(vm);
}

TEST_CASE("profile off: no records and the usual barrier plan") {
  octo::vm::vulkan_vm vm(octo_test::small_options());
  if (const char* env = std::getenv("OCTO_PROFILE"); env && std::string(env) != "0") return;  // forced on by the env
  vm.load(chain(64, 32));
  vm.write("x", octo_test::random_floats(64, 4));
  vm.execute();
  CHECK(vm.profile().empty());
  CHECK(vm.stats().barriers == 1);
  octo_test::check_clean(vm);
}
