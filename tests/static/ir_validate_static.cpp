// Compiling is the test: validate() and the graph analyses run inside static_assert with g++'s
// default constexpr limits, and their messages can be compared at compile time.
#include <octo/ir/dependency_graph.hpp>
#include <octo/ir/page_allocator.hpp>
#include <octo/ir/simulate.hpp>
#include <octo/ir/sm_assignment.hpp>
#include <octo/ir/static_check.hpp>
#include <octo/ir/validate.hpp>

#include "../support/random_program.hpp"

namespace {

using namespace octo::ir;

// x -> RMSNORM#0 -> h -> GEMV_TILE#1 (two tiles on one counter) -> logits -> SAMPLE_ARGMAX#3 -> token
constexpr program mlp(int variant = 0) {
  program p;
  auto x = p.add_buffer("x", buffer_kind::io_input, dtype::f32, {1, 16});
  auto nw = p.add_buffer("norm.w", buffer_kind::weight, dtype::f32, {16}, "norm.weight");
  auto w = p.add_buffer("proj.w", buffer_kind::weight, dtype::f32, {32, 16}, "proj.weight");
  auto h = p.add_buffer("h", buffer_kind::activation, dtype::f32, {1, 16});
  auto logits = p.add_buffer("logits", buffer_kind::activation, dtype::f32, {1, 32});
  auto tok = p.add_buffer("token", buffer_kind::io_output, dtype::i32, {1});
  auto c_norm = p.add_counter("norm"), c_proj = p.add_counter("proj"), c_out = p.add_counter("out");
  task n;
  n.op = opcode::rmsnorm;
  n.inputs = {x, nw};
  n.outputs = {h};
  n.out_counter = c_norm;
  n.params.set_real(param_key::eps, 1e-6).set(param_key::hidden, 16);
  p.add_task(n);
  for (int i = 0; i < 2; ++i) {
    task g;
    g.op = opcode::gemv_tile;
    g.inputs = {h, w};
    g.outputs = {logits};
    g.out_counter = c_proj;
    g.waits = {{c_norm, 1}};
    g.params.set(param_key::K, 16).set(param_key::N_tile, 16).set(param_key::n_off, 16 * i);
    p.add_task(g);
  }
  task s;
  s.op = opcode::sample_argmax;
  s.inputs = {logits};
  s.outputs = {tok};
  s.out_counter = c_out;
  s.waits = {{c_proj, variant == 1 ? 1 : 2}};  // 1: partial wait on the shared counter
  if (variant == 2) s.waits = {{c_proj, 2}, {5, 1}};  // 2: a counter that does not exist
  p.add_task(s);
  return p;
}

static_assert(validate(mlp()).ok);
static_assert(octo::validate(mlp()).errors.empty());
static_assert(validate(mlp()).stats.tasks == 4);
static_assert(validate(mlp()).stats.edges == 4);          // norm -> 2 tiles, 2 tiles -> sample
static_assert(validate(mlp()).stats.critical_path == 3);
static_assert(validate(mlp()).stats.weight_bytes == (16 + 32 * 16) * 4);
static_assert(!validate(mlp(1)).ok);
static_assert(validate(mlp(1)).errors[0] ==
              "race: SAMPLE_ARGMAX#3 waits on counter 1 with threshold 1 but 2 tasks signal it; a partial wait on a "
              "shared counter can be satisfied by the wrong producers (use threshold 2)");
static_assert(validate(mlp(2)).errors[0] == "SAMPLE_ARGMAX#3 waits on counter 5, which does not exist (3 counters)");
static_assert(validate(mlp(2)).errors.size() == 1);  // structural errors stop the later checks

OCTO_STATIC_VALIDATE([] { return mlp(); });
static_assert(assert_valid<[] { return mlp(); }>());

// graph analyses at compile time
static_assert(dependency_edges(mlp()).size() == 4);  // 0->1, 0->2, 1->3, 2->3
static_assert(*topological_order(mlp()) == std::vector<std::int32_t>{0, 1, 2, 3});
static_assert(!topological_order(octo::testing::chain_program(3, true)).has_value());
static_assert(find_cycle_tasks(octo::testing::chain_program(4, true)).size() == 4);
static_assert(simulate_counters(mlp()).stuck.empty());
static_assert(simulate_counters(octo::testing::chain_program(3, true)).stuck.size() == 3);
static_assert(allocate_pages(mlp(), page_allocation_mode::graph_color).pages.size() == 2);  // h and logits overlap
static_assert(allocate_pages(octo::testing::chain_program(6), page_allocation_mode::graph_color).pages.size() == 2);
static_assert([] {
  auto p = mlp();
  assign_sms(p, schedule_config{}, 2);
  p.has_target = true;
  p.target = *find_target("lavapipe");
  return validate(p).ok && p.tasks[1].sm != p.tasks[2].sm;
}());

// the shared random generators work in constant evaluation too
static_assert(validate(octo::testing::random_model_program({.seed = 3, .layers = 1})).ok);
static_assert(validate(octo::testing::random_dag_program({.seed = 9, .tasks = 30})).ok);
static_assert(validate(octo::testing::chain_program(200)).stats.critical_path == 200);

}  // namespace
