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
  const auto plan = plan_kernel_waits(steps, launches);
  const std::uint32_t f = kernel_wait_first_word;
  CHECK(plan.groups == 4);
  CHECK(plan.words == f + 4 + 6);  // the header, 4 done words, 6 launches' slot words
  REQUIRE(plan.launches.size() == 6);
  // The first group waits for nothing (a barrier precedes it in the command buffer).
  CHECK(plan.launches[0][0].wait_count == 0);
  CHECK(plan.launches[1][0].wait_count == 0);
  CHECK(plan.launches[0][0].done_word == f);
  CHECK(plan.launches[1][0].done_word == f);
  // Group 1 waits for group 0's two tasks; both of its alternative launches count as one task.
  REQUIRE(plan.launches[2].size() == 2);
  for (const auto& w : plan.launches[2]) {
    CHECK(w.wait_word == f);
    CHECK(w.wait_count == 2);
    CHECK(w.done_word == f + 1);
  }
  CHECK(plan.launches[3].empty());
  // Group 3 skips the empty group 2 and waits for group 1's one task.
  for (std::size_t k : {4u, 5u}) {
    CHECK(plan.launches[k][0].wait_word == f + 1);
    CHECK(plan.launches[k][0].wait_count == 1);
    CHECK(plan.launches[k][0].done_word == f + 3);
  }
  // Every launch has its own slot word, after the done words.
  std::vector<std::uint32_t> slots;
  for (const auto& l : plan.launches)
    for (const auto& w : l) slots.push_back(w.slot_word);
  CHECK(slots == std::vector<std::uint32_t>{f + 4, f + 5, f + 6, f + 7, f + 8, f + 9});
  // The packed push words: 16-bit halves.
  const auto w = plan.launches[4][0];
  CHECK(w.push()[0] == (w.wait_word | w.done_word << 16));
  CHECK(w.push()[1] == (w.wait_count | w.slot_word << 16));
  CHECK_THROWS_AS(plan_kernel_waits(steps, {1, 1}), octo::error);
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
