// In-kernel waits (shaders/common/kernel_wait.glsl, docs/vulkan.md "In-kernel waits"): the barriers of a
// barrier plan (barrier_plan.hpp) replaced by counters that each kernel waits on and signals. Pure logic
// (no Vulkan), shared by the recorder and its tests: which words of the state buffer each launch waits
// on and counts into, and whether a task's launches are safe to count.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "barrier_plan.hpp"
#include "kernel_registry.hpp"

namespace octo::vm::vulkan {

/// Where the waits' push constants start (the `_kw` modules declare them there: OCTO_KW_PUSH): the last
/// 8 bytes of the 128 every Vulkan device has. A kernel's own push constants must end before.
inline constexpr std::uint32_t kernel_wait_push_offset = 120;
inline constexpr std::uint32_t kernel_wait_push_bytes = 8;
/// The VM's state buffer (one, reused by every program: runs never overlap on the queue). The words'
/// indices travel as 16-bit halves, so a program's words stay below 2^16 - 1.
inline constexpr std::uint32_t kernel_wait_capacity_words = 16384;

/// The module a kernel's launch uses under in-kernel waits.
inline std::string kernel_wait_module(std::string_view shader) { return std::string(shader) + "_kw"; }

/// What one launch writes at kernel_wait_push_offset, packed (push()).
struct kernel_wait_words {
  std::uint32_t wait_word = 0, wait_count = 0;  // wait until word >= count (count 0: no wait)
  std::uint32_t done_word = 0, slot_word = 0;   // its workgroups count in slot_word; the last adds 1 to done_word
  std::array<std::uint32_t, 2> push() const { return {wait_word | done_word << 16, wait_count | slot_word << 16}; }
};

/// State words 0..2: the error word, then the address of the host-visible word a wait that gives up also
/// sets (lo, hi); the done words (one per group) and slot words (one per launch) follow.
inline constexpr std::uint32_t kernel_wait_first_word = 3;

struct kernel_wait_plan {
  std::uint32_t words = kernel_wait_first_word;  // all of the state words
  std::vector<std::vector<kernel_wait_words>> launches;  // per barrier step, per launch of its task
  std::uint32_t groups = 0;
};

/// `launches[k]`: how many launches step k of `steps` records (0 for a nop or a kernel with no work).
/// Groups are the runs of steps between barriers; a group waits on the last group before it that has a
/// task (an empty group has nothing to wait for, and what it would wait for already waited on the rest).
inline kernel_wait_plan plan_kernel_waits(const std::vector<barrier_step>& steps, const std::vector<std::uint32_t>& launches) {
  if (launches.size() != steps.size()) throw octo::error("octo: plan_kernel_waits: a launch count per step is needed");
  kernel_wait_plan plan;
  std::vector<std::uint32_t> group_of(steps.size(), 0), tasks_in_group;
  for (std::size_t k = 0; k < steps.size(); ++k) {
    if (k == 0 || steps[k].barrier_before) tasks_in_group.push_back(0);
    group_of[k] = static_cast<std::uint32_t>(tasks_in_group.size() - 1);
    if (launches[k] > 0) ++tasks_in_group.back();
  }
  plan.groups = static_cast<std::uint32_t>(tasks_in_group.size());
  std::uint32_t slot = kernel_wait_first_word + plan.groups;
  plan.launches.resize(steps.size());
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const std::uint32_t g = group_of[k];
    kernel_wait_words w;
    for (std::uint32_t h = g; h-- > 0;)
      if (tasks_in_group[h] > 0) {
        w.wait_word = kernel_wait_first_word + h;
        w.wait_count = tasks_in_group[h];
        break;
      }
    w.done_word = kernel_wait_first_word + g;
    for (std::uint32_t l = 0; l < launches[k]; ++l) {
      w.slot_word = slot++;
      plan.launches[k].push_back(w);
    }
  }
  plan.words = slot;
  return plan;
}

/// Whether a task's launches can be counted: exactly one of them runs workgroups at every position. One
/// direct launch does; so does one indirect launch whose rule never gives 0 groups; several launches
/// (kernel_launch::alternatives) must split the positions between them (indirect_groups n_min / n_max
/// ranges that tile 0 .. 2^32 - 1), each with at least one group in its range.
inline bool countable_launches(const std::vector<const kernel_launch*>& ls, bool indirect_on) {
  if (ls.empty()) return true;
  auto never_empty = [](const indirect_groups& r) { return r.min >= 1 && r.mul >= 1; };
  if (ls.size() == 1) {
    const auto& l = *ls.front();
    return !l.indirect || !indirect_on || (never_empty(*l.indirect) && l.indirect->n_min == 0 && l.indirect->n_max == 0xffffffffu);
  }
  if (!indirect_on) return false;  // alternatives recorded as direct launches would all run
  std::vector<indirect_groups> rs;
  for (const auto* l : ls) {
    if (!l->indirect || !never_empty(*l->indirect)) return false;
    rs.push_back(*l->indirect);
  }
  std::sort(rs.begin(), rs.end(), [](const auto& a, const auto& b) { return a.n_min < b.n_min; });
  std::uint64_t next = 0;
  for (const auto& r : rs) {
    if (r.n_min != next || r.n_max < r.n_min) return false;
    next = std::uint64_t{r.n_max} + 1;
  }
  return next == 0x100000000ull;
}

}  // namespace octo::vm::vulkan
