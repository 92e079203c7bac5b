// Page allocation (linear / graph_color over live ranges in topological order) and SM assignment
// (round_robin / load_balance / explicit), checked against hand-computed results and an independent
// happens-before oracle.
#include <doctest/doctest.h>

#include <set>
#include <vector>

#include <octo/error.hpp>
#include <octo/ir/page_allocator.hpp>
#include <octo/ir/sm_assignment.hpp>
#include <octo/ir/validate.hpp>

#include "../support/random_program.hpp"

using namespace octo::ir;

namespace {

// ancestors[t] by a brute-force backwards search over explicit edges (independent of the library)
std::vector<std::set<int>> ancestors(const program& p) {
  const std::size_t n = p.tasks.size();
  std::vector<std::set<int>> anc(n);
  for (std::size_t t = 0; t < n; ++t) {
    std::vector<int> todo{static_cast<int>(t)};
    while (!todo.empty()) {
      int v = todo.back();
      todo.pop_back();
      for (const auto& w : p.tasks[static_cast<std::size_t>(v)].waits)
        for (std::size_t pr = 0; pr < n; ++pr)
          if (p.tasks[pr].out_counter == w.counter && anc[t].insert(static_cast<int>(pr)).second) todo.push_back(static_cast<int>(pr));
    }
  }
  return anc;
}

// Every pair of buffers sharing a page: each access of one is ordered with each write of the other.
bool sharing_is_safe(const program& p, const page_allocation& a) {
  auto anc = ancestors(p);
  auto ordered = [&](int x, int y) { return x == y || anc[static_cast<std::size_t>(y)].count(x) || anc[static_cast<std::size_t>(x)].count(y); };
  struct acc { int task; bool write; };
  std::vector<std::vector<acc>> uses(p.buffers.size());
  for (std::size_t t = 0; t < p.tasks.size(); ++t) {
    for (auto b : p.tasks[t].inputs) uses[static_cast<std::size_t>(b)].push_back({static_cast<int>(t), false});
    for (auto b : p.tasks[t].outputs) uses[static_cast<std::size_t>(b)].push_back({static_cast<int>(t), true});
  }
  for (const auto& x : a.buffer_to_page)
    for (const auto& y : a.buffer_to_page)
      if (x.buffer < y.buffer && x.page == y.page)
        for (auto u : uses[static_cast<std::size_t>(x.buffer)])
          for (auto v : uses[static_cast<std::size_t>(y.buffer)])
            if ((u.write || v.write) && !ordered(u.task, v.task)) return false;
  return true;
}

}  // namespace

TEST_CASE("linear: one page per activation with its live range") {
  auto p = octo::testing::chain_program(5);  // a0..a3 activations, a4 output
  auto a = allocate_pages(p, page_allocation_mode::linear);
  REQUIRE(a.pages.size() == 4);
  for (int i = 0; i < 4; ++i) {
    CHECK(a.page_of(i + 1) == i);
    CHECK(a.pages[static_cast<std::size_t>(i)].nbytes == 16);
    CHECK(a.pages[static_cast<std::size_t>(i)].live_start == i);      // written by task i
    CHECK(a.pages[static_cast<std::size_t>(i)].live_end == i + 1);    // read by task i+1
  }
  CHECK(a.total_scratch_bytes() == 64);
  CHECK(allocate_pages(p, page_allocation_mode::none).pages.empty());
}

TEST_CASE("graph_color: a chain ping-pongs between two pages") {
  auto p = octo::testing::chain_program(10);  // a_i live [i, i+1]: a_i and a_{i+2} may share
  auto a = allocate_pages(p, page_allocation_mode::graph_color);
  CHECK(a.pages.size() == 2);
  for (int i = 0; i < 9; ++i) CHECK(a.page_of(i + 1) == i % 2);
  CHECK(a.total_scratch_bytes() == 32);
  p.pages = a;
  p.has_pages = true;
  auto r = validate(p);
  CHECK(r.ok);
  CHECK(r.warnings.empty());
}

TEST_CASE("graph_color does not share a page between unordered branches with disjoint live ranges") {
  // A#0: in -> a ; C#1: a -> o1 ; Z0#2, Z1#3: a delay chain ; B#4 (after Z1): in -> b ; D#5: b -> o2
  program p;
  auto in = p.add_buffer("in", buffer_kind::io_input, dtype::f32, {4});
  auto a = p.add_buffer("a", buffer_kind::activation, dtype::f32, {4});
  auto b = p.add_buffer("b", buffer_kind::activation, dtype::f32, {4});
  auto o1 = p.add_buffer("o1", buffer_kind::io_output, dtype::f32, {4});
  auto o2 = p.add_buffer("o2", buffer_kind::io_output, dtype::f32, {4});
  auto z = p.add_buffer("z", buffer_kind::io_output, dtype::f32, {4});
  auto ca = p.add_counter(), cc = p.add_counter(), cz0 = p.add_counter(), cz1 = p.add_counter(), cb = p.add_counter(),
       cd = p.add_counter();
  p.add_task(task{0, opcode::copy, {in}, {a}, ca, {}, {}, -1, 0, 0, {}});
  p.add_task(task{0, opcode::copy, {a}, {o1}, cc, {{ca, 1}}, {}, -1, 0, 0, {}});
  p.add_task(task{0, opcode::copy, {in}, {z}, cz0, {}, {}, -1, 0, 0, {}});
  p.add_task(task{0, opcode::copy, {in}, {z}, cz1, {{cz0, 1}}, {}, -1, 0, 0, {}});
  p.add_task(task{0, opcode::copy, {in}, {b}, cb, {{cz1, 1}}, {}, -1, 0, 0, {}});
  p.add_task(task{0, opcode::copy, {b}, {o2}, cd, {{cb, 1}}, {}, -1, 0, 0, {}});
  auto al = allocate_pages(p, page_allocation_mode::graph_color);
  CHECK(al.page_of(a) != al.page_of(b));
  // once B is ordered after C they may share
  p.tasks[4].waits.push_back({cc, 1});
  al = allocate_pages(p, page_allocation_mode::graph_color);
  CHECK(al.page_of(a) == al.page_of(b));
  CHECK(al.pages.size() == 1);
}

TEST_CASE("graph_color on random programs: safe sharing (oracle), no more bytes than linear, validate clean") {
  for (std::uint64_t s = 1; s <= 25; ++s) {
    auto p = octo::testing::random_model_program({.seed = s, .layers = 2});
    auto lin = allocate_pages(p, page_allocation_mode::linear);
    auto col = allocate_pages(p, page_allocation_mode::graph_color);
    CHECK(col.total_scratch_bytes() <= lin.total_scratch_bytes());
    CHECK(col.pages.size() < lin.pages.size());  // a decoder always has reusable activations
    CHECK(col.buffer_to_page.size() == lin.buffer_to_page.size());
    CHECK(sharing_is_safe(p, col));
    p.pages = col;
    p.has_pages = true;
    auto r = validate(p);
    CHECK(r.ok);
    CHECK(r.warnings.empty());
    auto q = octo::testing::random_dag_program({.seed = s, .tasks = 60, .max_fanin = 3, .window = 4});
    col = allocate_pages(q, page_allocation_mode::graph_color);
    CHECK(sharing_is_safe(q, col));
  }
}

TEST_CASE("allocate_pages refuses a cyclic program") {
  CHECK_THROWS_AS(allocate_pages(octo::testing::chain_program(3, true), page_allocation_mode::linear), octo::error);
}

TEST_CASE("assign_sms: round_robin, load_balance, explicit") {
  auto p = octo::testing::chain_program(5);
  schedule_config cfg;
  cfg.sm_assignment = sm_assignment_mode::round_robin;
  assign_sms(p, cfg, 2);
  for (int i = 0; i < 5; ++i) CHECK(p.tasks[static_cast<std::size_t>(i)].sm == i % 2);

  // est_bytes 10, 1, 1, 1, 10 on 2 SMs: 0 -> SM0 (10); then SM1 takes 1, 1, 1 (3) and the last 10 (13)
  std::vector<std::int64_t> bytes{10, 1, 1, 1, 10};
  for (int i = 0; i < 5; ++i) p.tasks[static_cast<std::size_t>(i)].est_bytes = bytes[static_cast<std::size_t>(i)];
  cfg.sm_assignment = sm_assignment_mode::load_balance;
  assign_sms(p, cfg, 2);
  std::vector<std::int32_t> got;
  for (const auto& t : p.tasks) got.push_back(t.sm);
  CHECK(got == std::vector<std::int32_t>{0, 1, 1, 1, 1});
  // zero costs: ties go to the SM with fewer tasks, then the lower index
  for (auto& t : p.tasks) t.est_bytes = 0;
  assign_sms(p, cfg, 3);
  got.clear();
  for (const auto& t : p.tasks) got.push_back(t.sm);
  CHECK(got == std::vector<std::int32_t>{0, 1, 2, 0, 1});

  cfg.sm_assignment = sm_assignment_mode::explicit_map;
  cfg.sm_map = {{0, 3}, {4, 3}};
  assign_sms(p, cfg, 4);
  CHECK(p.tasks[0].sm == 3);
  CHECK(p.tasks[4].sm == 3);
  CHECK(p.tasks[1].sm == 0);  // unmapped: balanced over the others
  cfg.sm_map = {{0, 4}};
  CHECK_THROWS_AS(assign_sms(p, cfg, 4), octo::error);
  cfg.sm_map = {{9, 0}};
  CHECK_THROWS_AS(assign_sms(p, cfg, 4), octo::error);
  CHECK_THROWS_AS(assign_sms(p, cfg, 0), octo::error);
}

TEST_CASE("assign_sms keeps every queue a linear extension; validate agrees") {
  for (std::uint64_t s = 1; s <= 20; ++s) {
    auto p = octo::testing::random_model_program({.seed = s, .layers = 2});
    p.has_target = true;
    p.target = *find_target("lavapipe");
    for (auto mode : {sm_assignment_mode::round_robin, sm_assignment_mode::load_balance}) {
      schedule_config cfg;
      cfg.sm_assignment = mode;
      assign_sms(p, cfg, p.target.num_sms);
      auto r = validate(p);
      CHECK(r.ok);
    }
  }
  // a task list out of dependency order cannot be assigned safely by round_robin / load_balance
  auto q = octo::testing::chain_program(3);
  std::swap(q.tasks[0], q.tasks[2]);
  q.tasks[0].id = 0;
  q.tasks[2].id = 2;
  CHECK_THROWS_AS(assign_sms(q, schedule_config{}, 2), octo::error);
  // an explicit map is applied as given: validate catches the queue deadlock
  schedule_config cfg;
  cfg.sm_assignment = sm_assignment_mode::explicit_map;
  cfg.sm_map = {{0, 0}, {1, 0}, {2, 0}};
  assign_sms(q, cfg, 2);
  auto r = validate(q);
  CHECK_FALSE(r.ok);
  bool found = false;
  for (const auto& e : r.errors) found |= e.view().find("deadlock: SM 0 queues") == 0;
  CHECK(found);
}
