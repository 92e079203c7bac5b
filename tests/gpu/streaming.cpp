// Streaming primitives of the Vulkan VM: pinned host memory, upload_async into a region on the transfer
// queue (the compute queue where there is none), submit after an upload, and the ordering of a second
// upload behind the program that still reads the first (after_compute). Results against the reference VM.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
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

constexpr std::int64_t K = 256, N = 64;  // W: 64 x 256 f32 = 64 KiB, a "layer" streamed into a slot

// y = W x, W a weight that will live in region "slot".
ir::program layer(const char* out) {
  ir::program p;
  auto x = p.add_buffer("x", ir::buffer_kind::io_input, ir::dtype::f32, {1, K});
  auto w = p.add_buffer("W", ir::buffer_kind::weight, ir::dtype::f32, {N, K});
  auto y = p.add_buffer(out, ir::buffer_kind::io_output, ir::dtype::f32, {1, N});
  auto t = make_task(ir::opcode::gemv_tile, {x, w}, {y}, p.add_counter());
  t.params.set(ir::param_key::K, K).set(ir::param_key::N_tile, N).set(ir::param_key::n_off, 0);
  p.add_task(t);
  return p;
}

std::vector<float> reference(const ir::program& p, const char* out, const std::vector<float>& x,
                             const std::vector<float>& w) {
  octo::vm::reference_vm ref(p);
  ref.write("x", x);
  ref.write("W", w);
  ref.run();
  return ref.read_f32(out);
}

void check_close(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) REQUIRE(got[i] == doctest::Approx(want[i]).epsilon(1e-5));
}

std::string error_of(auto&& f) {
  try {
    f();
  } catch (const octo::error& e) {
    return e.what();
  }
  return "(no error)";
}

constexpr std::uint64_t w_bytes = std::uint64_t{N * K * 4};

}  // namespace

TEST_CASE("upload_async into a region, then submit after the upload: the program reads the uploaded weight") {
  octo::vm::vulkan_vm vm(octo_test::small_options());
  MESSAGE("separate transfer queue: " << vm.device().separate_transfer_queue);
  vm.create_region("slot", 2 * w_bytes);
  auto pin = vm.allocate_pinned(w_bytes);
  REQUIRE(pin.data != nullptr);
  CHECK(reinterpret_cast<std::uintptr_t>(pin.data) % 4096 == 0);
  CHECK(pin.bytes == w_bytes);

  const auto p = layer("y");
  const buffer_placement at[] = {{"W", "slot", w_bytes}};  // the second half of the slot
  const auto id = vm.add_program(p, at);
  const auto x = octo_test::random_floats(static_cast<std::size_t>(K), 1);
  const auto w = octo_test::random_floats(static_cast<std::size_t>(N * K), 2);
  vm.write_bytes(id, "x", std::as_bytes(std::span<const float>(x)));

  std::memcpy(pin.data, w.data(), w_bytes);
  CHECK(vm.completed_upload() == 0);
  const auto up = vm.upload_async(pin.id, 0, "slot", w_bytes, w_bytes);
  CHECK(up == 1);
  const auto done = vm.submit(id, up);
  CHECK(done == 1);
  vm.wait_compute(done);
  CHECK(vm.completed_compute() >= done);
  CHECK(vm.completed_upload() >= up);
  const auto y = vm.read_f32(id, "y");
  check_close(y, reference(p, "y", x, w));
  // And against a float64 oracle of the test's own.
  for (std::int64_t r = 0; r < N; r += 7) {
    double acc = 0;
    for (std::int64_t k = 0; k < K; ++k) acc += double(x[std::size_t(k)]) * w[std::size_t(r * K + k)];
    CHECK(y[std::size_t(r)] == doctest::Approx(acc).epsilon(1e-4));
  }
  vm.free_pinned(pin.id);
  octo_test::check_clean(vm);
}

TEST_CASE("ordering: an upload with after_compute overwrites the slot only after the program that reads it ran") {
  octo::vm::vulkan_vm vm(octo_test::small_options());
  vm.create_region("slot", w_bytes);
  auto pin1 = vm.allocate_pinned(w_bytes);
  auto pin2 = vm.allocate_pinned(w_bytes);
  const auto p1 = layer("y1"), p2 = layer("y2");
  const buffer_placement at[] = {{"W", "slot", 0}};
  const auto a = vm.add_program(p1, at);
  const auto b = vm.add_program(p2, at);
  const auto x = octo_test::random_floats(static_cast<std::size_t>(K), 3);
  const auto w1 = octo_test::random_floats(static_cast<std::size_t>(N * K), 4);
  const auto w2 = octo_test::random_floats(static_cast<std::size_t>(N * K), 5);
  vm.write_bytes(a, "x", std::as_bytes(std::span<const float>(x)));
  vm.write_bytes(b, "x", std::as_bytes(std::span<const float>(x)));
  std::memcpy(pin1.data, w1.data(), w_bytes);
  std::memcpy(pin2.data, w2.data(), w_bytes);

  // Layer 1 into the slot; program a reads it; layer 2 replaces it once a is done; program b reads it.
  // Everything is queued before the host waits once.
  for (int round = 0; round < 3; ++round) {
    CAPTURE(round);
    const auto u1 = vm.upload_async(pin1.id, 0, "slot", 0, w_bytes, vm.completed_compute());
    const auto c1 = vm.submit(a, u1);
    const auto u2 = vm.upload_async(pin2.id, 0, "slot", 0, w_bytes, c1);
    const auto c2 = vm.submit(b, u2);
    CHECK(u2 == u1 + 1);
    CHECK(c2 == c1 + 1);
    vm.wait_compute(c2);
    check_close(vm.read_f32(a, "y1"), reference(p1, "y1", x, w1));
    check_close(vm.read_f32(b, "y2"), reference(p2, "y2", x, w2));
  }
  // The synchronous path still works beside the timelines.
  vm.execute(a);
  check_close(vm.read_f32(a, "y1"), reference(p1, "y1", x, w2));  // the slot holds layer 2 now
  vm.free_pinned(pin1.id);
  vm.free_pinned(pin2.id);
  octo_test::check_clean(vm);
}

TEST_CASE("streaming misuse: one clear octo::error each") {
  octo::vm::vulkan_vm vm(octo_test::small_options());
  vm.create_region("slot", 1024);
  auto pin = vm.allocate_pinned(512);
  auto e = error_of([&] { vm.upload_async(pin.id, 0, "nowhere", 0, 16); });
  CHECK(e.find("no region named 'nowhere'") != std::string::npos);
  e = error_of([&] { vm.upload_async(pin.id, 0, "slot", 1000, 64); });
  CHECK(e.find("do not fit region 'slot' (1024 bytes)") != std::string::npos);
  e = error_of([&] { vm.upload_async(pin.id, 500, "slot", 0, 64); });
  CHECK(e.find("do not fit pinned memory") != std::string::npos);
  e = error_of([&] { vm.upload_async(pin.id + 100, 0, "slot", 0, 16); });
  CHECK(e.find("no pinned memory with id") != std::string::npos);
  e = error_of([&] { vm.upload_async(pin.id, 0, "slot", 0, 16, 5); });
  CHECK(e.find("after_compute 5") != std::string::npos);
  e = error_of([&] { vm.wait_upload(3); });
  CHECK(e.find("only 0 uploads") != std::string::npos);
  e = error_of([&] { vm.wait_compute(1); });
  CHECK(e.find("only 0 program runs") != std::string::npos);
  e = error_of([&] { vm.submit(0); });
  CHECK(e.find("no program with id 0") != std::string::npos);
  e = error_of([&] { vm.create_region("empty", 0); });
  CHECK(e.find("at least one byte") != std::string::npos);
  e = error_of([&] { vm.free_pinned(pin.id + 100); });
  CHECK(e.find("no pinned memory with id") != std::string::npos);
  // A copy that fits works, and its data arrives.
  std::vector<float> v(128);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = float(i) * 0.5f;
  std::memcpy(pin.data, v.data(), 512);
  vm.wait_upload(vm.upload_async(pin.id, 0, "slot", 512, 512));
  ir::program p;
  auto w = p.add_buffer("w", ir::buffer_kind::weight, ir::dtype::f32, {1, 128});
  auto y = p.add_buffer("y", ir::buffer_kind::io_output, ir::dtype::f32, {1, 128});
  p.add_task(make_task(ir::opcode::copy, {w}, {y}, p.add_counter()));
  const buffer_placement at[] = {{"w", "slot", 512}};
  const auto id = vm.add_program(p, at);
  vm.execute(id);
  CHECK(vm.read_f32(id, "y") == v);
  octo_test::check_clean(vm);
}
