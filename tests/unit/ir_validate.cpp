// validate() (docs/ir.md §3.1-§3.3): for every rule a program that passes and one that fails with the
// expected message; a property test against an independent reachability oracle; a malformed-input fuzz.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include <octo/ir/validate.hpp>

#include "../support/random_program.hpp"

using namespace octo::ir;

namespace {

bool has(const std::vector<text>& v, std::string_view needle) {
  for (const auto& m : v)
    if (m.view().find(needle) != std::string_view::npos) return true;
  return false;
}

std::string dump(const validation_result& r) { return r.report().str(); }

// x(IO_INPUT) w(WEIGHT) h(ACTIVATION) o(IO_OUTPUT); RMSNORM#0: x,w -> h signals c0; COPY#1: h -> o
// waits (c0, 1), signals c1.
program base() {
  program p;
  auto x = p.add_buffer("x", buffer_kind::io_input, dtype::f32, {1, 16});
  auto w = p.add_buffer("w", buffer_kind::weight, dtype::f32, {16}, "norm.weight");
  auto h = p.add_buffer("h", buffer_kind::activation, dtype::f32, {1, 16});
  auto o = p.add_buffer("o", buffer_kind::io_output, dtype::f32, {1, 16});
  auto c0 = p.add_counter("norm");
  auto c1 = p.add_counter("out");
  task t;
  t.op = opcode::rmsnorm;
  t.inputs = {x, w};
  t.outputs = {h};
  t.out_counter = c0;
  t.params.set_real(param_key::eps, 1e-6).set(param_key::hidden, 16);
  p.add_task(t);
  task u;
  u.op = opcode::copy;
  u.inputs = {h};
  u.outputs = {o};
  u.out_counter = c1;
  u.waits = {{c0, 1}};
  p.add_task(u);
  return p;
}

// base() with c0 shared by two RMSNORM tiles (#0, #1) writing h; COPY#2 waits (c0, threshold).
program shared(std::int32_t threshold) {
  auto p = base();
  task t2 = p.tasks[0];
  p.tasks[1] = t2;
  p.tasks[1].id = 1;
  task u;
  u.op = opcode::copy;
  u.inputs = {2};
  u.outputs = {3};
  u.out_counter = 1;
  u.waits = {{0, threshold}};
  p.add_task(u);
  return p;
}

task gemv(std::int32_t in, std::int32_t w, std::int32_t out, std::int32_t counter, std::vector<wait> waits) {
  task t;
  t.op = opcode::gemv_tile;
  t.inputs = {in, w};
  t.outputs = {out};
  t.out_counter = counter;
  t.waits = std::move(waits);
  t.params.set(param_key::K, 16).set(param_key::N_tile, 16).set(param_key::n_off, 0);
  return t;
}

}  // namespace

TEST_CASE("the base program passes, with hand-computed stats") {
  auto r = validate(base());
  CHECK_MESSAGE(r.ok, dump(r));
  CHECK(r.errors.empty());
  CHECK(r.warnings.empty());
  CHECK(r.stats.tasks == 2);
  CHECK(r.stats.buffers == 4);
  CHECK(r.stats.counters == 2);
  CHECK(r.stats.edges == 1);
  CHECK(r.stats.weight_bytes == 64);  // 16 f32
  CHECK(r.stats.critical_path == 2);
  CHECK(r.report().view().find("validate: OK") == 0);
}

TEST_CASE("ids must equal indices") {
  auto p = base();
  p.buffers[1].id = 5;
  auto r = validate(p);
  CHECK_FALSE(r.ok);
  CHECK(has(r.errors, "buffer at index 1 (w) has id 5"));
  p = base();
  p.counters[1].id = 0;
  CHECK(has(validate(p).errors, "counter at index 1 has id 0"));
  p = base();
  p.tasks[0].id = 7;
  CHECK(has(validate(p).errors, "task at index 0 has id 7"));
}

TEST_CASE("referential integrity of buffers, counters and pages") {
  auto p = base();
  p.tasks[1].inputs = {99};
  auto r = validate(p);
  CHECK(has(r.errors, "COPY#1 reads buffer 99, which does not exist (4 buffers)"));
  p = base();
  p.tasks[1].outputs = {-1};
  CHECK(has(validate(p).errors, "COPY#1 writes buffer -1, which does not exist"));
  p = base();
  p.tasks[0].out_counter = 2;
  CHECK(has(validate(p).errors, "RMSNORM#0 signals counter 2, which does not exist (2 counters)"));
  p = base();
  p.tasks[1].waits = {{-3, 1}};
  CHECK(has(validate(p).errors, "COPY#1 waits on counter -3, which does not exist"));
  p = base();
  p.has_pages = true;
  p.pages.pages = {page{0, mem_space::global_scratch, 64, 0, 1}};
  p.pages.buffer_to_page = {{2, 0}};
  CHECK_MESSAGE(validate(p).ok, dump(validate(p)));
  p.pages.buffer_to_page = {{2, 3}};
  CHECK(has(validate(p).errors, "buffer 2 (h) is bound to page 3, which does not exist (1 pages)"));
  p.pages.buffer_to_page = {{40, 0}};
  CHECK(has(validate(p).errors, "page binding names buffer 40, which does not exist"));
  p.pages.buffer_to_page = {{2, 0}, {2, 0}};
  CHECK(has(validate(p).errors, "buffer 2 (h) is bound to a page twice"));
}

TEST_CASE("enum values out of range are errors, not UB") {
  auto p = base();
  p.buffers[2].kind = static_cast<buffer_kind>(17);
  CHECK(has(validate(p).errors, "buffer 2 (h) has invalid kind code 17"));
  p = base();
  p.buffers[2].dtype = static_cast<dtype>(200);
  CHECK(has(validate(p).errors, "invalid dtype code 200"));
  p = base();
  p.buffers[2].space = static_cast<mem_space>(9);
  CHECK(has(validate(p).errors, "invalid memory space code 9"));
  p = base();
  p.tasks[1].op = static_cast<opcode>(50);
  CHECK(has(validate(p).errors, "task 1 has invalid opcode 50"));
  p = base();
  p.tasks[0].params.items[0].key = static_cast<param_key>(100);
  CHECK(has(validate(p).errors, "RMSNORM#0: invalid param key code 100"));
  p = base();
  p.has_config = true;
  p.config.page_allocation = static_cast<page_allocation_mode>(7);
  CHECK(has(validate(p).errors, "config: invalid page_allocation code 7"));
}

TEST_CASE("opcode arity against op_registry") {
  auto p = base();
  p.tasks[1].inputs = {2, 2};
  CHECK(has(validate(p).errors, "COPY#1 has 2 inputs; COPY takes 1"));
  p = base();
  p.tasks[1].outputs = {};
  CHECK(has(validate(p).errors, "COPY#1 has 0 outputs; COPY writes 1"));
  p = base();
  p.tasks[1] = gemv(2, 1, 3, 1, {{0, 1}});
  p.tasks[1].id = 1;
  CHECK_MESSAGE(validate(p).ok, dump(validate(p)));
  p.tasks[1].inputs = {2};
  CHECK(has(validate(p).errors, "GEMV_TILE#1 has 1 inputs; GEMV_TILE takes 2 to 3"));
}

TEST_CASE("ABI caps: 8 inputs, 4 outputs, 8 waits, rank 4") {
  auto p = base();
  p.tasks[1].op = opcode::allreduce_shard;
  p.tasks[1].inputs = {0, 0, 0, 0, 0, 0, 0, 2};
  CHECK_MESSAGE(validate(p).ok, dump(validate(p)));
  p.tasks[1].inputs.push_back(0);
  auto r = validate(p);
  CHECK(has(r.errors, "ALLREDUCE_SHARD#1 has 9 inputs, above the ABI cap of 8"));
  p = base();
  p.tasks[1].outputs = {3, 3, 3, 3, 3};
  CHECK(has(validate(p).errors, "COPY#1 has 5 outputs, above the ABI cap of 4"));
  p = base();
  p.tasks[1].waits.assign(9, wait{0, 1});
  CHECK(has(validate(p).errors, "COPY#1 has 9 waits, above the ABI cap of 8"));
  p.tasks[1].waits.assign(8, wait{0, 1});
  CHECK(validate(p).ok);
  p = base();
  p.buffers[2].shape = {1, 1, 1, 1, 16};
  CHECK(has(validate(p).errors, "buffer 2 (h) has rank 5, above the ABI cap of 4"));
  p.buffers[2].shape = {1, 1, 1, 16};
  CHECK(validate(p).ok);
  p.buffers[2].shape = {1, -16};
  CHECK(has(validate(p).errors, "buffer 2 (h) has negative dimension -16"));
  p.buffers[2].shape = {1 << 30, 1 << 30, 1 << 30};
  CHECK(has(validate(p).errors, "buffer 2 (h) is too large"));
}

TEST_CASE("required params") {
  auto p = base();
  p.tasks[0].params = param_list{};
  p.tasks[0].params.set(param_key::hidden, 16);
  auto r = validate(p);
  CHECK_FALSE(r.ok);
  CHECK(has(r.errors, "RMSNORM#0 lacks required param 'eps'"));
  CHECK_FALSE(has(r.errors, "'hidden'"));
}

TEST_CASE("param types and keys") {
  auto p = base();
  p.tasks[0].params.set_real(param_key::hidden, 16.5);
  CHECK(has(validate(p).errors, "RMSNORM#0: param 'hidden' is an int32 field but holds a real"));
  p = base();
  p.tasks[0].params.set(param_key::hidden, std::int64_t(1) << 40);
  CHECK(has(validate(p).errors, "param 'hidden' = 1099511627776 does not fit in int32"));
  p = base();
  p.tasks[0].params.set(param_key::eps, 1);  // an int in a real field is fine
  CHECK(validate(p).ok);
  p.tasks[0].params.set_real(param_key::eps, std::numeric_limits<double>::quiet_NaN());
  CHECK(has(validate(p).errors, "param 'eps' is not a finite number"));
  p = base();
  p.tasks[0].params.items.push_back(param{param_key::unknown, false, 3, 0.0, "mystery"});
  auto r = validate(p);
  CHECK(r.ok);
  CHECK(has(r.warnings, "RMSNORM#0: unknown param 'mystery' will not marshal"));
  p = base();
  p.tasks[0].params.items.push_back(param{param_key::hidden, false, 16, 0.0, {}});
  CHECK(has(validate(p).errors, "RMSNORM#0: param 'hidden' appears twice"));
  // many duplicates: one message per key, and no quadratic blow-up
  p = base();
  for (int i = 0; i < 100000; ++i) p.tasks[0].params.items.push_back(param{param_key::K, false, 1, 0.0, {}});
  auto many = validate(p);
  CHECK(has(many.errors, "RMSNORM#0: param 'K' appears twice"));
  CHECK(many.errors.size() == 1);
}

TEST_CASE("thresholds: 1 <= threshold <= producers; unsatisfiable waits are deadlocks") {
  auto p = base();
  p.tasks[1].waits = {{0, 0}};
  CHECK(has(validate(p).errors, "COPY#1 waits on counter 0 with threshold 0; thresholds must be >= 1"));
  p = base();
  p.add_counter("nobody");
  p.tasks[1].waits = {{0, 1}, {2, 1}};
  CHECK(has(validate(p).errors, "deadlock: COPY#1 waits on counter 2, which no task signals"));
  p = base();
  p.tasks[1].waits = {{0, 2}};
  CHECK(has(validate(p).errors, "deadlock: COPY#1 waits for counter 0 to reach 2, but only 1 task signals it"));
}

TEST_CASE("shared-counter all-join rule") {
  auto r = validate(shared(2));
  CHECK_MESSAGE(r.ok, dump(r));
  CHECK(r.stats.edges == 2);
  r = validate(shared(1));
  CHECK_FALSE(r.ok);
  CHECK(has(r.errors, "race: COPY#2 waits on counter 0 with threshold 1 but 2 tasks signal it"));
  r = validate(shared(3));
  CHECK(has(r.errors, "deadlock: COPY#2 waits for counter 0 to reach 3, but only 2 tasks signal it"));
}

TEST_CASE("acyclicity with a witness naming the cycle's tasks") {
  auto p = base();
  p.tasks[0].waits = {{1, 1}};  // RMSNORM#0 waits for COPY#1, which waits for RMSNORM#0
  auto r = validate(p);
  CHECK_FALSE(r.ok);
  REQUIRE(has(r.errors, "cycle: "));
  CHECK(has(r.errors, "RMSNORM#0 -> (counter 0) -> COPY#1 -> (counter 1) -> RMSNORM#0 (2 tasks)"));
  // a task waiting on its own counter
  p = base();
  p.tasks[1].waits = {{0, 1}, {1, 1}};
  CHECK(has(validate(p).errors, "cycle: COPY#1 -> (counter 1) -> COPY#1 (1 task)"));
}

TEST_CASE("per-SM queue order and SM range") {
  auto p = base();
  p.has_target = true;
  p.target = *find_target("lavapipe");  // 2 SMs
  p.tasks[0].sm = 0;
  p.tasks[1].sm = 0;
  CHECK(validate(p).ok);
  p.tasks[1].sm = 2;
  CHECK(has(validate(p).errors, "COPY#1 is on SM 2 but target lavapipe has 2 SMs"));
  p.tasks[1].sm = unassigned_sm;
  CHECK(has(validate(p).errors, "COPY#1 has no SM while other tasks do"));
  p.tasks[1].sm = -5;
  CHECK(has(validate(p).errors, "COPY#1 has SM -5"));
  // without a target any SM number is allowed, however sparse (no table indexed by SM)
  p.has_target = false;
  p.tasks[0].sm = 2000000000;
  p.tasks[1].sm = 2000000000;
  CHECK(validate(p).ok);
  p.tasks[0].sm = 7;
  CHECK(validate(p).ok);

  // Direct violation: the waiter comes first in its SM's queue.
  program q;
  auto in = q.add_buffer("in", buffer_kind::io_input, dtype::f32, {4});
  auto a = q.add_buffer("a", buffer_kind::activation, dtype::f32, {4});
  auto o = q.add_buffer("o", buffer_kind::io_output, dtype::f32, {4});
  auto c0 = q.add_counter(), c1 = q.add_counter();
  task reader{0, opcode::copy, {a}, {o}, c1, {{c0, 1}}, {}, 0, 0, 0, {}};
  task writer{0, opcode::copy, {in}, {a}, c0, {}, {}, 0, 0, 0, {}};
  q.add_task(reader);
  q.add_task(writer);
  CHECK(validate(q).ok == false);
  CHECK(has(validate(q).errors, "deadlock: SM 0 queues COPY#0 before COPY#1, which signals counter 0 that COPY#0 waits on"));
  q.tasks[1].sm = 1;  // on different SMs the list order does not matter
  auto r = validate(q);
  CHECK_MESSAGE(r.ok, dump(r));

  // Transitive violation: X#0 (SM 0) waits for Y#1 (SM 1), which waits for Z#2 (SM 0) queued after X.
  program t;
  in = t.add_buffer("in", buffer_kind::io_input, dtype::f32, {4});
  auto b0 = t.add_buffer("b0", buffer_kind::activation, dtype::f32, {4});
  auto b1 = t.add_buffer("b1", buffer_kind::activation, dtype::f32, {4});
  auto b2 = t.add_buffer("b2", buffer_kind::io_output, dtype::f32, {4});
  auto k0 = t.add_counter(), k1 = t.add_counter(), k2 = t.add_counter();
  t.add_task(task{0, opcode::copy, {b1}, {b2}, k2, {{k1, 1}}, {}, 0, 0, 0, {}});
  t.add_task(task{0, opcode::copy, {b0}, {b1}, k1, {{k0, 1}}, {}, 1, 0, 0, {}});
  t.add_task(task{0, opcode::copy, {in}, {b0}, k0, {}, {}, 0, 0, 0, {}});
  r = validate(t);
  CHECK_FALSE(r.ok);
  CHECK(has(r.errors, "deadlock: SM queue order contradicts the DAG"));
  CHECK(has(r.errors, "(queue of SM 0)"));
  t.tasks[2].sm = 1;  // Z on SM 1 before Y? Y#1 precedes Z#2 in SM 1's queue and waits on Z: direct
  CHECK(has(validate(t).errors, "deadlock: SM 1 queues COPY#1 before COPY#2"));
  t.tasks[2].sm = 2;
  CHECK(validate(t).ok);
}

TEST_CASE("transitive happens-before for ACTIVATION and IO reads") {
  auto p = base();
  p.tasks[1].waits = {};
  auto r = validate(p);
  CHECK_FALSE(r.ok);
  CHECK(has(r.errors, "race: COPY#1 reads buffer 2 (h) with no happens-before path from a writer (e.g. RMSNORM#0)"));

  // transitive: C reads what A wrote two edges up
  program q;
  auto in = q.add_buffer("in", buffer_kind::io_input, dtype::f32, {4});
  auto a = q.add_buffer("a", buffer_kind::activation, dtype::f32, {4});
  auto b = q.add_buffer("b", buffer_kind::activation, dtype::f32, {4});
  auto o = q.add_buffer("o", buffer_kind::io_output, dtype::f32, {4});
  auto c0 = q.add_counter(), c1 = q.add_counter(), c2 = q.add_counter();
  q.add_task(task{0, opcode::copy, {in}, {a}, c0, {}, {}, -1, 0, 0, {}});
  q.add_task(task{0, opcode::copy, {in}, {b}, c1, {{c0, 1}}, {}, -1, 0, 0, {}});
  q.add_task(task{0, opcode::add, {a, b}, {o}, c2, {{c1, 1}}, {}, -1, 0, 0, {}});
  r = validate(q);
  CHECK_MESSAGE(r.ok, dump(r));
  q.tasks[1].waits = {};  // now ADD#2 still sees b (via c1) but not a
  r = validate(q);
  CHECK(has(r.errors, "race: ADD#2 reads buffer 1 (a) with no happens-before path from a writer (e.g. COPY#0)"));
  CHECK_FALSE(has(r.errors, "(b)"));

  // an activation nobody writes
  q = base();
  q.add_buffer("ghost", buffer_kind::activation, dtype::f32, {4});
  q.tasks[1].op = opcode::add;
  q.tasks[1].inputs = {2, 4};
  CHECK(has(validate(q).errors, "race: ADD#1 reads buffer 4 (ghost), which no task writes"));
  // read-only kinds need no producer
  q.buffers[4].kind = buffer_kind::constant;
  CHECK(validate(q).ok);
}

TEST_CASE("KV_CACHE ordering") {
  // KV_APPEND#0: kv_new -> cache; ATTENTION_TILE#1 reads cache; the appender reading its own cache is fine.
  auto make = [](bool ordered) {
    program p;
    auto q = p.add_buffer("q", buffer_kind::io_input, dtype::f32, {1, 8});
    auto kn = p.add_buffer("k_new", buffer_kind::io_input, dtype::f32, {1, 8});
    auto cache = p.add_buffer("k_cache", buffer_kind::kv_cache, dtype::f32, {4, 8});
    auto o = p.add_buffer("o", buffer_kind::io_output, dtype::f32, {1, 8});
    auto c0 = p.add_counter(), c1 = p.add_counter();
    task app{0, opcode::kv_append, {kn, cache}, {cache}, c0, {}, {}, -1, 0, 0, {}};
    app.params.set(param_key::pos, 0);
    p.add_task(app);
    task att{0, opcode::attention_tile, {q, cache, cache}, {o}, c1, {}, {}, -1, 0, 0, {}};
    if (ordered) att.waits = {{c0, 1}};
    att.params.set(param_key::head_dim, 8).set(param_key::kv_start, 0).set(param_key::kv_len, 1);
    att.params.set_real(param_key::scale, 0.35).set(param_key::n_heads, 1).set(param_key::n_kv_heads, 1);
    p.add_task(att);
    return p;
  };
  auto r = validate(make(true));
  CHECK_MESSAGE(r.ok, dump(r));
  r = validate(make(false));
  CHECK_FALSE(r.ok);
  CHECK(has(r.errors, "race: ATTENTION_TILE#1 reads KV cache buffer 2 (k_cache) without being ordered after KV_APPEND#0"));
  // a cache nobody appends to this pass holds prior-step state: reading it needs no ordering
  auto p = make(false);
  p.tasks[0].outputs = {};
  p.tasks[0].op = opcode::nop;
  p.tasks[0].inputs = {};
  p.tasks[0].params = {};
  CHECK_MESSAGE(validate(p).ok, dump(validate(p)));
}

TEST_CASE("page aliasing warnings") {
  // in -> A -> a -> C -> o1 ; chain Z0 -> Z1 -> Z2 -> B(in -> b) -> D(b -> o2). a and b on one page:
  // their live ranges are disjoint in Kahn order, but C and B are unordered.
  program p;
  auto in = p.add_buffer("in", buffer_kind::io_input, dtype::f32, {4});
  auto a = p.add_buffer("a", buffer_kind::activation, dtype::f32, {4});
  auto b = p.add_buffer("b", buffer_kind::activation, dtype::f32, {4});
  auto o1 = p.add_buffer("o1", buffer_kind::io_output, dtype::f32, {4});
  auto o2 = p.add_buffer("o2", buffer_kind::io_output, dtype::f32, {4});
  auto z = p.add_buffer("z", buffer_kind::activation, dtype::f32, {4});
  auto ca = p.add_counter(), cc = p.add_counter(), cz0 = p.add_counter(), cz1 = p.add_counter(), cb = p.add_counter(),
       cd = p.add_counter();
  p.add_task(task{0, opcode::copy, {in}, {a}, ca, {}, {}, -1, 0, 0, {}});                 // A#0
  p.add_task(task{0, opcode::copy, {a}, {o1}, cc, {{ca, 1}}, {}, -1, 0, 0, {}});          // C#1
  p.add_task(task{0, opcode::copy, {in}, {z}, cz0, {}, {}, -1, 0, 0, {}});                // Z0#2
  p.add_task(task{0, opcode::copy, {z}, {z}, cz1, {{cz0, 1}}, {}, -1, 0, 0, {}});         // Z1#3
  p.add_task(task{0, opcode::copy, {in}, {b}, cb, {{cz1, 1}}, {}, -1, 0, 0, {}});         // B#4
  p.add_task(task{0, opcode::copy, {b}, {o2}, cd, {{cb, 1}}, {}, -1, 0, 0, {}});          // D#5
  p.has_pages = true;
  p.pages.pages = {page{0, mem_space::global_scratch, 16, 0, 5}, page{1, mem_space::global_scratch, 16, 0, 5}};
  p.pages.buffer_to_page = {{a, 0}, {b, 0}, {z, 1}};
  auto r = validate(p);
  CHECK(r.ok);
  CHECK(has(r.warnings, "page aliasing: buffer 1 (a) and buffer 2 (b) share page 0"));
  // order B after C: no warning
  p.tasks[4].waits = {{cz1, 1}, {cc, 1}};
  r = validate(p);
  CHECK_MESSAGE(r.ok, dump(r));
  CHECK_FALSE(has(r.warnings, "page aliasing"));
  // a page smaller than its buffer is an error
  p.pages.pages[0].nbytes = 8;
  CHECK(has(validate(p).errors, "buffer 1 (a) needs 16 bytes but page 0 holds 8"));
  p.pages.pages[0].nbytes = 16;
  p.pages.buffer_to_page.push_back({o1, 1});
  CHECK(has(validate(p).warnings, "buffer 3 (o1) is bound to page 1 but is not an ACTIVATION"));
}

TEST_CASE("output reachability") {
  auto p = base();
  CHECK(validate(p).ok);
  p.add_buffer("logits", buffer_kind::io_output, dtype::f32, {1, 4});
  auto r = validate(p);
  CHECK_FALSE(r.ok);
  CHECK(has(r.errors, "output buffer 4 (logits) is never written by any task"));
}

TEST_CASE("writing a read-only buffer is an error") {
  auto p = base();
  p.tasks[1].outputs = {1};
  p.buffers[3].kind = buffer_kind::activation;
  CHECK(has(validate(p).errors, "COPY#1 writes buffer 1 (w), which is read-only (WEIGHT)"));
}

TEST_CASE("GPU label warning and config limits") {
  auto p = base();
  p.has_target = true;
  p.target = *find_target("h100");
  p.set_meta("gpu", "h100");
  auto r = validate(p);
  CHECK(r.warnings.empty());
  p.set_meta("gpu", "rtx4090");
  r = validate(p);
  CHECK(r.ok);
  CHECK(has(r.warnings, "meta gpu 'rtx4090' differs from target name 'h100'"));
  p.has_config = true;
  p.config.smem_bytes_per_block = 300 * 1024;
  CHECK(has(validate(p).errors, "config: smem_bytes_per_block 307200 exceeds target h100's opt-in limit of 232448"));
}

TEST_CASE("random valid programs pass; report lists everything") {
  for (std::uint64_t s = 1; s <= 30; ++s) {
    auto p = octo::testing::random_model_program({.seed = s, .layers = 2});
    auto r = validate(p);
    CHECK_MESSAGE(r.ok, dump(r));
    auto q = octo::testing::random_dag_program({.seed = s, .tasks = 120, .max_fanin = 4});
    r = validate(q);
    CHECK_MESSAGE(r.ok, dump(r));
  }
  auto p = base();
  p.tasks[1].waits = {};
  p.add_buffer("never", buffer_kind::io_output, dtype::f32, {1});
  auto rep = validate(p).report();
  CHECK(rep.view().find("validate: REJECTED") == 0);
  CHECK(rep.view().find("error: race: COPY#1") != std::string_view::npos);
  CHECK(rep.view().find("error: output buffer 4 (never)") != std::string_view::npos);
}

namespace {
// Independent oracle: explicit producer->waiter edges, then a backwards BFS per task.
std::set<std::pair<int, int>> racy_reads(const program& p) {
  const int n = static_cast<int>(p.tasks.size());
  std::vector<std::vector<int>> preds(static_cast<std::size_t>(n));
  for (int w = 0; w < n; ++w)
    for (const auto& wt : p.tasks[static_cast<std::size_t>(w)].waits)
      for (int pr = 0; pr < n; ++pr)
        if (p.tasks[static_cast<std::size_t>(pr)].out_counter == wt.counter) preds[static_cast<std::size_t>(w)].push_back(pr);
  std::set<std::pair<int, int>> out;
  for (int t = 0; t < n; ++t) {
    std::vector<char> seen(static_cast<std::size_t>(n), 0);
    std::vector<int> todo = preds[static_cast<std::size_t>(t)];
    std::set<int> written;
    while (!todo.empty()) {
      int v = todo.back();
      todo.pop_back();
      if (seen[static_cast<std::size_t>(v)]) continue;
      seen[static_cast<std::size_t>(v)] = 1;
      for (auto b : p.tasks[static_cast<std::size_t>(v)].outputs) written.insert(b);
      for (int u : preds[static_cast<std::size_t>(v)]) todo.push_back(u);
    }
    for (auto b : p.tasks[static_cast<std::size_t>(t)].inputs) {
      auto k = p.buffers[static_cast<std::size_t>(b)].kind;
      if ((k == buffer_kind::activation || k == buffer_kind::io_output) && !written.count(b)) out.insert({t, b});
    }
  }
  return out;
}
}  // namespace

TEST_CASE("happens-before agrees with a brute-force reachability oracle on mutated random DAGs") {
  octo::testing::rng64 rng{42};
  int races = 0, clean = 0;
  for (int iter = 0; iter < 150; ++iter) {
    auto p = octo::testing::random_dag_program(
        {.seed = rng.next(), .tasks = 40, .max_fanin = 3, .share_percent = 25, .window = 6});
    // drop one random wait
    std::vector<std::pair<int, int>> slots;
    for (int t = 0; t < static_cast<int>(p.tasks.size()); ++t)
      for (int k = 0; k < static_cast<int>(p.tasks[static_cast<std::size_t>(t)].waits.size()); ++k) slots.push_back({t, k});
    if (slots.empty()) continue;
    auto [t, k] = slots[rng.next() % slots.size()];
    auto& ws = p.tasks[static_cast<std::size_t>(t)].waits;
    ws.erase(ws.begin() + k);
    auto expected = racy_reads(p);
    auto r = validate(p);
    CHECK(r.ok == expected.empty());
    std::set<std::pair<int, int>> got;
    for (const auto& e : r.errors) {
      // "race: ALLREDUCE_SHARD#<t> reads buffer <b> (...)"
      auto v = e.view();
      REQUIRE(v.rfind("race: ALLREDUCE_SHARD#", 0) == 0);
      int tt = std::stoi(std::string(v.substr(22)));
      auto at = v.find("reads buffer ");
      int bb = std::stoi(std::string(v.substr(at + 13)));
      got.insert({tt, bb});
    }
    CHECK(got == expected);
    (expected.empty() ? clean : races)++;
  }
  CHECK(races > 20);  // the mutation really exercises both outcomes
  CHECK(clean > 5);
}

TEST_CASE("malformed programs: errors, never a crash (fuzz; run under sanitizers in CI)") {
  octo::testing::rng64 rng{7};
  for (int iter = 0; iter < 3000; ++iter) {
    auto p = octo::testing::random_model_program({.seed = rng.next(), .layers = 1});
    const int edits = rng.between(1, 4);
    auto any = [&](int lo, int hi) { return rng.between(lo, hi); };
    for (int e = 0; e < edits; ++e) {
      auto& t = p.tasks[static_cast<std::size_t>(any(0, static_cast<int>(p.tasks.size()) - 1))];
      switch (any(0, 11)) {
        case 0: t.inputs.push_back(any(-3, 80)); break;
        case 1: t.outputs.push_back(any(-3, 80)); break;
        case 2: t.out_counter = any(-3, 60); break;
        case 3: t.waits.push_back({any(-3, 60), any(-2, 5)}); break;
        case 4: t.op = static_cast<opcode>(any(0, 40)); break;
        case 5: t.id = any(-1, 100); break;
        case 6: t.sm = any(-3, 300); break;
        case 7: p.buffers[static_cast<std::size_t>(any(0, static_cast<int>(p.buffers.size()) - 1))].kind = static_cast<buffer_kind>(any(0, 9)); break;
        case 8: p.counters.pop_back(); break;
        case 9: p.buffers.pop_back(); break;
        case 10:
          p.has_pages = true;
          p.pages.buffer_to_page.push_back({any(-2, 80), any(-2, 3)});
          p.pages.pages.push_back(page{any(-1, 4), static_cast<mem_space>(any(0, 6)), any(-5, 100), 0, 0});
          break;
        default: t.params.items.push_back(param{static_cast<param_key>(any(0, 40)), rng.chance(50), any(-5, 5), 0.5, {}});
      }
    }
    auto r = validate(p);
    if (!r.ok) CHECK_FALSE(r.errors.empty());
  }
}
