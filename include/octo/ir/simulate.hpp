// The backstops of docs/ir.md §3.4: simulate_counters() replays the counter protocol to find tasks that can
// never fire; simulate_adversarial() fires ready tasks in hostile orders and reports reads of unwritten data.
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "octo/detail/constexpr_text.hpp"
#include "octo/ir/dependency_graph.hpp"
#include "octo/ir/program.hpp"

namespace octo::ir {

struct simulation {
  std::vector<std::int32_t> order;  // tasks in the order they fired
  std::vector<std::int32_t> stuck;  // tasks that never became ready, ascending; empty iff every wait is met
  friend constexpr bool operator==(const simulation&, const simulation&) = default;
};

namespace detail {

/// Counter-driven execution state shared by both simulators: a task is ready when every wait is met.
/// Waits are kept per counter sorted by threshold, so each increment releases them in O(log) amortised.
struct counter_machine {
  const program& p;
  std::vector<std::int32_t> missing;  // unmet waits per task
  std::vector<std::int64_t> value;    // counter values
  std::vector<std::int32_t> wstart;   // per-counter wait lists (threshold, task), sorted by threshold
  std::vector<std::pair<std::int64_t, std::int32_t>> waits;
  std::vector<std::int32_t> next;     // first unmet wait per counter
  std::vector<std::int32_t> ready;

  constexpr explicit counter_machine(const program& prog) : p(prog) {
    const auto nt = p.tasks.size(), nc = p.counters.size();
    auto ok = [nc](std::int32_t c) { return c >= 0 && static_cast<std::size_t>(c) < nc; };
    missing.assign(nt, 0);
    value.assign(nc, 0);
    for (std::size_t c = 0; c < nc; ++c) value[c] = p.counters[c].init;
    wstart.assign(nc + 1, 0);
    for (std::size_t t = 0; t < nt; ++t)
      for (const auto& w : p.tasks[t].waits) {
        ++missing[t];  // a wait on a counter that does not exist is never met
        if (ok(w.counter)) ++wstart[static_cast<std::size_t>(w.counter) + 1];
      }
    for (std::size_t c = 0; c < nc; ++c) wstart[c + 1] += wstart[c];
    waits.assign(static_cast<std::size_t>(wstart[nc]), {});
    std::vector<std::int32_t> fill(wstart.begin(), wstart.end() - 1);
    for (std::size_t t = 0; t < nt; ++t)
      for (const auto& w : p.tasks[t].waits)
        if (ok(w.counter))
          waits[static_cast<std::size_t>(fill[static_cast<std::size_t>(w.counter)]++)] = {w.threshold, static_cast<std::int32_t>(t)};
    for (std::size_t c = 0; c < nc; ++c)
      std::sort(waits.begin() + wstart[c], waits.begin() + wstart[c + 1]);
    next.assign(wstart.begin(), wstart.end() - 1);
    for (std::size_t c = 0; c < nc; ++c) release(c);
    for (std::size_t t = 0; t < nt; ++t)
      if (missing[t] == 0) ready.push_back(static_cast<std::int32_t>(t));
  }

  constexpr void release(std::size_t c) {
    while (next[c] < wstart[c + 1] && waits[static_cast<std::size_t>(next[c])].first <= value[c]) {
      auto t = static_cast<std::size_t>(waits[static_cast<std::size_t>(next[c])].second);
      ++next[c];
      if (--missing[t] == 0) ready.push_back(static_cast<std::int32_t>(t));
    }
  }

  /// Completes task t: one increment of its out_counter; newly ready tasks are appended to `ready`.
  constexpr void fire(std::int32_t t) {
    auto c = p.tasks[static_cast<std::size_t>(t)].out_counter;
    if (c < 0 || static_cast<std::size_t>(c) >= p.counters.size()) return;
    ++value[static_cast<std::size_t>(c)];
    release(static_cast<std::size_t>(c));
  }
};

}  // namespace detail

/// Replays the counter protocol (fire every ready task, FIFO) from zeroed counters. `stuck` lists the
/// tasks some wait of which can never be met (docs/ir.md §3.4): a deadlock, not a race.
constexpr simulation simulate_counters(const program& p) {
  detail::counter_machine m(p);
  simulation s;
  for (std::size_t head = 0; head < m.ready.size(); ++head) {
    auto t = m.ready[head];
    s.order.push_back(t);
    m.fire(t);
  }
  std::vector<std::uint8_t> fired(p.tasks.size(), 0);
  for (auto t : s.order) fired[static_cast<std::size_t>(t)] = 1;
  for (std::size_t t = 0; t < p.tasks.size(); ++t)
    if (!fired[t]) s.stuck.push_back(static_cast<std::int32_t>(t));
  return s;
}

/// Fires ready tasks in `seeds` hostile orders and reports every read of an ACTIVATION or IO_OUTPUT
/// buffer that no fired task has written yet, and every read of a KV_CACHE before all of this pass's
/// writers of it fired (the reader being one of them aside). Seed 0 fires FIFO, seed 1 LIFO; every
/// further seed picks a victim buffer (one that some task reads) and starves its writers: they fire only
/// when nothing else is ready, so a reader not ordered after them runs first. Other choices are random
/// (seeded mt19937_64, so results are reproducible). The dynamic backstop of validate()'s static race
/// checks: a clean result is evidence, not proof. Each (task, input) violation is reported once.
inline std::vector<text> simulate_adversarial(const program& p, int seeds = 16) {
  using octo::detail::cat;
  std::vector<text> out;
  const auto nb = p.buffers.size();
  auto buffer_ok = [nb](std::int32_t b) { return b >= 0 && static_cast<std::size_t>(b) < nb; };
  std::vector<std::int32_t> kv_writers(nb, 0);
  for (const auto& t : p.tasks)
    for (auto b : t.outputs)
      if (buffer_ok(b) && p.buffers[static_cast<std::size_t>(b)].kind == buffer_kind::kv_cache)
        ++kv_writers[static_cast<std::size_t>(b)];
  auto tname = [&](std::int32_t t) {
    auto op = p.tasks[static_cast<std::size_t>(t)].op;
    return cat(static_cast<int>(op) < opcode_count ? name(op) : std::string_view("TASK"), "#", t);
  };
  std::vector<std::int32_t> candidates;  // buffers some task reads that the race rules cover
  {
    std::vector<std::uint8_t> seen(nb, 0);
    for (const auto& t : p.tasks)
      for (auto b : t.inputs)
        if (buffer_ok(b) && !seen[static_cast<std::size_t>(b)]) {
          seen[static_cast<std::size_t>(b)] = 1;
          auto k = p.buffers[static_cast<std::size_t>(b)].kind;
          if (k == buffer_kind::activation || k == buffer_kind::io_output || k == buffer_kind::kv_cache)
            candidates.push_back(b);
        }
  }
  std::vector<std::uint8_t> reported;  // per (task, input slot)
  reported.assign(p.tasks.size() * 8 + 8, 0);
  for (int seed = 0; seed < seeds; ++seed) {
    detail::counter_machine m(p);
    std::vector<std::uint8_t> written(nb, 0);
    std::vector<std::int32_t> kv_done(nb, 0);
    std::mt19937_64 rng(static_cast<std::uint64_t>(seed) * 0x9E3779B97F4A7C15ull + 1);
    std::size_t head = 0;  // m.ready[head..] is the ready pool
    auto violation = [&](std::int32_t t, std::int32_t b) {
      const auto k = p.buffers[static_cast<std::size_t>(b)].kind;
      if (k == buffer_kind::activation || k == buffer_kind::io_output) return !written[static_cast<std::size_t>(b)];
      if (k != buffer_kind::kv_cache) return false;
      const auto& outs = p.tasks[static_cast<std::size_t>(t)].outputs;
      if (std::find(outs.begin(), outs.end(), b) != outs.end()) return false;
      return kv_done[static_cast<std::size_t>(b)] < kv_writers[static_cast<std::size_t>(b)];
    };
    // the victim: a read transient or KV buffer, chosen per seed
    std::int32_t victim = -1;
    if (seed >= 2 && !candidates.empty()) {
      // every candidate gets a turn when the seeds suffice; otherwise a random one
      const auto n = candidates.size();
      const auto turn = static_cast<std::size_t>(seed - 2);
      victim = candidates[n <= static_cast<std::size_t>(seeds - 2) ? turn % n : static_cast<std::size_t>(rng() % n)];
    }
    auto starved = [&](std::int32_t t) {
      if (victim < 0) return false;
      const auto& outs = p.tasks[static_cast<std::size_t>(t)].outputs;
      return std::find(outs.begin(), outs.end(), victim) != outs.end();
    };
    while (head < m.ready.size()) {
      std::size_t pick = head;
      if (seed == 1) {
        pick = m.ready.size() - 1;
      } else if (seed >= 2) {
        // move starved tasks out of the way, pick randomly among the rest
        std::size_t free_end = head;
        for (std::size_t i = head; i < m.ready.size(); ++i)
          if (!starved(m.ready[i])) std::swap(m.ready[i], m.ready[free_end++]);
        const std::size_t pool = free_end > head ? free_end - head : m.ready.size() - head;
        pick = head + static_cast<std::size_t>(rng() % pool);
      }
      std::swap(m.ready[head], m.ready[pick]);
      auto t = m.ready[head++];
      const auto& tk = p.tasks[static_cast<std::size_t>(t)];
      for (std::size_t slot = 0; slot < tk.inputs.size() && slot < 8; ++slot) {
        auto b = tk.inputs[slot];
        if (!buffer_ok(b) || !violation(t, b)) continue;
        auto& rep = reported[static_cast<std::size_t>(t) * 8 + slot];
        if (rep) continue;
        rep = 1;
        const auto& bf = p.buffers[static_cast<std::size_t>(b)];
        out.push_back(cat("race (interleaving ", seed, "): ", tname(t), " read ", name(bf.kind), " buffer ", b, " (",
                          bf.name, ") before ",
                          bf.kind == buffer_kind::kv_cache ? "every task writing it this pass had run"
                                                           : "any task had written it"));
      }
      for (auto b : tk.outputs)
        if (buffer_ok(b)) {
          written[static_cast<std::size_t>(b)] = 1;
          ++kv_done[static_cast<std::size_t>(b)];
        }
      m.fire(t);
    }
  }
  return out;
}

}  // namespace octo::ir
