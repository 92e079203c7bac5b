// Programs on the Vulkan VM against the CPU reference VM: a COPY/ADD DAG (and its barrier count, hand
// computed), one recording serving two positions (KV_APPEND reads globals.pos), timeouts, refusals.
#include <doctest/doctest.h>

#include <cstdint>
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

//   x ─COPY(A)→ a ─┐
//   x,w ─ADD(B)→ b ─┴ADD(C)→ c ─┐
//   x ─COPY(D)→ d ──────────────┴ADD(E)→ e ─ADD(F, + x)→ y
// D has the highest id but no waits: it belongs to the first wavefront with A and B. Barriers: before
// C, before E, before F = 3.
ir::program dag(std::int64_t n) {
  ir::program p;
  auto x = p.add_buffer("x", ir::buffer_kind::io_input, ir::dtype::f32, {4, n / 4});
  auto w = p.add_buffer("w", ir::buffer_kind::weight, ir::dtype::f32, {n / 4});  // broadcast over rows
  auto a = p.add_buffer("a", ir::buffer_kind::activation, ir::dtype::f32, {4, n / 4});
  auto b = p.add_buffer("b", ir::buffer_kind::activation, ir::dtype::f32, {4, n / 4});
  auto c = p.add_buffer("c", ir::buffer_kind::activation, ir::dtype::f32, {4, n / 4});
  auto d = p.add_buffer("d", ir::buffer_kind::activation, ir::dtype::f32, {4, n / 4});
  auto e = p.add_buffer("e", ir::buffer_kind::activation, ir::dtype::f32, {4, n / 4});
  auto y = p.add_buffer("y", ir::buffer_kind::io_output, ir::dtype::f32, {4, n / 4});
  std::vector<std::int32_t> k;
  for (int i = 0; i < 6; ++i) k.push_back(p.add_counter());
  p.add_task(make_task(ir::opcode::copy, {x}, {a}, k[0]));                          // A
  p.add_task(make_task(ir::opcode::add, {x, w}, {b}, k[1]));                        // B
  p.add_task(make_task(ir::opcode::add, {a, b}, {c}, k[2], {{k[0], 1}, {k[1], 1}}));  // C
  p.add_task(make_task(ir::opcode::add, {c, d}, {e}, k[4], {{k[2], 1}, {k[3], 1}}));  // E
  p.add_task(make_task(ir::opcode::add, {e, x}, {y}, k[5], {{k[4], 1}}));             // F
  p.add_task(make_task(ir::opcode::copy, {x}, {d}, k[3]));                          // D
  return p;
}

}  // namespace

TEST_CASE("a COPY/ADD DAG matches the reference VM, with barriers only where waits need them") {
  const std::int64_t n = 4096;
  auto p = dag(n);
  octo::vm::reference_vm ref(p);
  octo::vm::vulkan_vm vm(octo_test::small_options());
  vm.load(p);
  auto s = vm.stats();
  CHECK(s.task_dispatches == 6);
  CHECK(s.barriers == 3);
  for (std::uint32_t seed : {1u, 2u}) {
    auto x = octo_test::random_floats(static_cast<std::size_t>(n), seed);
    auto w = octo_test::random_floats(static_cast<std::size_t>(n / 4), seed + 50);
    // Poison the output first so a skipped write cannot pass.
    vm.write("y", std::vector<float>(static_cast<std::size_t>(n), 12345.0f));
    vm.write("x", x);
    vm.write("w", w);
    ref.write("x", x);
    ref.write("w", w);
    vm.execute();
    ref.run();
    auto got = vm.read_f32("y");
    auto want = ref.read_f32("y");
    REQUIRE(got.size() == want.size());
    CHECK(got == want);  // f32 adds and copies: bit-identical
    // And an oracle of the test's own: y = 2x + (x + w) + x.
    for (std::size_t i = 0; i < got.size(); i += 97) {
      double xv = x[i], wv = w[i % static_cast<std::size_t>(n / 4)];
      CHECK(got[i] == doctest::Approx(xv + (xv + wv) + xv + xv));
    }
  }
  octo_test::check_clean(vm);
}

TEST_CASE("one recorded command buffer serves two tokens: set_position moves KV_APPEND") {
  const std::int64_t S = 8, D = 16;
  ir::program p;
  auto kv_new = p.add_buffer("kv_new", ir::buffer_kind::io_input, ir::dtype::f32, {1, D});
  auto cache = p.add_buffer("cache", ir::buffer_kind::kv_cache, ir::dtype::f32, {S, D});
  auto t = make_task(ir::opcode::kv_append, {kv_new, cache}, {cache}, p.add_counter());
  t.params.set(ir::param_key::pos, 0);
  p.add_task(t);

  octo::vm::vulkan_vm vm(octo_test::small_options());
  vm.load(p);
  octo::vm::reference_vm ref(p);
  std::vector<std::vector<float>> rows;
  for (std::uint32_t pos : {0u, 1u, 5u}) {
    rows.push_back(octo_test::random_floats(static_cast<std::size_t>(D), 20 + pos));
    vm.write("kv_new", rows.back());
    vm.set_position(pos);
    vm.execute();
    ref.write("kv_new", rows.back());
    ref.set_param(0, ir::param_key::pos, pos);  // the reference VM's params = base params + position
    ref.run();
  }
  CHECK(vm.stats().recordings == 1);
  CHECK(vm.stats().submits == 3);
  auto got = vm.read_f32("cache");
  CHECK(got == ref.read_f32("cache"));
  std::vector<float> want(static_cast<std::size_t>(S * D), 0.0f);
  std::uint32_t positions[] = {0, 1, 5};
  for (std::size_t r = 0; r < 3; ++r)
    for (std::int64_t j = 0; j < D; ++j) want[positions[r] * D + static_cast<std::size_t>(j)] = rows[r][static_cast<std::size_t>(j)];
  CHECK(got == want);
  octo_test::check_clean(vm);
}

TEST_CASE("a timeout is an error, and the VM recovers") {
  // 16 chained ADDs with a barrier between each: tens of microseconds even on an H100, and the wait
  // below polls with a zero timeout right after the submit.
  const std::int64_t n = 1 << 16;
  ir::program p;
  auto x = p.add_buffer("x", ir::buffer_kind::io_input, ir::dtype::f32, {n});
  std::int32_t prev = x;
  std::int32_t prev_counter = -1;
  for (int i = 0; i < 16; ++i) {
    auto kind = i == 15 ? ir::buffer_kind::io_output : ir::buffer_kind::activation;
    auto y = p.add_buffer("y" + std::to_string(i), kind, ir::dtype::f32, {n});
    auto c = p.add_counter();
    std::vector<ir::wait> waits;
    if (prev_counter >= 0) waits.push_back({prev_counter, 1});
    p.add_task(make_task(ir::opcode::add, {prev, x}, {y}, c, waits));
    prev = y;
    prev_counter = c;
  }
  octo::vm::vulkan_vm vm(octo_test::small_options());
  vm.load(p);
  std::vector<float> ones(static_cast<std::size_t>(n), 1.0f);
  vm.write("x", ones);
  vm.set_timeout(0);
  CHECK_THROWS_WITH_AS(vm.execute(), doctest::Contains("timeout"), octo::error);
  vm.set_timeout(120000);
  auto y = vm.read_f32("y15");  // waits for the pass that timed out, then reads
  CHECK(y[0] == 17.0f);
  CHECK(y[static_cast<std::size_t>(n - 1)] == 17.0f);
  vm.execute();
  CHECK(vm.stats().submits == 2);
  octo_test::check_clean(vm);
}

TEST_CASE("programs validate rejects are never loaded") {
  ir::program p;
  auto a = p.add_buffer("a", ir::buffer_kind::activation, ir::dtype::f32, {4});
  auto y = p.add_buffer("y", ir::buffer_kind::io_output, ir::dtype::f32, {4});
  p.add_task(make_task(ir::opcode::copy, {a}, {y}, p.add_counter()));  // reads `a`, which nothing writes
  octo::vm::vulkan_vm vm(octo_test::small_options());
  CHECK_THROWS_WITH_AS(vm.load(p), doctest::Contains("refused"), octo::error);
  CHECK_THROWS_WITH_AS(vm.execute(), doctest::Contains("before load"), octo::error);
  CHECK_THROWS_AS((void)vm.read_f32("y"), octo::error);
  // Wrong sizes and names are errors too.
  auto good = dag(64);
  vm.load(good);
  CHECK_THROWS_WITH_AS(vm.write("x", std::vector<float>(3)), doctest::Contains("holds 256 bytes"), octo::error);
  CHECK_THROWS_WITH_AS(vm.write("nope", std::vector<float>(3)), doctest::Contains("'nope'"), octo::error);
  CHECK_THROWS_AS(vm.read_register(0, 32, 4), octo::error);
  octo_test::check_clean(vm);
}
