// seeds/000's success criteria 1, 2, 3 and 6 on the Vulkan VM, with float64 oracles computed here.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "gpu_support.hpp"
#include "octo/error.hpp"
#include "octo/ir/program.hpp"

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

/// Instance program: R30 = <inbox> + bias, where the inbox is R0 (first instance) or R31.
ir::program add_bias_program(const char* inbox, std::int64_t n) {
  ir::program p;
  auto x = p.add_buffer(inbox, ir::buffer_kind::io_input, ir::dtype::f32, {1, n});
  auto b = p.add_buffer("bias", ir::buffer_kind::weight, ir::dtype::f32, {n});
  auto y = p.add_buffer("R30", ir::buffer_kind::io_output, ir::dtype::f32, {1, n});
  p.add_task(make_task(ir::opcode::add, {x, b}, {y}, p.add_counter()));
  return p;
}

double norm2(const std::vector<float>& v, std::size_t n) {
  double s = 0;
  for (std::size_t i = 0; i < n; ++i) s += static_cast<double>(v[i]) * v[i];
  return std::sqrt(s);
}

}  // namespace

TEST_CASE("criterion 1: boot, write a register, one dispatch, read a register: a correct matvec") {
  const std::int64_t K = 300, N = 37;
  ir::program p;
  auto x = p.add_buffer("R0", ir::buffer_kind::io_input, ir::dtype::f32, {1, K});
  auto w = p.add_buffer("W", ir::buffer_kind::weight, ir::dtype::f32, {N, K});
  auto y = p.add_buffer("R1", ir::buffer_kind::io_output, ir::dtype::f32, {1, N});
  auto t = make_task(ir::opcode::gemv_tile, {x, w}, {y}, p.add_counter());
  t.params.set(ir::param_key::K, K).set(ir::param_key::N_tile, N).set(ir::param_key::n_off, 0);
  p.add_task(t);

  octo::vm::vulkan_vm vm(octo_test::small_options());
  vm.load(p);
  auto xs = octo_test::random_floats(K, 1);
  auto ws = octo_test::random_floats(static_cast<std::size_t>(N * K), 2);
  vm.write("W", ws);
  vm.write_register(0, 0, xs);
  vm.execute();
  auto out = vm.read_register(0, 1, static_cast<std::size_t>(N));
  CHECK(vm.stats().task_dispatches == 1);
  CHECK(vm.stats().barriers == 0);
  for (std::int64_t n = 0; n < N; ++n) {
    double ref = 0;
    for (std::int64_t k = 0; k < K; ++k) ref += static_cast<double>(xs[static_cast<std::size_t>(k)]) * ws[static_cast<std::size_t>(n * K + k)];
    CHECK(out[static_cast<std::size_t>(n)] == doctest::Approx(ref).epsilon(1e-5));
  }
  // The named buffer and the register are the same memory.
  CHECK(vm.read_f32("R1") == out);
  octo_test::check_clean(vm);
}

TEST_CASE("criterion 2: a 3-instance chain passes messages R30 -> R31") {
  const std::int64_t n = 100;
  std::vector<ir::program> chain{add_bias_program("R0", n), add_bias_program("R31", n), add_bias_program("R31", n)};
  auto o = octo_test::small_options();
  o.instances = 3;
  octo::vm::vulkan_vm vm(o);
  vm.load(chain);
  auto x = octo_test::random_floats(n, 3);
  std::vector<std::vector<float>> bias;
  for (std::uint32_t i = 0; i < 3; ++i) {
    bias.push_back(octo_test::random_floats(n, 10 + i));
    vm.write("bias", bias.back(), i);
  }
  vm.write("R0", x, 0);
  vm.execute();
  for (std::uint32_t i = 0; i < 3; ++i) {
    auto out = vm.read_f32("R30", i);
    for (std::int64_t k = 0; k < n; ++k) {
      float expect = x[static_cast<std::size_t>(k)];
      for (std::uint32_t j = 0; j <= i; ++j) expect += bias[j][static_cast<std::size_t>(k)];  // same order of f32 adds
      REQUIRE(out[static_cast<std::size_t>(k)] == expect);
    }
    if (i > 0) {
      // The inbox holds the previous outbox exactly (scale 1 in observe mode), telemetry included.
      auto inbox = vm.read_register(i, 31, static_cast<std::size_t>(n + 4));
      auto prev = vm.read_register(i - 1, 30, static_cast<std::size_t>(n + 4));
      CHECK(inbox == prev);
    }
  }
  // Three instances: 3 adds, 3 regulators, 2 messages, and a barrier between each dependent pair.
  auto s = vm.stats();
  CHECK(s.task_dispatches == 3);
  CHECK(s.dispatches == 8);
  CHECK(s.barriers == 7);
  octo_test::check_clean(vm);
}

TEST_CASE("criterion 3: the regulator detects exploding activations and corrects them") {
  const std::int64_t n = 64;
  std::vector<ir::program> chain{add_bias_program("R0", n), add_bias_program("R31", n)};
  auto x = octo_test::random_floats(n, 5);
  auto big = octo_test::random_floats(n, 6, 100.0f, 200.0f);  // explodes: norm ~ 1200
  std::vector<float> zero(static_cast<std::size_t>(n), 0.0f);
  std::vector<float> h0(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < h0.size(); ++i) h0[i] = x[i] + big[i];
  const double norm0 = norm2(h0, h0.size());
  double max0 = 0;
  for (float v : h0) max0 = std::max(max0, static_cast<double>(std::fabs(v)));

  for (auto mode : {octo::vm::regulator_mode::observe, octo::vm::regulator_mode::regulate}) {
    CAPTURE(static_cast<int>(mode));
    auto o = octo_test::small_options();
    o.instances = 2;
    o.regulator = mode;
    o.target_norm = 10.0f;
    octo::vm::vulkan_vm vm(o);
    vm.load(chain);
    vm.write("bias", big, 0);
    vm.write("bias", zero, 1);
    vm.write("R0", x, 0);
    vm.execute();
    auto m0 = vm.metrics(0);
    CHECK(m0.activation_norm == doctest::Approx(norm0).epsilon(1e-5));
    CHECK(m0.max_abs == doctest::Approx(max0).epsilon(1e-6));
    CHECK((m0.status_flags & 1u) == 1u);  // anomaly: norm > 2 x target
    CHECK_FALSE(m0.has_nan);
    CHECK(m0.layer_idx == 0.0f);
    CHECK(m0.memory_used == doctest::Approx(n * 4));  // the bias weight
    auto m1 = vm.metrics(1);
    auto out1 = vm.read_f32("R30", 1);
    if (mode == octo::vm::regulator_mode::observe) {
      CHECK(vm.scale_factor(1) == 1.0f);
      CHECK(norm2(out1, out1.size()) == doctest::Approx(norm0).epsilon(1e-5));
      CHECK((m1.status_flags & 1u) == 1u);
    } else {
      CHECK(vm.scale_factor(1) == doctest::Approx(10.0 / norm0).epsilon(1e-5));
      CHECK(norm2(out1, out1.size()) == doctest::Approx(10.0).epsilon(1e-4));  // corrected to the target
      CHECK(m1.activation_norm == doctest::Approx(10.0).epsilon(1e-4));
      CHECK(m1.status_flags == 0u);
    }
    // Telemetry words follow the outbox's data (seeds/000 message format).
    auto r30 = vm.read_register(0, 30, static_cast<std::size_t>(n + 4));
    CHECK(r30[static_cast<std::size_t>(n)] == m0.activation_norm);
    CHECK(r30[static_cast<std::size_t>(n + 1)] == m0.max_abs);
    octo_test::check_clean(vm);
  }
}

TEST_CASE("the regulator flags NaN and Inf") {
  const std::int64_t n = 40;
  auto p = add_bias_program("R0", n);
  octo::vm::vulkan_vm vm(octo_test::small_options());
  vm.load(p);
  std::vector<float> x(static_cast<std::size_t>(n), 1.0f), b(static_cast<std::size_t>(n), 0.0f);
  x[7] = std::nanf("");
  x[9] = INFINITY;
  vm.write("R0", x);
  vm.write("bias", b);
  vm.execute();
  auto m = vm.metrics(0);
  CHECK(m.has_nan);
  CHECK(m.has_inf);
  CHECK(m.status_flags == (1u | 2u | 4u));
  CHECK(m.activation_norm == doctest::Approx(std::sqrt(38.0)));  // finite values only
  x[7] = 2.0f;
  x[9] = -3.0f;
  vm.write("R0", x);
  vm.execute();
  m = vm.metrics(0);
  CHECK_FALSE(m.has_nan);
  CHECK_FALSE(m.has_inf);
  CHECK(m.status_flags == 0u);  // no target: only non-finite values are anomalies
  CHECK(m.max_abs == 3.0f);
  octo_test::check_clean(vm);
}

TEST_CASE("criterion 6: the CPU does no work between submit and wait: one recording, one submit per pass") {
  const std::int64_t n = 256;
  auto p = add_bias_program("R0", n);
  octo::vm::vulkan_vm vm(octo_test::small_options());
  vm.load(p);
  auto s0 = vm.stats();
  CHECK(s0.recordings == 1);
  CHECK(s0.submits == 0);
  auto b = octo_test::random_floats(n, 8);
  vm.write("bias", b);
  for (int pass = 0; pass < 5; ++pass) {
    auto x = octo_test::random_floats(n, 100 + static_cast<std::uint32_t>(pass));
    vm.write("R0", x);
    vm.execute();
    auto y = vm.read_f32("R30");
    for (std::size_t i = 0; i < x.size(); ++i) REQUIRE(y[i] == x[i] + b[i]);
  }
  auto s = vm.stats();
  CHECK(s.recordings == 1);  // execute() never records: the command buffer from load() is resubmitted
  CHECK(s.submits == 5);     // exactly one vkQueueSubmit per execute
  CHECK(s.dispatches == s0.dispatches);
  octo_test::check_clean(vm);
}
