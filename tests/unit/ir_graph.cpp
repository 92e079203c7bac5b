// The dependency graph (docs/ir.md §2): producer -> waiter edges, Kahn's order, cycle witnesses, and the
// 5000+ task chain / cycle that must not recurse.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <vector>

#include <octo/ir/dependency_graph.hpp>
#include <octo/ir/validate.hpp>

#include "../support/random_program.hpp"

using namespace octo::ir;

namespace {

// A(c0) ; B1, B2 wait c0 and share c1 ; C waits (c1, 2) ; D waits c0 and (c1, 2), and c0 twice.
program diamond() {
  program p;
  auto in = p.add_buffer("in", buffer_kind::io_input, dtype::f32, {4});
  auto a = p.add_buffer("a", buffer_kind::activation, dtype::f32, {4});
  auto b = p.add_buffer("b", buffer_kind::activation, dtype::f32, {4});
  auto c = p.add_buffer("c", buffer_kind::io_output, dtype::f32, {4});
  auto d = p.add_buffer("d", buffer_kind::io_output, dtype::f32, {4});
  auto c0 = p.add_counter(), c1 = p.add_counter(), c2 = p.add_counter(), c3 = p.add_counter();
  p.add_task(task{0, opcode::copy, {in}, {a}, c0, {}, {}, -1, 0, 0, {}});                            // 0 A
  p.add_task(task{0, opcode::copy, {a}, {b}, c1, {{c0, 1}}, {}, -1, 0, 0, {}});                      // 1 B1
  p.add_task(task{0, opcode::copy, {a}, {b}, c1, {{c0, 1}}, {}, -1, 0, 0, {}});                      // 2 B2
  p.add_task(task{0, opcode::copy, {b}, {c}, c2, {{c1, 2}}, {}, -1, 0, 0, {}});                      // 3 C
  p.add_task(task{0, opcode::add, {a, b}, {d}, c3, {{c0, 1}, {c1, 2}, {c0, 1}}, {}, -1, 0, 0, {}});  // 4 D
  return p;
}

bool is_topological(const program& p, const std::vector<std::int32_t>& order) {
  if (order.size() != p.tasks.size()) return false;
  std::vector<int> pos(p.tasks.size(), -1);
  for (std::size_t i = 0; i < order.size(); ++i) {
    if (pos[static_cast<std::size_t>(order[i])] != -1) return false;
    pos[static_cast<std::size_t>(order[i])] = static_cast<int>(i);
  }
  // independent edge derivation: every producer of a waited counter comes first
  for (std::size_t w = 0; w < p.tasks.size(); ++w)
    for (const auto& wt : p.tasks[w].waits)
      for (std::size_t pr = 0; pr < p.tasks.size(); ++pr)
        if (p.tasks[pr].out_counter == wt.counter && pos[pr] >= pos[w]) return false;
  return true;
}

}  // namespace

TEST_CASE("dependency_edges on a diamond with a shared counter and a duplicate wait") {
  auto e = dependency_edges(diamond());
  std::set<std::pair<int, int>> got;
  for (auto x : e) got.insert({x.from, x.to});
  std::set<std::pair<int, int>> want{{0, 1}, {0, 2}, {0, 4}, {1, 3}, {2, 3}, {1, 4}, {2, 4}};
  CHECK(got == want);
  CHECK(e.size() == want.size());  // D waits twice on c0 but gets one edge from A
  CHECK(validate(diamond()).stats.edges == 7);
}

TEST_CASE("topological_order: Kahn, valid on known and random graphs, nullopt on cycles") {
  auto o = topological_order(diamond());
  REQUIRE(o);
  CHECK(*o == std::vector<std::int32_t>{0, 1, 2, 3, 4});
  // reversed chain: task i waits on task i+1
  program r;
  auto in = r.add_buffer("in", buffer_kind::io_input, dtype::f32, {4});
  for (int i = 0; i < 4; ++i) r.add_counter();
  for (int i = 0; i < 4; ++i) {
    task t{0, opcode::copy, {in}, {in}, i, {}, {}, -1, 0, 0, {}};
    if (i < 3) t.waits = {{i + 1, 1}};
    r.add_task(t);
  }
  o = topological_order(r);
  REQUIRE(o);
  CHECK(*o == std::vector<std::int32_t>{3, 2, 1, 0});
  for (std::uint64_t s = 1; s <= 20; ++s) {
    auto p = octo::testing::random_dag_program({.seed = s, .tasks = 80, .max_fanin = 4});
    auto q = topological_order(p);
    REQUIRE(q);
    CHECK(is_topological(p, *q));
    auto m = octo::testing::random_model_program({.seed = s, .layers = 2});
    q = topological_order(m);
    REQUIRE(q);
    CHECK(is_topological(m, *q));
  }
  auto c = diamond();
  c.tasks[0].waits = {{3, 1}};  // A waits on D
  CHECK_FALSE(topological_order(c).has_value());
  auto cyc = find_cycle_tasks(c);
  // two cycles exist (A-D-A and A-B1/B2-D-A); whichever is reported must be a closed walk over real edges
  REQUIRE(cyc.size() >= 2);
  CHECK(cyc.front() == 0);
  CHECK(cyc.back() == 4);
  std::set<std::pair<int, int>> edges;
  for (auto x : dependency_edges(c)) edges.insert({x.from, x.to});
  for (std::size_t i = 0; i < cyc.size(); ++i) CHECK(edges.count({cyc[i], cyc[(i + 1) % cyc.size()]}) == 1);
  CHECK(find_cycle_tasks(diamond()).empty());
}

TEST_CASE("out-of-range ids are skipped by the graph functions, not trusted") {
  auto p = diamond();
  p.tasks[1].waits.push_back({99, 1});
  p.tasks[2].out_counter = -4;
  p.tasks[3].waits.push_back({-1, 1});
  auto e = dependency_edges(p);
  for (auto x : e) CHECK(x.from != 2);
  CHECK(topological_order(p).has_value());
  CHECK(find_cycle_tasks(p).empty());
}

TEST_CASE("a 5000-task chain and a 5000-task cycle, without recursion") {
  const int n = 5000;
  auto chain = octo::testing::chain_program(n);
  auto o = topological_order(chain);
  REQUIRE(o);
  for (int i = 0; i < n; ++i) CHECK(o->at(static_cast<std::size_t>(i)) == i);
  auto r = validate(chain);
  CHECK(r.ok);
  CHECK(r.stats.critical_path == n);
  CHECK(r.stats.edges == n - 1);

  auto cyc = octo::testing::chain_program(n, true);
  CHECK_FALSE(topological_order(cyc).has_value());
  auto tasks = find_cycle_tasks(cyc);
  CHECK(tasks.size() == static_cast<std::size_t>(n));
  r = validate(cyc);
  CHECK_FALSE(r.ok);
  REQUIRE(r.errors.size() == 1);
  auto msg = r.errors[0].view();
  CHECK(msg.find("cycle: COPY#0 -> (counter 0) -> COPY#1") == 0);
  CHECK(msg.find("... 4976 more tasks ...") != std::string_view::npos);
  CHECK(msg.find("COPY#4999 -> (counter 4999) -> COPY#0 (5000 tasks)") != std::string_view::npos);

  // a 20000-deep chain: the DFS goes 40000 nodes deep on an explicit stack
  auto big = octo::testing::chain_program(20000, true);
  big.tasks[0].waits.clear();
  CHECK(find_cycle_tasks(big).empty());
  CHECK(validate(big).stats.critical_path == 20000);
}

TEST_CASE("critical path against an independent longest-path computation") {
  for (std::uint64_t s = 1; s <= 20; ++s) {
    auto p = octo::testing::random_dag_program({.seed = s, .tasks = 60, .max_fanin = 3});
    // tasks are in topological list order: longest chain ending at each task by direct DP over edges
    std::vector<int> len(p.tasks.size(), 1);
    int best = 0;
    for (std::size_t w = 0; w < p.tasks.size(); ++w) {
      for (const auto& wt : p.tasks[w].waits)
        for (std::size_t pr = 0; pr < w; ++pr)
          if (p.tasks[pr].out_counter == wt.counter) len[w] = std::max(len[w], len[pr] + 1);
      best = std::max(best, len[w]);
    }
    auto r = validate(p);
    CHECK(r.stats.critical_path == best);
    CHECK(r.stats.edges == static_cast<std::int64_t>(dependency_edges(p).size()));
  }
}

TEST_CASE("scale: a 30000-task random DAG validates; so does a 100000-task cycle report") {
  auto p = octo::testing::random_dag_program({.seed = 1, .tasks = 30000, .max_fanin = 4, .window = 50});
  auto r = validate(p);
  CHECK(r.ok);
  CHECK(r.stats.tasks == 30000);
  auto o = topological_order(p);
  REQUIRE(o);
  for (std::size_t i = 0; i < o->size(); i += 997) CHECK(o->at(i) >= 0);
  auto c = octo::testing::chain_program(100000, true);
  r = validate(c);
  REQUIRE(r.errors.size() == 1);
  CHECK(r.errors[0].view().find("(100000 tasks)") != std::string_view::npos);
}
