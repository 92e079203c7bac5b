// The order in which a program's tasks are recorded and where compute->compute barriers go: a barrier
// covers every task recorded before it, and one is placed only before a task whose counter waits are
// not covered yet. Tasks that are ready and covered are recorded first, so each barrier covers a whole
// wavefront of the DAG. Pure logic (no Vulkan), shared by the recorder and its tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "octo/error.hpp"
#include "octo/ir/program.hpp"

namespace octo::vm::vulkan {

struct barrier_step {
  bool barrier_before = false;
  std::int32_t task = 0;
};

inline std::vector<barrier_step> plan_barriers(const ir::program& p) {
  std::vector<std::int64_t> recorded(p.counters.size(), 0), covered(p.counters.size(), 0);
  for (std::size_t c = 0; c < p.counters.size(); ++c) recorded[c] = covered[c] = p.counters[c].init;
  auto counter_ok = [&](std::int32_t c) { return c >= 0 && static_cast<std::size_t>(c) < p.counters.size(); };
  std::vector<bool> done(p.tasks.size(), false);
  std::vector<barrier_step> steps;
  std::size_t left = p.tasks.size();
  bool pending_barrier = false;
  while (left > 0) {
    bool progress = false;
    for (std::size_t i = 0; i < p.tasks.size(); ++i) {
      if (done[i]) continue;
      const auto& t = p.tasks[i];
      bool covered_now = true;
      for (const auto& w : t.waits)
        if (!counter_ok(w.counter) || covered[static_cast<std::size_t>(w.counter)] < w.threshold) covered_now = false;
      if (!covered_now) continue;
      steps.push_back({pending_barrier, static_cast<std::int32_t>(i)});
      pending_barrier = false;
      done[i] = true;
      --left;
      progress = true;
      if (counter_ok(t.out_counter)) ++recorded[static_cast<std::size_t>(t.out_counter)];
    }
    if (left == 0) break;
    if (progress) {
      // Anything newly recorded may make more tasks ready; they need the barrier (covered = recorded).
      covered = recorded;
      pending_barrier = true;
      continue;
    }
    // Nothing could be recorded even after a barrier: a wait that no producer can satisfy.
    for (std::size_t i = 0; i < p.tasks.size(); ++i)
      if (!done[i])
        throw octo::error("octo: task " + std::to_string(i) + " (" + std::string(ir::name(p.tasks[i].op)) +
                          ") waits on a counter that never reaches its threshold");
  }
  return steps;
}

}  // namespace octo::vm::vulkan
