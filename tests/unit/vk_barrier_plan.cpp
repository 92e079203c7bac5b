// The Vulkan VM's recording order and barrier placement (src/vulkan/barrier_plan.hpp), without a GPU:
// wavefronts of covered tasks, one barrier between wavefronts, unsatisfiable waits as errors.
#include <doctest/doctest.h>

#include <vector>

#include "../../src/vulkan/barrier_plan.hpp"
#include "octo/error.hpp"

namespace ir = octo::ir;
using octo::vm::vulkan::plan_barriers;

namespace {
std::int32_t add(ir::program& p, std::int32_t counter, std::vector<ir::wait> waits) {
  ir::task t;
  t.op = ir::opcode::nop;
  t.out_counter = counter;
  t.waits = std::move(waits);
  return p.add_task(t);
}
}  // namespace

TEST_CASE("wavefronts: independent tasks share one, each dependent level starts with a barrier") {
  ir::program p;
  for (int i = 0; i < 6; ++i) p.add_counter();
  add(p, 0, {});                    // t0  level 0
  add(p, 1, {});                    // t1  level 0
  add(p, 2, {{0, 1}, {1, 1}});      // t2  level 1
  add(p, 4, {{2, 1}, {3, 1}});      // t3  level 2 (needs t5 too)
  add(p, 5, {{4, 1}});              // t4  level 3
  add(p, 3, {});                    // t5  level 0, though last by id
  auto steps = plan_barriers(p);
  REQUIRE(steps.size() == 6);
  std::vector<std::int32_t> order;
  int barriers = 0;
  for (const auto& s : steps) {
    order.push_back(s.task);
    barriers += s.barrier_before ? 1 : 0;
  }
  CHECK(order == std::vector<std::int32_t>{0, 1, 5, 2, 3, 4});
  CHECK(barriers == 3);
  CHECK_FALSE(steps[0].barrier_before);
  CHECK_FALSE(steps[2].barrier_before);  // t5 joins the first wavefront
  CHECK(steps[3].barrier_before);        // before t2
  CHECK(steps[4].barrier_before);        // before t3
  CHECK(steps[5].barrier_before);        // before t4
}

TEST_CASE("a shared counter: the waiter needs every producer, and one barrier covers them all") {
  ir::program p;
  p.add_counter();
  p.add_counter();
  for (int i = 0; i < 4; ++i) add(p, 0, {});  // four tiles signal counter 0
  add(p, 1, {{0, 4}});
  auto steps = plan_barriers(p);
  REQUIRE(steps.size() == 5);
  CHECK(steps[4].task == 4);
  CHECK(steps[4].barrier_before);
  int barriers = 0;
  for (const auto& s : steps) barriers += s.barrier_before ? 1 : 0;
  CHECK(barriers == 1);
}

TEST_CASE("a wait no producer can satisfy is an error naming the task") {
  ir::program p;
  p.add_counter();
  p.add_counter();
  add(p, 0, {});
  add(p, 1, {{0, 2}});  // only one task signals counter 0
  CHECK_THROWS_WITH_AS(plan_barriers(p), doctest::Contains("task 1"), octo::error);
  ir::program empty;
  CHECK(plan_barriers(empty).empty());
}
