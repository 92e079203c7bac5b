// reference_vm as a machine: counter-driven firing order, refusal of invalid programs, persistent KV
// caches across runs with per-pass params, clear errors for out-of-range data, buffer conversions.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <octo/error.hpp>
#include <octo/vm/reference_vm.hpp>

#include "../support/single_task.hpp"

using namespace octo;
using ir::buffer_kind;
using ir::dtype;
using ir::opcode;
using ir::param_key;
using octo::test::random_floats;
using octo::test::single_task;
using vm::reference_vm;

namespace {

bool throws_with(auto&& f, const std::string& needle) {
  try {
    f();
  } catch (const octo::error& e) {
    const std::string what = e.what();
    if (what.find(needle) != std::string::npos) return true;
    MESSAGE("error message was: " << what);
    return false;
  }
  return false;
}

// x[K] -> two GEMV tiles of W[N,K] (one counter, 2 producers) -> GELU waiting for both -> y.
struct tiled {
  ir::program p;
  std::int32_t x, w, h, y, tile0, tile1, gelu;
  static constexpr std::int64_t K = 5, N = 6;
  tiled() {
    x = p.add_buffer("x", buffer_kind::io_input, dtype::f32, {1, K});
    w = p.add_buffer("W", buffer_kind::weight, dtype::f32, {N, K});
    h = p.add_buffer("h", buffer_kind::activation, dtype::f32, {1, N});
    y = p.add_buffer("y", buffer_kind::io_output, dtype::f32, {1, N});
    const auto c_tiles = p.add_counter("tiles");
    const auto c_done = p.add_counter("done");
    // The consumer is added first so that id order alone would fire it too early.
    ir::task g;
    g.op = opcode::gelu;
    g.inputs = {h};
    g.outputs = {y};
    g.out_counter = c_done;
    g.waits = {{c_tiles, 2}};
    gelu = p.add_task(g);
    for (std::int64_t i = 0; i < 2; ++i) {
      ir::task t;
      t.op = opcode::gemv_tile;
      t.inputs = {x, w};
      t.outputs = {h};
      t.out_counter = c_tiles;
      t.params.set(param_key::K, K).set(param_key::N_tile, N / 2).set(param_key::n_off, i * (N / 2));
      (i == 0 ? tile0 : tile1) = p.add_task(t);
    }
  }
};

}  // namespace

TEST_CASE("tiles sharing a counter fire before the consumer waiting for all of them") {
  tiled g;
  reference_vm vm(g.p);
  std::mt19937 rng(7);
  const auto x = random_floats(rng, tiled::K), w = random_floats(rng, tiled::K * tiled::N);
  vm.write(g.x, x);
  vm.write(g.w, w);
  vm.run();
  CHECK(vm.last_order() == std::vector<std::int32_t>{g.tile0, g.tile1, g.gelu});
  CHECK(vm.counter_values() == std::vector<std::int64_t>{2, 1});
  std::vector<float> want(tiled::N);
  for (std::size_t n = 0; n < tiled::N; ++n) {
    double acc = 0;
    for (std::size_t k = 0; k < tiled::K; ++k) acc += double(x[k]) * w[n * tiled::K + k];
    want[n] = float(0.5 * acc * (1 + std::erf(acc / std::sqrt(2.0))));
  }
  const auto y = vm.read_f32(g.y);
  for (std::size_t n = 0; n < tiled::N; ++n) CHECK(y[n] == doctest::Approx(want[n]).epsilon(1e-5));

  // Every seeded interleaving fires the consumer last and gives bit-identical output.
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    vm.write(g.y, std::vector<float>(tiled::N, 0.0f));
    vm.run({true, seed});
    CHECK(vm.last_order().back() == g.gelu);
    CHECK(vm.read_f32(g.y) == y);
  }
  CHECK(vm.runs_completed() == 21);
}

TEST_CASE("shuffled order really varies the interleaving of independent tasks") {
  ir::program p;
  const auto x = p.add_buffer("x", buffer_kind::io_input, dtype::f32, {4});
  const auto c = p.add_counter();
  for (int i = 0; i < 6; ++i) {
    ir::task t;
    t.op = opcode::gelu;
    t.inputs = {x};
    t.outputs = {p.add_buffer(std::string("y").append(std::to_string(i)), buffer_kind::io_output, dtype::f32, {4})};
    t.out_counter = c;
    p.add_task(t);
  }
  reference_vm vm(p);
  std::vector<std::vector<std::int32_t>> orders;
  for (std::uint64_t seed = 0; seed < 8; ++seed) {
    vm.run({true, seed});
    orders.push_back(vm.last_order());
  }
  std::sort(orders.begin(), orders.end());
  CHECK(std::unique(orders.begin(), orders.end()) - orders.begin() > 1);
}

TEST_CASE("the VM refuses a program validate() rejects") {
  SUBCASE("partial wait on a shared counter (first-k-of-N race)") {
    tiled g;
    g.p.tasks[std::size_t(g.gelu)].waits = {{0, 1}};
    CHECK_THROWS_AS(reference_vm{g.p}, octo::error);
    CHECK(throws_with([&] { reference_vm vm(g.p); }, "rejected by validate()"));
  }
  SUBCASE("wait on a counter nobody signals") {
    tiled g;
    g.p.tasks[std::size_t(g.gelu)].waits = {{1, 1}};
    CHECK(throws_with([&] { reference_vm vm(g.p); }, "rejected by validate()"));
  }
  SUBCASE("missing required param") {
    tiled g;
    g.p.tasks[std::size_t(g.tile0)].params = {};
    CHECK(throws_with([&] { reference_vm vm(g.p); }, "rejected by validate()"));
  }
}

TEST_CASE("NOP only signals its counter") {
  ir::program p;
  ir::task t;
  t.op = opcode::nop;
  t.out_counter = p.add_counter();
  p.add_task(t);
  reference_vm vm(p);
  vm.run();
  CHECK(vm.counter_values() == std::vector<std::int64_t>{1});
}

TEST_CASE("decode loop: the KV cache persists across runs, params advance per pass") {
  // k_new[1, 2] appended at pos, then attention over [0, pos+1) reads the cache.
  ir::program p;
  const auto k_new = p.add_buffer("k_new", buffer_kind::io_input, dtype::f32, {1, 2});
  const auto q = p.add_buffer("q", buffer_kind::io_input, dtype::f32, {1, 2});
  const auto cache = p.add_buffer("kv", buffer_kind::kv_cache, dtype::f16, {4, 2});
  const auto o = p.add_buffer("o", buffer_kind::io_output, dtype::f32, {1, 2});
  ir::task app;
  app.op = opcode::kv_append;
  app.inputs = {k_new, cache};
  app.outputs = {cache};
  app.out_counter = p.add_counter("appended");
  app.params.set(param_key::pos, 0);
  const auto t_app = p.add_task(app);
  ir::task att;
  att.op = opcode::attention_tile;
  att.inputs = {q, cache, cache};  // k and v share one cache here
  att.outputs = {o};
  att.out_counter = p.add_counter("attended");
  att.waits = {{0, 1}};
  att.params.set(param_key::head_dim, 2).set(param_key::kv_start, 0).set(param_key::kv_len, 1)
      .set_real(param_key::scale, 1.0).set(param_key::n_heads, 1).set(param_key::n_kv_heads, 1);
  const auto t_att = p.add_task(att);
  reference_vm vm(p);
  vm.write(q, std::vector<float>{0.0f, 0.0f});  // uniform attention: o = mean of the cached rows
  const std::vector<std::vector<float>> rows{{1, 2}, {3, 4}, {5, 6}, {7, 8}};
  for (std::int64_t step = 0; step < 4; ++step) {
    vm.set_param(t_app, param_key::pos, step);
    vm.set_param(t_att, param_key::kv_len, step + 1);
    vm.write(k_new, rows[std::size_t(step)]);
    vm.run();
    double m0 = 0, m1 = 0;
    for (std::int64_t j = 0; j <= step; ++j) {
      m0 += rows[std::size_t(j)][0] / double(step + 1);
      m1 += rows[std::size_t(j)][1] / double(step + 1);
    }
    const auto out = vm.read_f32(o);
    CHECK(out[0] == doctest::Approx(m0).epsilon(1e-6));
    CHECK(out[1] == doctest::Approx(m1).epsilon(1e-6));
  }
  // A fifth token overflows the 4-position cache: a clear error, never a write past the end.
  vm.set_param(t_app, param_key::pos, 4);
  CHECK(throws_with([&] { vm.run(); }, "KV_APPEND#0"));
  CHECK(throws_with([&] { vm.run(); }, "overflows the cache"));
  CHECK(vm.set_param_all(param_key::pos, 1) == 1);
  CHECK_NOTHROW(vm.run());

  // set_position: the program's params describe position 0 (pos 0, kv_len 1); position p adds p to
  // pos and kv_len, as the Vulkan VM does with globals.pos. Replaying the loop gives the same outputs.
  reference_vm vm2(p);
  vm2.write(q, std::vector<float>{0.0f, 0.0f});
  for (std::int64_t step = 0; step < 4; ++step) {
    vm2.set_position(step);
    CHECK(vm2.program().tasks[std::size_t(t_app)].params.get(param_key::pos) == step);
    CHECK(vm2.program().tasks[std::size_t(t_att)].params.get(param_key::kv_len) == step + 1);
    CHECK_FALSE(vm2.program().tasks[std::size_t(t_att)].params.has(param_key::q_pos));  // absent stays absent
    vm2.write(k_new, rows[std::size_t(step)]);
    vm2.run();
  }
  CHECK(vm2.read_f32(o) == std::vector<float>{4.0f, 5.0f});  // mean of (1,2), (3,4), (5,6), (7,8)
}

TEST_CASE("out-of-range data and bad calls are octo::errors") {
  reference_vm vm(single_task(opcode::embed, {{"ids", {2}, dtype::i32}, {"table", {3, 4}, dtype::f32, buffer_kind::weight}},
                              {"y", {2, 4}}, ir::param_list{}.set(param_key::hidden, 4)));
  vm.write_i32("ids", std::vector<std::int32_t>{0, 3});
  CHECK(throws_with([&] { vm.run(); }, "token id 3 is outside"));
  vm.write_i32("ids", std::vector<std::int32_t>{-1, 0});
  CHECK(throws_with([&] { vm.run(); }, "token id -1 is outside"));
  vm.write_i32("ids", std::vector<std::int32_t>{2, 0});
  CHECK_NOTHROW(vm.run());
  CHECK(throws_with([&] { vm.write("table", std::vector<float>(5)); }, "holds 12 elements"));
  CHECK(throws_with([&] { vm.buffer_id("nope"); }, "no buffer named 'nope'"));
  CHECK(throws_with([&] { vm.read_f32(99); }, "no buffer with id 99"));
  CHECK(throws_with([&] { vm.set_param(0, param_key::eps, 1); }, "not an integer param"));
  CHECK(throws_with([&] { vm.set_param(5, param_key::hidden, 1); }, "no task with id 5"));
  CHECK(throws_with([&] { vm.write_bytes("ids", std::vector<std::byte>(3)); }, "holds 8 bytes"));
}

TEST_CASE("a bad shape inside a task names the task") {
  // hidden = 5 does not divide the 12-element table.
  reference_vm vm(single_task(opcode::embed, {{"ids", {1}, dtype::i32}, {"table", {3, 4}, dtype::f32, buffer_kind::weight}},
                              {"y", {1, 4}}, ir::param_list{}.set(param_key::hidden, 5)));
  CHECK(throws_with([&] { vm.run(); }, "EMBED#0 'EMBED': EMBED: table: 12 elements is not a multiple of 5"));
}

TEST_CASE("writes convert to the buffer dtype and reads convert back") {
  ir::program p;
  for (auto dt : {dtype::f32, dtype::f16, dtype::bf16, dtype::i32, dtype::i8, dtype::i4, dtype::u8, dtype::boolean})
    p.add_buffer(std::string(ir::name(dt)), buffer_kind::io_input, dt, {5});
  reference_vm vm(p);
  const std::vector<float> v{1.5f, -2.5f, 3.0f, 200.0f, 0.0f};
  auto rt = [&](dtype dt) {
    vm.write(std::string(ir::name(dt)), v);
    return vm.read_f32(std::string(ir::name(dt)));
  };
  CHECK(rt(dtype::f32) == v);
  CHECK(rt(dtype::f16) == v);
  CHECK(rt(dtype::bf16) == v);
  CHECK(rt(dtype::i32) == std::vector<float>{2, -2, 3, 200, 0});  // half to even
  CHECK(rt(dtype::i8) == std::vector<float>{2, -2, 3, 127, 0});   // saturating
  CHECK(rt(dtype::i4) == std::vector<float>{2, -2, 3, 7, 0});
  CHECK(rt(dtype::u8) == std::vector<float>{2, 0, 3, 200, 0});
  CHECK(rt(dtype::boolean) == std::vector<float>{1, 1, 1, 1, 0});
  vm.write_i32("I32", std::vector<std::int32_t>{16777217, -7, 0, 1, 2});
  CHECK(vm.read_i32("I32") == std::vector<std::int32_t>{16777217, -7, 0, 1, 2});  // bit-exact, beyond float's 2^24
  CHECK(vm.bytes(vm.buffer_id("I4")).size() == 3);
}

TEST_CASE("a buffer too large for the host is an octo::error, not a crash") {
  ir::program p;
  const auto x = p.add_buffer("huge", buffer_kind::io_input, dtype::f32, {std::int64_t(1) << 30, std::int64_t(1) << 20});
  ir::task t;
  t.op = opcode::gelu;
  t.inputs = {x};
  t.outputs = {p.add_buffer("y", buffer_kind::io_output, dtype::f32, {1})};
  t.out_counter = p.add_counter();
  p.add_task(t);
  CHECK(throws_with([&] { reference_vm vm(p); }, "buffer 'huge' has an impossible size"));
}
