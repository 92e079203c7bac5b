// The task-DAG induced by counters (docs/ir.md §2): producer -> waiter edges, Kahn's topological order and
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

// The graph passes below run inside static_assert, where g++ charges every call (a std::vector index or
// iterator step is one) and every loop trip: they walk raw pointers taken once (docs/compile-time.md).

constexpr counter_index index_counters(const program& p) {
  counter_index g;
  const std::size_t nt = p.tasks.size(), nc = p.counters.size();
  g.n_tasks = static_cast<std::int32_t>(nt);
  g.n_counters = static_cast<std::int32_t>(nc);
  const std::int32_t ncs = g.n_counters;
  g.prod_start.assign(nc + 1, 0);
  g.wait_start.assign(nc + 1, 0);
  std::int32_t* ps = g.prod_start.data();
  std::int32_t* ws = g.wait_start.data();
  const task* tasks = p.tasks.data();
  for (std::size_t t = 0; t < nt; ++t) {
    const task& tk = tasks[t];
    if (tk.out_counter >= 0 && tk.out_counter < ncs) ++ps[tk.out_counter + 1];
    const wait* w = tk.waits.data();
    for (std::size_t k = 0, e = tk.waits.size(); k < e; ++k)
      if (w[k].counter >= 0 && w[k].counter < ncs) ++ws[w[k].counter + 1];
  }
  for (std::size_t c = 0; c < nc; ++c) {
    ps[c + 1] += ps[c];
    ws[c + 1] += ws[c];
  }
  g.prod.assign(static_cast<std::size_t>(ps[nc]), 0);
  g.waiter.assign(static_cast<std::size_t>(ws[nc]), 0);
  g.threshold.assign(static_cast<std::size_t>(ws[nc]), 0);
  std::int32_t* prod = g.prod.data();
  std::int32_t* waiter = g.waiter.data();
  std::int32_t* thr = g.threshold.data();
  // Fill with the starts as cursors (each ends at the next start), then shift them back.
  for (std::size_t t = 0; t < nt; ++t) {
    const task& tk = tasks[t];
    const auto ti = static_cast<std::int32_t>(t);
    if (tk.out_counter >= 0 && tk.out_counter < ncs) prod[ps[tk.out_counter]++] = ti;
    const wait* w = tk.waits.data();
    for (std::size_t k = 0, e = tk.waits.size(); k < e; ++k)
      if (w[k].counter >= 0 && w[k].counter < ncs) {
        const auto at = ws[w[k].counter]++;
        waiter[at] = ti;
        thr[at] = w[k].threshold;
      }
  }
  for (std::size_t c = nc; c > 0; --c) {
    ps[c] = ps[c - 1];
    ws[c] = ws[c - 1];
  }
  ps[0] = 0;
  ws[0] = 0;
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
  const auto nt = static_cast<std::size_t>(g.n_tasks), nc = static_cast<std::size_t>(g.n_counters);
  const auto nn = nt + nc;
  n.start.assign(nn + 1, 0);
  std::int32_t* st = n.start.data();
  const task* tasks = p.tasks.data();
  const std::int32_t* qn = queue_next.empty() ? nullptr : queue_next.data();
  const std::int32_t* ws = g.wait_start.data();
  for (std::size_t t = 0; t < nt; ++t)
    st[t + 1] = (tasks[t].out_counter >= 0 && tasks[t].out_counter < g.n_counters ? 1 : 0) + (qn && qn[t] >= 0 ? 1 : 0);
  for (std::size_t c = 0; c < nc; ++c) st[nt + c + 1] = ws[c + 1] - ws[c];
  for (std::size_t i = 0; i < nn; ++i) st[i + 1] += st[i];
  n.adj.assign(static_cast<std::size_t>(st[nn]), 0);
  std::int32_t* adj = n.adj.data();
  for (std::size_t t = 0; t < nt; ++t) {
    auto at = st[t];
    if (tasks[t].out_counter >= 0 && tasks[t].out_counter < g.n_counters) adj[at++] = g.n_tasks + tasks[t].out_counter;
    if (qn && qn[t] >= 0) adj[at++] = qn[t];
  }
  const std::int32_t* waiter = g.waiter.data();
  for (std::size_t c = 0; c < nc; ++c) {
    auto at = st[nt + c];
    for (auto i = ws[c]; i < ws[c + 1]; ++i) adj[at++] = waiter[i];
  }
  return n;
}

/// Kahn's algorithm over the node graph (FIFO, seeded in node order). Returns the task nodes in the
/// order they were released; fewer than n_tasks entries means a cycle.
constexpr std::vector<std::int32_t> kahn_tasks(const node_graph& n) {
  const auto nn = static_cast<std::size_t>(n.size());
  std::vector<std::int32_t> indeg(nn, 0), queue(nn, 0), order(static_cast<std::size_t>(n.n_tasks), 0);
  std::int32_t* deg = indeg.data();
  std::int32_t* q = queue.data();
  const std::int32_t* st = n.start.data();
  const std::int32_t* adj = n.adj.data();
  for (std::size_t i = 0, e = n.adj.size(); i < e; ++i) ++deg[adj[i]];
  std::size_t tail = 0, released = 0;
  for (std::size_t v = 0; v < nn; ++v)
    if (deg[v] == 0) q[tail++] = static_cast<std::int32_t>(v);
  std::int32_t* out = order.data();
  for (std::size_t head = 0; head < tail; ++head) {
    const auto v = q[head];
    if (v < n.n_tasks) out[released++] = v;
    for (auto i = st[v]; i < st[v + 1]; ++i)
      if (--deg[adj[i]] == 0) q[tail++] = adj[i];
  }
  order.resize(released);
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

/// Happens-before as rows over topological positions: row i (the task at topo[i]) holds bit j when the
/// task at position j happens-before it, and its own bit i. Ancestors sit at lower positions, so every
/// row is a prefix and each OR covers only that prefix: about half the work and none of the calls of a
/// task x task bit_rows (this runs inside static_assert, where g++ charges every call and loop trip).
struct ancestor_rows {
  std::size_t words = 0;
  std::vector<std::uint64_t> bits;  // topo.size() rows of `words` words
  std::vector<std::int32_t> pos;    // task id -> topological position
  /// Task a happens-before task b, or a == b.
  constexpr bool before(std::int32_t a, std::int32_t b) const {
    const auto pa = static_cast<std::size_t>(pos[static_cast<std::size_t>(a)]);
    const auto pb = static_cast<std::size_t>(pos[static_cast<std::size_t>(b)]);
    return pa <= pb && ((bits[pb * words + pa / 64] >> (pa % 64)) & 1u) != 0;
  }
};

/// `topo` must be a complete topological order of the program's tasks (kahn_tasks of an acyclic graph).
constexpr ancestor_rows ancestors_by_position(const program& p, const counter_index& g,
                                              const std::vector<std::int32_t>& topo) {
  ancestor_rows r;
  const std::size_t n = topo.size(), w = (n + 63) / 64, nc = static_cast<std::size_t>(g.n_counters);
  r.words = w;
  r.pos.assign(static_cast<std::size_t>(g.n_tasks), 0);
  for (std::size_t i = 0; i < n; ++i) r.pos[static_cast<std::size_t>(topo[i])] = static_cast<std::int32_t>(i);
  r.bits.assign(n * w, 0);
  std::vector<std::uint64_t> at_counter(nc * w, 0);  // union of the rows of each counter's producers
  std::vector<std::size_t> counter_len(nc, 0);       // words of that union that can be non-zero
  std::uint64_t* bits = r.bits.data();
  std::uint64_t* acc = at_counter.data();
  for (std::size_t i = 0; i < n; ++i) {
    const auto& tk = p.tasks[static_cast<std::size_t>(topo[i])];
    std::uint64_t* row = bits + i * w;
    for (const auto& wt : tk.waits)
      if (g.valid_counter(wt.counter)) {
        const auto c = static_cast<std::size_t>(wt.counter);
        const std::uint64_t* src = acc + c * w;
        for (std::size_t k = 0, e = counter_len[c]; k < e; ++k) row[k] |= src[k];
      }
    row[i / 64] |= std::uint64_t(1) << (i % 64);
    if (g.valid_counter(tk.out_counter)) {
      const auto c = static_cast<std::size_t>(tk.out_counter);
      const std::size_t len = i / 64 + 1;
      std::uint64_t* dst = acc + c * w;
      for (std::size_t k = 0; k < len; ++k) dst[k] |= row[k];
      if (counter_len[c] < len) counter_len[c] = len;
    }
  }
  return r;
}

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
  const std::size_t n = topo.size();
  std::vector<std::int32_t> pos(static_cast<std::size_t>(g.n_tasks), 0);
  for (std::size_t i = 0; i < n; ++i) pos[static_cast<std::size_t>(topo[i])] = static_cast<std::int32_t>(i);
  std::vector<std::int32_t> last_use(nc, -1);
  {
    const std::int32_t* ws = g.wait_start.data();
    const std::int32_t* waiter = g.waiter.data();
    const std::int32_t* ps = pos.data();
    std::int32_t* lu = last_use.data();
    for (std::size_t c = 0; c < nc; ++c)
      for (auto i = ws[c]; i < ws[c + 1]; ++i) lu[c] = std::max(lu[c], ps[waiter[i]]);
  }
  const std::int32_t* lu = last_use.data();
  std::vector<std::int32_t> slot_of(nc, -1), free_slots;
  std::int32_t* so = slot_of.data();
  std::vector<std::uint64_t> pool, row(w, 0);
  std::uint64_t* r = row.data();
  const task* tasks = p.tasks.data();
  for (std::size_t i = 0; i < n; ++i) {
    const auto t = topo[i];
    const task& tk = tasks[t];
    const wait* wt = tk.waits.data();
    const std::size_t nw = tk.waits.size();
    for (std::size_t k = 0; k < w; ++k) r[k] = 0;
    for (std::size_t j = 0; j < nw; ++j)
      if (g.valid_counter(wt[j].counter) && so[wt[j].counter] >= 0) {
        const std::uint64_t* src = pool.data() + static_cast<std::size_t>(so[wt[j].counter]) * w;
        for (std::size_t k = 0; k < w; ++k) r[k] |= src[k];
      }
    visit(t, static_cast<const std::vector<std::uint64_t>&>(row));
    for (std::size_t j = 0; j < nw; ++j)
      if (g.valid_counter(wt[j].counter)) {
        auto& sl = so[wt[j].counter];
        if (sl >= 0 && lu[wt[j].counter] == static_cast<std::int32_t>(i)) {
          free_slots.push_back(sl);
          sl = -1;
        }
      }
    if (!g.valid_counter(tk.out_counter) || lu[tk.out_counter] <= static_cast<std::int32_t>(i))
      continue;  // nobody waits on this counter later: its row would never be read
    auto& sl = so[tk.out_counter];
    if (sl < 0) {
      if (!free_slots.empty()) {
        sl = free_slots.back();
        free_slots.pop_back();
        std::uint64_t* d = pool.data() + static_cast<std::size_t>(sl) * w;
        for (std::size_t k = 0; k < w; ++k) d[k] = 0;
      } else {
        sl = static_cast<std::int32_t>(pool.size() / (w == 0 ? 1 : w));
        pool.resize(pool.size() + w, 0);
      }
    }
    std::uint64_t* d = pool.data() + static_cast<std::size_t>(sl) * w;
    for (std::size_t k = 0; k < w; ++k) d[k] |= r[k];
    contrib(t, [d](std::size_t bit) { d[bit / 64] |= std::uint64_t(1) << (bit % 64); });
  }
}

}  // namespace detail

/// Producer -> waiter edges, counter by counter (docs/ir.md §2). A task that waits twice on one counter
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
