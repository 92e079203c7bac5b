// Small IO buffers live in host-visible memory: per-pass writes and reads are a memcpy (no staging copy,
// no extra submit), ordered correctly against the recorded program; large outputs still use staging.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "gpu_support.hpp"
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

// y = (x + w) + x (two dependent ADDs), big = copy of a large weight (an output past the host-IO limit).
ir::program program(std::int64_t n, std::int64_t big_n) {
  ir::program p;
  auto x = p.add_buffer("x", ir::buffer_kind::io_input, ir::dtype::f32, {1, n});
  auto w = p.add_buffer("w", ir::buffer_kind::weight, ir::dtype::f32, {1, n});
  auto h = p.add_buffer("h", ir::buffer_kind::activation, ir::dtype::f32, {1, n});
  auto y = p.add_buffer("y", ir::buffer_kind::io_output, ir::dtype::f32, {1, n});
  auto bw = p.add_buffer("big_w", ir::buffer_kind::weight, ir::dtype::f32, {1, big_n});
  auto big = p.add_buffer("big", ir::buffer_kind::io_output, ir::dtype::f32, {1, big_n});
  auto c0 = p.add_counter(), c1 = p.add_counter(), c2 = p.add_counter();
  p.add_task(make_task(ir::opcode::add, {x, w}, {h}, c0));
  p.add_task(make_task(ir::opcode::add, {h, x}, {y}, c1, {{c0, 1}}));
  p.add_task(make_task(ir::opcode::copy, {bw}, {big}, c2));
  return p;
}

}  // namespace

TEST_CASE("small IO is a memcpy: no staging transfer per pass, results equal the reference VM's") {
  const std::int64_t n = 1000, big_n = 100000;  // 4 KB IO; a 400 KB output (past the 256 KiB limit)
  const auto p = program(n, big_n);
  octo::vm::vulkan_vm vm(octo_test::small_options());
  vm.load(p);
  octo::vm::reference_vm ref(p);
  const auto w = octo_test::random_floats(static_cast<std::size_t>(n), 1);
  const auto bw = octo_test::random_floats(static_cast<std::size_t>(big_n), 2);
  vm.write("w", w);  // weights: device-local, through staging
  vm.write("big_w", bw);
  ref.write("w", w);
  ref.write("big_w", bw);

  const auto before = vm.stats().transfers;
  for (std::uint32_t pass = 0; pass < 4; ++pass) {
    // Each pass reads what the host wrote just before it and the host reads what it wrote: a missing
    // host->shader or shader->host dependency shows up as the previous pass's values.
    const auto x = octo_test::random_floats(static_cast<std::size_t>(n), 10 + pass);
    vm.write("x", x);
    ref.write("x", x);
    vm.execute();
    ref.run();
    const auto y = vm.read_f32("y");
    CHECK(y == ref.read_f32("y"));  // f32 adds: bit-identical
    for (std::size_t i = 0; i < y.size(); i += 101) {
      const double want = (static_cast<double>(x[i]) + w[i]) + x[i];
      CHECK(y[i] == doctest::Approx(want));
    }
  }
  CHECK(vm.stats().transfers == before);  // 4 writes and 4 reads of small IO: not one staging copy
  CHECK(vm.stats().submits == 4);

  // The large output comes back through one staging copy, and is right.
  const auto big = vm.read_f32("big");
  CHECK(vm.stats().transfers == before + 1);
  CHECK(big == bw);

  // Byte-level IO on the host-visible buffers too (write_bytes / read_bytes).
  std::vector<float> ones(static_cast<std::size_t>(n), 1.0f);
  vm.write_bytes("x", std::as_bytes(std::span<const float>(ones)));
  vm.execute();
  const auto yb = vm.read_bytes("y");
  REQUIRE(yb.size() == static_cast<std::size_t>(n) * 4);
  float y0 = 0;
  std::memcpy(&y0, yb.data(), 4);
  CHECK(y0 == (1.0f + w[0]) + 1.0f);
  CHECK(vm.stats().transfers == before + 1);
  octo_test::check_clean(vm);
}
