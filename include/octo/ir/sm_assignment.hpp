// SM assignment: resolves ScheduleConfig.sm_assignment (round_robin, load_balance by est_bytes, or an
// explicit map) into Task.sm. Each SM runs its tasks in task-list order, so that order must respect the DAG.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "octo/detail/constexpr_text.hpp"
#include "octo/error.hpp"
#include "octo/ir/dependency_graph.hpp"
#include "octo/ir/program.hpp"
#include "octo/ir/schedule_config.hpp"

namespace octo::ir {

namespace detail {
/// The first task that waits on a counter signalled by a task later in the list, or -1. When there is
/// none the task list is a topological order, so every SM queue (a subsequence) is a linear extension.
constexpr std::int32_t first_out_of_order(const program& p) {
  auto g = index_counters(p);
  std::vector<std::int32_t> last_producer(static_cast<std::size_t>(g.n_counters), -1);
  for (std::int32_t c = 0; c < g.n_counters; ++c)
    if (g.producers(c) > 0) last_producer[static_cast<std::size_t>(c)] = g.prod[static_cast<std::size_t>(g.prod_start[static_cast<std::size_t>(c) + 1] - 1)];
  for (std::size_t t = 0; t < p.tasks.size(); ++t)
    for (const auto& w : p.tasks[t].waits)
      if (g.valid_counter(w.counter) && last_producer[static_cast<std::size_t>(w.counter)] >= static_cast<std::int32_t>(t))
        return static_cast<std::int32_t>(t);
  return -1;
}
}  // namespace detail

/// Sets every task's `sm` from `cfg.sm_assignment` over `num_sms` SMs:
/// round_robin: task i -> i mod num_sms; load_balance: each task, in list order, to the SM with the
/// fewest est_bytes so far (ties: fewer tasks, then lower SM); explicit_map: cfg.sm_map, with unmapped
/// tasks balanced as load_balance does. round_robin and load_balance require the task list to be in
/// dependency order (throw octo::error otherwise) so each SM queue is a linear extension of the DAG; an
/// explicit map is applied as given and validate() judges it.
constexpr void assign_sms(program& p, const schedule_config& cfg, std::int32_t num_sms) {
  using octo::detail::cat;
  if (num_sms < 1) throw octo::error(cat("assign_sms: num_sms must be >= 1, got ", num_sms).str());
  const auto nt = p.tasks.size();
  const bool expl = cfg.sm_assignment == sm_assignment_mode::explicit_map;
  if (!expl) {
    auto bad = detail::first_out_of_order(p);
    if (bad >= 0)
      throw octo::error(cat("assign_sms: task ", bad, " waits on a counter signalled later in the task list; "
                            "order the tasks by dependency first").str());
  }
  std::vector<std::int32_t> chosen(nt, unassigned_sm);
  if (expl)
    for (const auto& m : cfg.sm_map) {
      if (m.task < 0 || static_cast<std::size_t>(m.task) >= nt)
        throw octo::error(cat("assign_sms: explicit map names task ", m.task, ", which does not exist").str());
      if (m.sm < 0 || m.sm >= num_sms)
        throw octo::error(cat("assign_sms: explicit map puts task ", m.task, " on SM ", m.sm, " of ", num_sms).str());
      chosen[static_cast<std::size_t>(m.task)] = m.sm;
    }
  if (cfg.sm_assignment == sm_assignment_mode::round_robin) {
    for (std::size_t t = 0; t < nt; ++t) chosen[t] = static_cast<std::int32_t>(t % static_cast<std::size_t>(num_sms));
  } else {
    // min-heap of (bytes, tasks, sm); pre-load explicit placements
    struct load { std::int64_t bytes; std::int64_t tasks; std::int32_t sm; };
    std::vector<load> loads(static_cast<std::size_t>(num_sms));
    for (std::int32_t s = 0; s < num_sms; ++s) loads[static_cast<std::size_t>(s)] = {0, 0, s};
    for (std::size_t t = 0; t < nt; ++t)
      if (chosen[t] >= 0) {
        auto& l = loads[static_cast<std::size_t>(chosen[t])];
        l.bytes += std::max<std::int64_t>(p.tasks[t].est_bytes, 0);
        ++l.tasks;
      }
    auto worse = [](const load& a, const load& b) {
      if (a.bytes != b.bytes) return a.bytes > b.bytes;
      if (a.tasks != b.tasks) return a.tasks > b.tasks;
      return a.sm > b.sm;
    };
    std::make_heap(loads.begin(), loads.end(), worse);
    for (std::size_t t = 0; t < nt; ++t) {
      if (chosen[t] >= 0) continue;
      std::pop_heap(loads.begin(), loads.end(), worse);
      auto& l = loads.back();
      chosen[t] = l.sm;
      l.bytes += std::max<std::int64_t>(p.tasks[t].est_bytes, 0);
      ++l.tasks;
      std::push_heap(loads.begin(), loads.end(), worse);
    }
  }
  for (std::size_t t = 0; t < nt; ++t) p.tasks[t].sm = chosen[t];
}

}  // namespace octo::ir
