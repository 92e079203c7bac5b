// The task-DAG induced by counters (IR spec §2): producer -> waiter edges, Kahn's topological order and
// cycle witnesses. Everything is constexpr and iterative (no recursion), so it runs inside static_assert
// and on 5000+ task programs alike; out-of-range ids are skipped rather than trusted.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "octo/ir/program.hpp"

namespace octo::ir {

/// One dependency: task `from` signals a counter that task `to` waits on.
struct edge {
  std::int32_t from = 0;
  std::int32_t to = 0;
  friend constexpr bool operator==(const edge&, const edge&) = default;
};

namespace detail {

/// Producers and waiters of every counter in compressed (CSR) form. Edges are never materialised as
/// producer x waiter pairs: a counter shared by N tiles and awaited by M tasks costs N + M, not N * M.
struct counter_index {
  std::int32_t n_tasks = 0;
  std::int32_t n_counters = 0;
  std::vector<std::int32_t> prod_start;  // n_counters + 1
  std::vector<std::int32_t> prod;        // producer task ids, ascending per counter
  std::vector<std::int32_t> wait_start;  // n_counters + 1
  std::vector<std::int32_t> waiter;      // one entry per wait (a task waiting twice appears twice)
  std::vector<std::int32_t> threshold;   // aligned with waiter

  constexpr std::int32_t producers(std::int32_t c) const { return prod_start[c + 1] - prod_start[c]; }
  constexpr bool valid_counter(std::int32_t c) const { return c >= 0 && c < n_counters; }
};

constexpr counter_index index_counters(const program& p) {
  counter_index g;
  g.n_tasks = static_cast<std::int32_t>(p.tasks.size());
  g.n_counters = static_cast<std::int32_t>(p.counters.size());
  const auto nc = static_cast<std::size_t>(g.n_counters);
  g.prod_start.assign(nc + 1, 0);
  g.wait_start.assign(nc + 1, 0);
  for (const auto& t : p.tasks) {
    if (g.valid_counter(t.out_counter)) ++g.prod_start[static_cast<std::size_t>(t.out_counter) + 1];
    for (const auto& w : t.waits)
      if (g.valid_counter(w.counter)) ++g.wait_start[static_cast<std::size_t>(w.counter) + 1];
  }
  for (std::size_t c = 0; c < nc; ++c) {
    g.prod_start[c + 1] += g.prod_start[c];
    g.wait_start[c + 1] += g.wait_start[c];
  }
  g.prod.assign(static_cast<std::size_t>(g.prod_start[nc]), 0);
  g.waiter.assign(static_cast<std::size_t>(g.wait_start[nc]), 0);
  g.threshold.assign(static_cast<std::size_t>(g.wait_start[nc]), 0);
  std::vector<std::int32_t> pf(g.prod_start.begin(), g.prod_start.end() - 1);
  std::vector<std::int32_t> wf(g.wait_start.begin(), g.wait_start.end() - 1);
  for (std::int32_t t = 0; t < g.n_tasks; ++t) {
    const auto& tk = p.tasks[static_cast<std::size_t>(t)];
    if (g.valid_counter(tk.out_counter)) g.prod[static_cast<std::size_t>(pf[static_cast<std::size_t>(tk.out_counter)]++)] = t;
    for (const auto& w : tk.waits)
      if (g.valid_counter(w.counter)) {
        auto at = static_cast<std::size_t>(wf[static_cast<std::size_t>(w.counter)]++);
        g.waiter[at] = t;
        g.threshold[at] = w.threshold;
      }
  }
  return g;
}

/// The DAG as a node graph in CSR form: nodes [0, T) are tasks, [T, T + C) are counters. A task's
/// successor is its out_counter (plus, optionally, the next task of its SM queue); a counter's
/// successors are its waiters. A cycle among tasks is exactly a cycle of this graph.
struct node_graph {
  std::int32_t n_tasks = 0;
  std::vector<std::int32_t> start;
  std::vector<std::int32_t> adj;
  constexpr std::int32_t size() const { return static_cast<std::int32_t>(start.size()) - 1; }
};

/// `queue_next[t]` (optional, empty for none): the task after t in its SM's queue, or -1.
constexpr node_graph build_node_graph(const program& p, const counter_index& g,
                                      const std::vector<std::int32_t>& queue_next = {}) {
  node_graph n;
  n.n_tasks = g.n_tasks;
  const auto nt = static_cast<std::size_t>(g.n_tasks);
  const auto nn = nt + static_cast<std::size_t>(g.n_counters);
  n.start.assign(nn + 1, 0);
  for (std::size_t t = 0; t < nt; ++t) {
    std::int32_t k = g.valid_counter(p.tasks[t].out_counter) ? 1 : 0;
    if (!queue_next.empty() && queue_next[t] >= 0) ++k;
    n.start[t + 1] = k;
  }
  for (std::size_t c = 0; c < static_cast<std::size_t>(g.n_counters); ++c)
    n.start[nt + c + 1] = g.wait_start[c + 1] - g.wait_start[c];
  for (std::size_t i = 0; i < nn; ++i) n.start[i + 1] += n.start[i];
  n.adj.assign(static_cast<std::size_t>(n.start[nn]), 0);
  for (std::size_t t = 0; t < nt; ++t) {
    auto at = static_cast<std::size_t>(n.start[t]);
    if (g.valid_counter(p.tasks[t].out_counter)) n.adj[at++] = g.n_tasks + p.tasks[t].out_counter;
    if (!queue_next.empty() && queue_next[t] >= 0) n.adj[at++] = queue_next[t];
  }
  for (std::size_t c = 0; c < static_cast<std::size_t>(g.n_counters); ++c) {
    auto at = static_cast<std::size_t>(n.start[nt + c]);
    for (auto i = g.wait_start[c]; i < g.wait_start[c + 1]; ++i) n.adj[at++] = g.waiter[static_cast<std::size_t>(i)];
  }
  return n;
}

/// Kahn's algorithm over the node graph (FIFO, seeded in node order). Returns the task nodes in the
/// order they were released; fewer than n_tasks entries means a cycle.
constexpr std::vector<std::int32_t> kahn_tasks(const node_graph& n) {
  const auto nn = static_cast<std::size_t>(n.size());
  std::vector<std::int32_t> indeg(nn, 0);
  for (auto v : n.adj) ++indeg[static_cast<std::size_t>(v)];
  std::vector<std::int32_t> queue;
  queue.reserve(nn);
  for (std::size_t v = 0; v < nn; ++v)
    if (indeg[v] == 0) queue.push_back(static_cast<std::int32_t>(v));
  std::vector<std::int32_t> order;
  order.reserve(static_cast<std::size_t>(n.n_tasks));
  for (std::size_t head = 0; head < queue.size(); ++head) {
    auto v = queue[head];
    if (v < n.n_tasks) order.push_back(v);
    for (auto i = n.start[static_cast<std::size_t>(v)]; i < n.start[static_cast<std::size_t>(v) + 1]; ++i) {
      auto s = n.adj[static_cast<std::size_t>(i)];
      if (--indeg[static_cast<std::size_t>(s)] == 0) queue.push_back(s);
    }
  }
  return order;
}

/// A cycle of the node graph as a node list [v0, v1, ..., vk] with an edge vk -> v0, found by an
/// iterative three-colour DFS (explicit stack: fine at any depth). Empty when acyclic.
constexpr std::vector<std::int32_t> find_cycle(const node_graph& n) {
  const auto nn = static_cast<std::size_t>(n.size());
  std::vector<std::uint8_t> colour(nn, 0);  // 0 unseen, 1 on the stack, 2 done
  std::vector<std::int32_t> stack_node, stack_edge;
  for (std::size_t root = 0; root < nn; ++root) {
    if (colour[root] != 0) continue;
    stack_node.assign(1, static_cast<std::int32_t>(root));
    stack_edge.assign(1, n.start[root]);
    colour[root] = 1;
    while (!stack_node.empty()) {
      auto v = static_cast<std::size_t>(stack_node.back());
      auto& e = stack_edge.back();
      if (e == n.start[v + 1]) {
        colour[v] = 2;
        stack_node.pop_back();
        stack_edge.pop_back();
        continue;
      }
      auto s = n.adj[static_cast<std::size_t>(e++)];
      auto su = static_cast<std::size_t>(s);
      if (colour[su] == 1) {
        auto it = std::find(stack_node.begin(), stack_node.end(), s);
        return std::vector<std::int32_t>(it, stack_node.end());
      }
      if (colour[su] == 0) {
        colour[su] = 1;
        stack_node.push_back(s);
        stack_edge.push_back(n.start[su]);
      }
    }
  }
  return {};
}


/// Rows of 64-bit words, one row per task: a compact dynamic bitset matrix.
struct bit_rows {
  std::size_t words = 0;
  std::vector<std::uint64_t> bits;
  constexpr bool test(std::size_t row, std::size_t bit) const {
    return (bits[row * words + bit / 64] >> (bit % 64)) & 1u;
  }
  constexpr void set(std::size_t row, std::size_t bit) { bits[row * words + bit / 64] |= std::uint64_t(1) << (bit % 64); }
};

/// Transitive happens-before facts in one pass over a topological order: row t of the result holds the
/// union of `contrib(p)` over every transitive predecessor p of t. `contrib(p, set_bit)` calls
/// set_bit(i) for each bit p contributes. Counters are the join points, so the cost is
/// O((T + C + waits) * nbits / 64), never producer x waiter.
template <class Contrib>
constexpr bit_rows propagate_before(const program& p, const counter_index& g, const std::vector<std::int32_t>& topo,
                                    std::size_t nbits, Contrib contrib) {
  bit_rows in;
  in.words = (nbits + 63) / 64;
  const auto w = in.words;
  in.bits.assign(static_cast<std::size_t>(g.n_tasks) * w, 0);
  std::vector<std::uint64_t> at_counter(static_cast<std::size_t>(g.n_counters) * w, 0);
  for (auto t : topo) {
    const auto tu = static_cast<std::size_t>(t);
    const auto& tk = p.tasks[tu];
    for (const auto& wt : tk.waits)
      if (g.valid_counter(wt.counter))
        for (std::size_t i = 0; i < w; ++i) in.bits[tu * w + i] |= at_counter[static_cast<std::size_t>(wt.counter) * w + i];
    if (g.valid_counter(tk.out_counter)) {
      const auto cu = static_cast<std::size_t>(tk.out_counter);
      for (std::size_t i = 0; i < w; ++i) at_counter[cu * w + i] |= in.bits[tu * w + i];
      contrib(t, [&](std::size_t bit) { at_counter[cu * w + bit / 64] |= std::uint64_t(1) << (bit % 64); });
    }
  }
  return in;
}

/// The streaming form of propagate_before: calls visit(t, row) for each task in topological order, `row`
/// (a vector of 64-bit words) holding what t's transitive predecessors contribute, and keeps only the
/// rows of counters some later task still waits on. Memory is O(frontier * nbits / 64), not
/// O(tasks * nbits / 64), so a 100k-task program costs what its widest cut costs.
template <class Contrib, class Visit>
constexpr void stream_before(const program& p, const counter_index& g, const std::vector<std::int32_t>& topo,
                             std::size_t nbits, Contrib contrib, Visit visit) {
  const std::size_t w = (nbits + 63) / 64;
  const auto nc = static_cast<std::size_t>(g.n_counters);
  std::vector<std::int32_t> pos(static_cast<std::size_t>(g.n_tasks), 0);
  for (std::size_t i = 0; i < topo.size(); ++i) pos[static_cast<std::size_t>(topo[i])] = static_cast<std::int32_t>(i);
  std::vector<std::int32_t> last_use(nc, -1);
  for (std::size_t c = 0; c < nc; ++c)
    for (auto i = g.wait_start[c]; i < g.wait_start[c + 1]; ++i)
      last_use[c] = std::max(last_use[c], pos[static_cast<std::size_t>(g.waiter[static_cast<std::size_t>(i)])]);
  std::vector<std::int32_t> slot_of(nc, -1), free_slots;
  std::vector<std::uint64_t> pool, row(w, 0);
  for (std::size_t i = 0; i < topo.size(); ++i) {
    const auto t = topo[i];
    const auto& tk = p.tasks[static_cast<std::size_t>(t)];
    std::fill(row.begin(), row.end(), 0);
    for (const auto& wt : tk.waits)
      if (g.valid_counter(wt.counter) && slot_of[static_cast<std::size_t>(wt.counter)] >= 0) {
        const auto base = static_cast<std::size_t>(slot_of[static_cast<std::size_t>(wt.counter)]) * w;
        for (std::size_t k = 0; k < w; ++k) row[k] |= pool[base + k];
      }
    visit(t, row);
    for (const auto& wt : tk.waits)
      if (g.valid_counter(wt.counter)) {
        auto& s = slot_of[static_cast<std::size_t>(wt.counter)];
        if (s >= 0 && last_use[static_cast<std::size_t>(wt.counter)] == static_cast<std::int32_t>(i)) {
          free_slots.push_back(s);
          s = -1;
        }
      }
    if (!g.valid_counter(tk.out_counter) || last_use[static_cast<std::size_t>(tk.out_counter)] <= static_cast<std::int32_t>(i))
      continue;  // nobody waits on this counter later: its row would never be read
    auto& s = slot_of[static_cast<std::size_t>(tk.out_counter)];
    if (s < 0) {
      if (!free_slots.empty()) {
        s = free_slots.back();
        free_slots.pop_back();
        std::fill(pool.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(s) * w),
                  pool.begin() + static_cast<std::ptrdiff_t>((static_cast<std::size_t>(s) + 1) * w), 0);
      } else {
        s = static_cast<std::int32_t>(pool.size() / (w == 0 ? 1 : w));
        pool.resize(pool.size() + w, 0);
      }
    }
    const auto base = static_cast<std::size_t>(s) * w;
    for (std::size_t k = 0; k < w; ++k) pool[base + k] |= row[k];
    contrib(t, [&](std::size_t bit) { pool[base + bit / 64] |= std::uint64_t(1) << (bit % 64); });
  }
}

}  // namespace detail

/// Producer -> waiter edges, counter by counter (IR spec §2). A task that waits twice on one counter
/// yields one edge per producer, not two. Out-of-range counter ids contribute nothing.
constexpr std::vector<edge> dependency_edges(const program& p) {
  auto g = detail::index_counters(p);
  std::vector<edge> out;
  std::vector<std::int32_t> ws;
  for (std::int32_t c = 0; c < g.n_counters; ++c) {
    const auto cu = static_cast<std::size_t>(c);
    ws.assign(g.waiter.begin() + g.wait_start[cu], g.waiter.begin() + g.wait_start[cu + 1]);
    std::sort(ws.begin(), ws.end());
    ws.erase(std::unique(ws.begin(), ws.end()), ws.end());
    for (auto i = g.prod_start[cu]; i < g.prod_start[cu + 1]; ++i)
      for (auto w : ws) out.push_back(edge{g.prod[static_cast<std::size_t>(i)], w});
  }
  return out;
}

/// A topological order of the tasks by Kahn's algorithm, or nullopt when the dependency graph has a cycle.
constexpr std::optional<std::vector<std::int32_t>> topological_order(const program& p) {
  auto g = detail::index_counters(p);
  auto order = detail::kahn_tasks(detail::build_node_graph(p, g));
  if (order.size() != p.tasks.size()) return std::nullopt;
  return order;
}

/// The tasks of one dependency cycle, in edge order (the last task signals a counter the first waits
/// on); empty when the program is acyclic.
constexpr std::vector<std::int32_t> find_cycle_tasks(const program& p) {
  auto g = detail::index_counters(p);
  auto cyc = detail::find_cycle(detail::build_node_graph(p, g));
  std::vector<std::int32_t> tasks;
  for (auto v : cyc)
    if (v < g.n_tasks) tasks.push_back(v);
  return tasks;
}

}  // namespace octo::ir
