// The backstops (docs/ir.md §3.4): simulate_counters finds permanently stuck tasks; simulate_adversarial
// fires tasks in hostile orders and must flag exactly the races validate() rejects on random programs.
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

#include <octo/ir/simulate.hpp>
#include <octo/ir/validate.hpp>

#include "../support/random_program.hpp"

using namespace octo::ir;

namespace {
bool has(const std::vector<text>& v, std::string_view needle) {
  for (const auto& m : v)
    if (m.view().find(needle) != std::string_view::npos) return true;
  return false;
}
// in -> A#0 -> a ; B#1 waits A -> b ; C#2 waits B -> o
program chain3() { return octo::testing::chain_program(3); }
}  // namespace

TEST_CASE("simulate_counters on known graphs") {
  auto s = simulate_counters(chain3());
  CHECK(s.order == std::vector<std::int32_t>{0, 1, 2});
  CHECK(s.stuck.empty());

  // threshold 2 on a single-producer counter: B and everything after it is stuck
  auto p = chain3();
  p.tasks[1].waits = {{0, 2}};
  s = simulate_counters(p);
  CHECK(s.order == std::vector<std::int32_t>{0});
  CHECK(s.stuck == std::vector<std::int32_t>{1, 2});

  // a wait on a counter nobody signals
  p = chain3();
  p.add_counter();
  p.tasks[2].waits.push_back({3, 1});
  s = simulate_counters(p);
  CHECK(s.order == std::vector<std::int32_t>{0, 1});
  CHECK(s.stuck == std::vector<std::int32_t>{2});

  // a cycle: all of it is stuck
  s = simulate_counters(octo::testing::chain_program(5, true));
  CHECK(s.order.empty());
  CHECK(s.stuck == std::vector<std::int32_t>{0, 1, 2, 3, 4});

  // shared counter: C fires only after both tiles
  program q;
  auto in = q.add_buffer("in", buffer_kind::io_input, dtype::f32, {4});
  auto h = q.add_buffer("h", buffer_kind::activation, dtype::f32, {4});
  auto o = q.add_buffer("o", buffer_kind::io_output, dtype::f32, {4});
  auto c0 = q.add_counter(), c1 = q.add_counter();
  q.add_task(task{0, opcode::copy, {h}, {o}, c1, {{c0, 2}}, {}, -1, 0, 0, {}});
  q.add_task(task{0, opcode::copy, {in}, {h}, c0, {}, {}, -1, 0, 0, {}});
  q.add_task(task{0, opcode::copy, {in}, {h}, c0, {}, {}, -1, 0, 0, {}});
  s = simulate_counters(q);
  CHECK(s.order == std::vector<std::int32_t>{1, 2, 0});
  CHECK(s.stuck.empty());
}

TEST_CASE("simulate_counters agrees with validate's deadlock verdict on random programs") {
  octo::testing::rng64 rng{11};
  for (int iter = 0; iter < 100; ++iter) {
    auto p = octo::testing::random_dag_program({.seed = rng.next(), .tasks = 50, .max_fanin = 3});
    auto s = simulate_counters(p);
    CHECK(s.stuck.empty());
    CHECK(s.order.size() == p.tasks.size());
    // raise one threshold past its producer count: that task can never fire
    std::vector<std::int32_t> waiting;
    for (std::size_t t = 0; t < p.tasks.size(); ++t)
      if (!p.tasks[t].waits.empty()) waiting.push_back(static_cast<std::int32_t>(t));
    auto victim = waiting[rng.next() % waiting.size()];
    p.tasks[static_cast<std::size_t>(victim)].waits[0].threshold += 1;
    s = simulate_counters(p);
    CHECK(std::find(s.stuck.begin(), s.stuck.end(), victim) != s.stuck.end());
    auto r = validate(p);
    CHECK_FALSE(r.ok);
    CHECK(has(r.errors, "deadlock: ALLREDUCE_SHARD#" + std::to_string(victim) + " waits for counter"));
  }
}

TEST_CASE("simulate_adversarial: clean on valid programs") {
  for (std::uint64_t s = 1; s <= 20; ++s) {
    CHECK(simulate_adversarial(octo::testing::random_model_program({.seed = s, .layers = 2})).empty());
    CHECK(simulate_adversarial(octo::testing::random_dag_program({.seed = s, .tasks = 100, .max_fanin = 4})).empty());
  }
}

TEST_CASE("simulate_adversarial finds the races validate rejects (dropped waits on random DAGs)") {
  octo::testing::rng64 rng{5};
  int races = 0;
  for (int iter = 0; iter < 120; ++iter) {
    auto p = octo::testing::random_dag_program({.seed = rng.next(), .tasks = 30, .max_fanin = 3, .window = 5});
    std::vector<std::pair<std::size_t, std::size_t>> slots;
    for (std::size_t t = 0; t < p.tasks.size(); ++t)
      for (std::size_t k = 0; k < p.tasks[t].waits.size(); ++k) slots.push_back({t, k});
    auto [t, k] = slots[rng.next() % slots.size()];
    p.tasks[t].waits.erase(p.tasks[t].waits.begin() + static_cast<std::ptrdiff_t>(k));
    const bool rejected = !validate(p).ok;
    // with a turn for every read buffer as the victim, a race is found whenever one exists
    auto v = simulate_adversarial(p, static_cast<int>(p.buffers.size()) + 2);
    CHECK(rejected == !v.empty());
    races += rejected;
  }
  CHECK(races > 20);
}

TEST_CASE("simulate_adversarial: partial wait on a shared counter and KV ordering") {
  // two tiles write h1 / h2 and share c0; the reader waits (c0, 1) and reads h2: first-1-of-2 race
  program p;
  auto in = p.add_buffer("in", buffer_kind::io_input, dtype::f32, {4});
  auto h1 = p.add_buffer("h1", buffer_kind::activation, dtype::f32, {4});
  auto h2 = p.add_buffer("h2", buffer_kind::activation, dtype::f32, {4});
  auto o = p.add_buffer("o", buffer_kind::io_output, dtype::f32, {4});
  auto c0 = p.add_counter(), c1 = p.add_counter();
  p.add_task(task{0, opcode::copy, {in}, {h1}, c0, {}, {}, -1, 0, 0, {}});
  p.add_task(task{0, opcode::copy, {in}, {h2}, c0, {}, {}, -1, 0, 0, {}});
  p.add_task(task{0, opcode::add, {h1, h2}, {o}, c1, {{c0, 1}}, {}, -1, 0, 0, {}});
  auto v = simulate_adversarial(p);
  CHECK(has(v, "ADD#2 read ACTIVATION buffer"));
  CHECK(has(validate(p).errors, "race: ADD#2 waits on counter 0 with threshold 1 but 2 tasks signal it"));
  p.tasks[2].waits = {{c0, 2}};
  CHECK(simulate_adversarial(p).empty());

  // attention reading a cache it is not ordered after
  program q;
  auto kn = q.add_buffer("k_new", buffer_kind::io_input, dtype::f32, {1, 8});
  auto cache = q.add_buffer("k_cache", buffer_kind::kv_cache, dtype::f32, {4, 8});
  auto out = q.add_buffer("o", buffer_kind::io_output, dtype::f32, {1, 8});
  auto k0 = q.add_counter(), k1 = q.add_counter();
  task app{0, opcode::kv_append, {kn, cache}, {cache}, k0, {}, {}, -1, 0, 0, {}};
  app.params.set(param_key::pos, 0);
  q.add_task(app);
  q.add_task(task{0, opcode::copy, {cache}, {out}, k1, {}, {}, -1, 0, 0, {}});
  v = simulate_adversarial(q);
  CHECK(has(v, "COPY#1 read KV_CACHE buffer 1 (k_cache) before every task writing it this pass had run"));
  CHECK_FALSE(has(v, "KV_APPEND#0"));  // the appender reads its own cache: fine
  q.tasks[1].waits = {{k0, 1}};
  CHECK(simulate_adversarial(q).empty());
}
