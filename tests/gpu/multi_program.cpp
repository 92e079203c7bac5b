// Several programs on one Vulkan VM: WEIGHT and KV_CACHE buffers shared by name (written once, seen by
// every program), each program's own command buffer and IO, placements into regions, and one clear
// error for each misuse (size mismatch, unknown region, placement outside the region, removed program).
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gpu_support.hpp"
#include "octo/error.hpp"
#include "octo/ir/program.hpp"
#include "octo/vm/reference_vm.hpp"

namespace ir = octo::ir;
using octo::vm::buffer_placement;

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

constexpr std::int64_t S = 6, n = 48;

// The writer: appends x to the cache at the pass's position, y = x + w.
ir::program writer() {
  ir::program p;
  auto x = p.add_buffer("x", ir::buffer_kind::io_input, ir::dtype::f32, {1, n});
  auto w = p.add_buffer("w", ir::buffer_kind::weight, ir::dtype::f32, {1, n});
  auto cache = p.add_buffer("cache", ir::buffer_kind::kv_cache, ir::dtype::f32, {S, n});
  auto y = p.add_buffer("y", ir::buffer_kind::io_output, ir::dtype::f32, {1, n});
  auto t = make_task(ir::opcode::kv_append, {x, cache}, {cache}, p.add_counter());
  t.params.set(ir::param_key::pos, 0);
  p.add_task(t);
  p.add_task(make_task(ir::opcode::add, {x, w}, {y}, p.add_counter()));
  return p;
}

// The reader: out = copy of the whole cache, z = w + w. Never written by the host except its IO.
ir::program reader(std::int64_t w_width = n) {
  ir::program p;
  auto w = p.add_buffer("w", ir::buffer_kind::weight, ir::dtype::f32, {1, w_width});
  auto cache = p.add_buffer("cache", ir::buffer_kind::kv_cache, ir::dtype::f32, {S, n});
  auto out = p.add_buffer("out", ir::buffer_kind::io_output, ir::dtype::f32, {S, n});
  auto z = p.add_buffer("z", ir::buffer_kind::io_output, ir::dtype::f32, {1, w_width});
  p.add_task(make_task(ir::opcode::copy, {cache}, {out}, p.add_counter()));
  p.add_task(make_task(ir::opcode::add, {w, w}, {z}, p.add_counter()));
  return p;
}

// q = a + b where `b` is a weight (to be placed in a region).
ir::program adder(const char* weight, std::int64_t width) {
  ir::program p;
  auto a = p.add_buffer("a", ir::buffer_kind::io_input, ir::dtype::f32, {1, width});
  auto b = p.add_buffer(weight, ir::buffer_kind::weight, ir::dtype::f32, {1, width});
  auto q = p.add_buffer("q", ir::buffer_kind::io_output, ir::dtype::f32, {1, width});
  p.add_task(make_task(ir::opcode::add, {a, b}, {q}, p.add_counter()));
  return p;
}

std::string error_of(auto&& f) {
  try {
    f();
  } catch (const octo::error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("two programs share a weight and a KV cache by name: written once, seen by both") {
  octo::vm::vulkan_vm vm(octo_test::small_options());
  const auto a = vm.add_program(writer());
  const auto before = vm.stats().memory_in_use;
  const auto b = vm.add_program(reader());
  CHECK(a == 0u);
  CHECK(b == 1u);
  CHECK(vm.program_count() == 2);
  // The reader's own buffers are two small outputs (host memory): the shared cache and weight cost no
  // device memory again.
  CHECK(vm.stats().memory_in_use == before);

  const auto w = octo_test::random_floats(static_cast<std::size_t>(n), 1);
  vm.write_bytes(a, "w", std::as_bytes(std::span<const float>(w)));  // once, through the writer
  std::vector<std::vector<float>> xs;
  for (std::uint32_t pos = 0; pos < 3; ++pos) {
    xs.push_back(octo_test::random_floats(static_cast<std::size_t>(n), 10 + pos));
    vm.write_bytes(a, "x", std::as_bytes(std::span<const float>(xs.back())));
    vm.set_position(pos);
    vm.execute(a);
    const auto y = vm.read_f32(a, "y");
    for (std::size_t i = 0; i < y.size(); ++i) REQUIRE(y[i] == xs.back()[i] + w[i]);
  }
  vm.execute(b);
  const auto out = vm.read_f32(b, "out");
  REQUIRE(out.size() == static_cast<std::size_t>(S * n));
  for (std::int64_t r = 0; r < S; ++r)
    for (std::int64_t c = 0; c < n; ++c) {
      const float want = r < 3 ? xs[static_cast<std::size_t>(r)][static_cast<std::size_t>(c)] : 0.0f;
      REQUIRE(out[static_cast<std::size_t>(r * n + c)] == want);
    }
  const auto z = vm.read_f32(b, "z");
  for (std::size_t i = 0; i < z.size(); ++i) REQUIRE(z[i] == w[i] + w[i]);
  // read_into: the first bytes only.
  float first[2] = {0, 0};
  vm.read_into(b, "z", std::as_writable_bytes(std::span<float>(first)));
  CHECK(first[0] == w[0] + w[0]);
  CHECK(first[1] == w[1] + w[1]);

  // Per-program statistics: one recording each, their own submits.
  CHECK(vm.stats(a).submits == 3);
  CHECK(vm.stats(b).submits == 1);
  CHECK(vm.stats(b).recordings == 1);
  CHECK(vm.stats().recordings == 2);

  // Removing the writer keeps the shared buffers for the reader.
  vm.remove_program(a);
  CHECK(vm.program_count() == 1);
  vm.execute(b);
  CHECK(vm.read_f32(b, "out") == out);
  CHECK(error_of([&] { vm.execute(a); }).find("no program with id 0") != std::string::npos);
  octo_test::check_clean(vm);
}

TEST_CASE("a program loaded with load() shares with programs added after it; load() clears them all") {
  octo::vm::vulkan_vm vm(octo_test::small_options());
  vm.load(writer());
  const auto w = octo_test::random_floats(static_cast<std::size_t>(n), 2);
  vm.write("w", w);
  const auto b = vm.add_program(reader());
  vm.execute(b);
  const auto z = vm.read_f32(b, "z");
  for (std::size_t i = 0; i < z.size(); ++i) REQUIRE(z[i] == w[i] + w[i]);
  vm.load(writer());
  CHECK(vm.program_count() == 1);
  CHECK(error_of([&] { vm.execute(b); }).find("no program with id 1") != std::string::npos);
  // The new program starts from zeroed memory: nothing of the old weight survives.
  const auto x = octo_test::random_floats(static_cast<std::size_t>(n), 3);
  vm.write("x", x);
  vm.execute();
  CHECK(vm.read_f32("y") == x);
  octo_test::check_clean(vm);
}

TEST_CASE("placements: a weight in a region, written by name, against the reference VM") {
  const std::int64_t width = 300;
  octo::vm::vulkan_vm vm(octo_test::small_options());
  vm.create_region("slot", 64 * 1024);
  CHECK(vm.region_bytes("slot") == 64 * 1024);
  const buffer_placement at[] = {{"b", "slot", 4096}};
  const auto p = adder("b", width);
  const auto id = vm.add_program(p, at);
  const auto bv = octo_test::random_floats(static_cast<std::size_t>(width), 4);
  const auto av = octo_test::random_floats(static_cast<std::size_t>(width), 5);
  vm.write_bytes(id, "b", std::as_bytes(std::span<const float>(bv)));
  vm.write_bytes(id, "a", std::as_bytes(std::span<const float>(av)));
  vm.execute(id);
  octo::vm::reference_vm ref(p);
  ref.write("a", av);
  ref.write("b", bv);
  ref.run();
  CHECK(vm.read_f32(id, "q") == ref.read_f32("q"));
  // A second program placing its weight at the same bytes sees the first one's data.
  const buffer_placement same[] = {{"b2", "slot", 4096}};
  const auto id2 = vm.add_program(adder("b2", width), same);
  vm.write_bytes(id2, "a", std::as_bytes(std::span<const float>(av)));
  vm.execute(id2);
  CHECK(vm.read_f32(id2, "q") == ref.read_f32("q"));
  octo_test::check_clean(vm);
}

TEST_CASE("multi-program misuse: one clear octo::error each, the VM stays usable") {
  octo::vm::vulkan_vm vm(octo_test::small_options());
  const auto a = vm.add_program(writer());
  vm.create_region("slot", 1024);

  auto e = error_of([&] { vm.add_program(reader(n + 4)); });
  CHECK(e.find("'w'") != std::string::npos);
  CHECK(e.find("shared by name") != std::string::npos);
  CHECK(e.find(std::to_string(n * 4) + " bytes") != std::string::npos);

  const buffer_placement unknown[] = {{"b", "nowhere", 0}};
  e = error_of([&] { vm.add_program(adder("b", 16), unknown); });
  CHECK(e.find("no region named 'nowhere'") != std::string::npos);

  const buffer_placement outside[] = {{"b", "slot", 1024 - 32}};  // 64 bytes at 992 in 1024
  e = error_of([&] { vm.add_program(adder("b", 16), outside); });
  CHECK(e.find("does not fit region 'slot' (1024 bytes)") != std::string::npos);

  const buffer_placement misaligned[] = {{"b", "slot", 8}};
  e = error_of([&] { vm.add_program(adder("b", 16), misaligned); });
  CHECK(e.find("not a multiple of 16") != std::string::npos);

  const buffer_placement no_buffer[] = {{"nope", "slot", 0}};
  e = error_of([&] { vm.add_program(adder("b", 16), no_buffer); });
  CHECK(e.find("no buffer named 'nope'") != std::string::npos);

  e = error_of([&] { vm.create_region("slot", 16); });
  CHECK(e.find("exists already") != std::string::npos);
  e = error_of([&] { vm.execute(7); });
  CHECK(e.find("no program with id 7") != std::string::npos);
  e = error_of([&] { vm.write_bytes(a, "missing", {}); });
  CHECK(e.find("no buffer named 'missing'") != std::string::npos);

  // Nothing half-added: still one program, and it runs.
  CHECK(vm.program_count() == 1);
  const auto x = octo_test::random_floats(static_cast<std::size_t>(n), 6);
  vm.write_bytes(a, "x", std::as_bytes(std::span<const float>(x)));
  vm.execute(a);
  CHECK(vm.read_f32(a, "y") == x);  // w is zero
  // The failed adds released what they took: a program of the right shape still fits and shares.
  const auto b = vm.add_program(reader());
  vm.execute(b);
  CHECK(vm.read_f32(b, "out")[0] == x[0]);
  octo_test::check_clean(vm);
}
