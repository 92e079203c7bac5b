// In-kernel waits' plan (src/vulkan/kernel_waits.hpp), without a GPU: which state words each launch waits
// on and counts into, from a barrier plan; which tasks' launches can be counted.
#include <doctest/doctest.h>

#include <vector>

#include "../../src/vulkan/kernel_waits.hpp"

using namespace octo::vm::vulkan;

namespace {
barrier_step step(bool barrier, std::int32_t task) { return {barrier, task}; }
}  // namespace

TEST_CASE("kernel waits: each group waits for every task of the last group before it that has one") {
  // Groups: {t0, t1} | {t2 (two launches: alternatives)} | {t3 (a nop)} | {t4, t5}
  const std::vector<barrier_step> steps{step(false, 0), step(false, 1), step(true, 2), step(true, 3), step(true, 4),
                                        step(false, 5)};
  const std::vector<std::uint32_t> launches{1, 1, 2, 0, 1, 1};
  const auto planned = plan_kernel_waits(steps, launches);
  REQUIRE(planned);
  const auto& plan = *planned;
  CHECK(plan.groups == 4);
  CHECK(plan.words == kernel_wait_done_base + 4);  // the header, then one done word per group
  REQUIRE(plan.launches.size() == 6);
  CHECK(plan.barrier_before == std::vector<bool>(6, false));
  // The first group waits for nothing (a barrier precedes it in the command buffer).
  CHECK(plan.launches[0][0].wait_count == 0);
  CHECK(plan.launches[1][0].wait_count == 0);
  CHECK(plan.launches[0][0].done_group == 0);
  CHECK(plan.launches[1][0].done_group == 0);
  // Group 1 waits for group 0's two tasks; its two alternative launches are one task (one runs).
  REQUIRE(plan.launches[2].size() == 2);
  for (const auto& w : plan.launches[2]) {
    CHECK(w.wait_group == 0);
    CHECK(w.wait_count == 2);
    CHECK(w.done_group == 1);
  }
  CHECK(plan.launches[3].empty());
  // Group 3 skips the empty group 2 and waits for group 1's one task.
  for (std::size_t k : {4u, 5u}) {
    CHECK(plan.launches[k][0].wait_group == 1);
    CHECK(plan.launches[k][0].wait_count == 1);
    CHECK(plan.launches[k][0].done_group == 3);
  }
  // The packed push words (what shaders/common/kernel_wait_main.glsl unpacks).
  const auto w = plan.launches[4][0];
  kernel_wait_tuning t;
  CHECK(w.push(t)[0] == (w.wait_group | w.done_group << 14));
  CHECK(w.push(t)[1] == w.wait_count);
  t.backoff = 2;
  t.prefetch = false;
  CHECK(w.push(t)[0] == (w.wait_group | w.done_group << 14 | 2u << 28 | 1u << 31));
  CHECK_THROWS_AS(plan_kernel_waits(steps, {1, 1}), octo::error);
}

TEST_CASE("kernel waits: kept barriers, and programs the state words do not hold") {
  const std::vector<barrier_step> steps{step(false, 0), step(true, 1), step(true, 2), step(true, 3), step(true, 4)};
  kernel_wait_tuning t;
  t.barrier_every = 2;
  const auto plan = plan_kernel_waits(steps, {1, 1, 1, 1, 1}, t);
  REQUIRE(plan);
  // Groups 2 and 4 follow a real barrier and wait for nothing; 1 and 3 wait in the kernel.
  CHECK(plan->barrier_before == std::vector<bool>{false, false, true, false, true});
  CHECK(plan->launches[1][0].wait_count == 1);
  CHECK(plan->launches[2][0].wait_count == 0);
  CHECK(plan->launches[3][0].wait_group == 2);
  CHECK(plan->launches[4][0].wait_count == 0);
  // More groups than the packed group index holds: no plan (the VM records barriers).
  std::vector<barrier_step> many;
  for (int i = 0; i < 0x4000; ++i) many.push_back(step(i > 0, i));
  CHECK_FALSE(plan_kernel_waits(many, std::vector<std::uint32_t>(many.size(), 1)));
  many.resize(600);
  CHECK(plan_kernel_waits(many, std::vector<std::uint32_t>(600, 1)));
  // A group of 256 tasks would overflow its done word.
  CHECK_FALSE(plan_kernel_waits(std::vector<barrier_step>(256, step(false, 0)), std::vector<std::uint32_t>(256, 1)));
}

TEST_CASE("kernel waits: a task is counted only when exactly one of its launches runs at every position") {
  kernel_launch direct;
  direct.shader = "gemv_q8_0";
  CHECK(countable_launches({}, true));
  CHECK(countable_launches({&direct}, true));
  CHECK_FALSE(countable_launches({&direct, &direct}, true));  // two direct launches both run

  kernel_launch flash = direct, split = direct;
  indirect_groups any;
  any.min = 1;
  flash.indirect = any;
  CHECK(countable_launches({&flash}, true));
  flash.indirect->min = 0;  // may run no workgroups: its task would never be counted
  CHECK_FALSE(countable_launches({&flash}, true));
  CHECK(countable_launches({&flash}, false));  // recorded as a direct launch of its largest count
  // Decode attention's two kernels: split-key up to 128 keys, flash-decoding beyond.
  flash.indirect->min = 1;
  flash.indirect->n_min = 129;
  indirect_groups fixed;
  fixed.min = fixed.max = 4;
  fixed.n_max = 128;
  split.indirect = fixed;
  CHECK(countable_launches({&flash, &split}, true));
  CHECK_FALSE(countable_launches({&flash, &split}, false));  // both would run
  split.indirect->n_max = 127;  // a gap at 128 keys: neither runs
  CHECK_FALSE(countable_launches({&flash, &split}, true));
  split.indirect->n_max = 129;  // an overlap at 129: both run
  CHECK_FALSE(countable_launches({&flash, &split}, true));
  CHECK_FALSE(countable_launches({&flash}, true));  // one launch that runs only past 128 keys
}
