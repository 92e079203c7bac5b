// Seeded generators of VALID random IR programs for tests: transformer-shaped programs (GEMV tiles on a
// shared counter, KV appends, split attention with a combine) and generic random DAGs. constexpr, so
// static tests can use them too; the same seed always gives the same program.
#pragma once

#include <cstdint>
#include <vector>

#include "octo/detail/constexpr_text.hpp"
#include "octo/ir/program.hpp"

namespace octo::testing {

/// splitmix64: tiny, constexpr and fully specified, so programs are identical on every platform.
struct rng64 {
  std::uint64_t state;
  constexpr std::uint64_t next() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in [lo, hi] (inclusive).
  constexpr int between(int lo, int hi) { return lo + static_cast<int>(next() % static_cast<std::uint64_t>(hi - lo + 1)); }
  constexpr bool chance(int percent) { return static_cast<int>(next() % 100) < percent; }
};

/// The waits that make a buffer readable: one (counter, threshold) per producing group.
using ready_waits = std::vector<ir::wait>;

constexpr ready_waits merge_waits(const ready_waits& a, const ready_waits& b) {
  ready_waits out = a;
  for (const auto& w : b) {
    bool dup = false;
    for (const auto& x : out)
      if (x.counter == w.counter) dup = true;
    if (!dup) out.push_back(w);
  }
  return out;
}

struct model_options {
  std::uint64_t seed = 1;
  int layers = 2;
  int hidden = 16;     // a multiple of 4
  int max_tiles = 4;   // GEMV tiles per projection: 1, 2 or 4, all on one shared counter
  bool kv = true;      // attention blocks with KV_APPEND + ATTENTION_TILE
  bool mlp = true;     // SwiGLU blocks
};

/// A decoder-shaped program: x -> [RMSNORM -> tiled GEMV q/k/v -> KV_APPEND k, v -> attention (one tile or
/// two partial tiles + ATTENTION_COMBINE) -> tiled GEMV o -> ADD residual -> RMSNORM -> tiled gate/up ->
/// SILU_MUL -> tiled down -> ADD] * layers -> RMSNORM -> tiled GEMV logits (IO_OUTPUT) -> SAMPLE_ARGMAX.
constexpr ir::program random_model_program(const model_options& o) {
  using namespace ir;
  using octo::detail::cat;
  rng64 rng{o.seed};
  program p;
  p.set_meta("model", "random");
  const std::int64_t h = o.hidden;
  auto x = p.add_buffer("x", buffer_kind::io_input, dtype::f32, {1, h});
  std::int32_t cur = x;
  ready_waits cur_ready;  // inputs need no waits
  auto tiles_for = [&]() {
    int k = 1;
    while (k * 2 <= o.max_tiles && rng.chance(50)) k *= 2;
    return k;
  };
  auto norm = [&](const text& tag) {
    auto w = p.add_buffer(cat(tag, ".w"), buffer_kind::weight, dtype::f32, {h}, cat(tag, ".weight"));
    auto out = p.add_buffer(cat(tag, ".out"), buffer_kind::activation, dtype::f32, {1, h});
    auto c = p.add_counter(cat(tag, " done"));
    task t;
    t.op = opcode::rmsnorm;
    t.inputs = {cur, w};
    t.outputs = {out};
    t.out_counter = c;
    t.waits = cur_ready;
    t.params.set_real(param_key::eps, 1e-6).set(param_key::hidden, h);
    t.label = tag;
    p.add_task(t);
    return std::pair<std::int32_t, ready_waits>{out, ready_waits{{c, 1}}};
  };
  // Tiled GEMV: k tiles write disjoint column ranges of one output and share one counter (a true join).
  auto gemv = [&](const text& tag, std::int32_t in, const ready_waits& in_ready, std::int64_t n_out, buffer_kind kind) {
    auto w = p.add_buffer(cat(tag, ".w"), buffer_kind::weight, dtype::f32, {n_out, h}, cat(tag, ".weight"));
    auto out = p.add_buffer(tag, kind, dtype::f32, {1, n_out});
    auto c = p.add_counter(cat(tag, " tiles"));
    const int k = tiles_for();
    for (int i = 0; i < k; ++i) {
      task t;
      t.op = opcode::gemv_tile;
      t.inputs = {in, w};
      t.outputs = {out};
      t.out_counter = c;
      t.waits = in_ready;
      t.params.set(param_key::K, h).set(param_key::N_tile, n_out / k).set(param_key::n_off, n_out / k * i);
      t.est_bytes = n_out / k * h * 4;
      t.label = cat(tag, "[", i, "]");
      p.add_task(t);
    }
    return std::pair<std::int32_t, ready_waits>{out, ready_waits{{c, k}}};
  };
  auto simple = [&](opcode op, const text& tag, std::vector<std::int32_t> ins, const ready_waits& rw) {
    auto out = p.add_buffer(tag, buffer_kind::activation, dtype::f32, {1, h});
    auto c = p.add_counter(cat(tag, " done"));
    task t;
    t.op = op;
    t.inputs = ins;
    t.outputs = {out};
    t.out_counter = c;
    t.waits = rw;
    t.label = tag;
    p.add_task(t);
    return std::pair<std::int32_t, ready_waits>{out, ready_waits{{c, 1}}};
  };
  for (int l = 0; l < o.layers; ++l) {
    const text L = cat("l", l);
    if (o.kv) {
      auto [n, n_ready] = norm(cat(L, ".attn_norm"));
      auto [q, q_ready] = gemv(cat(L, ".q"), n, n_ready, h, buffer_kind::activation);
      auto [kn, k_ready] = gemv(cat(L, ".k"), n, n_ready, h, buffer_kind::activation);
      auto [vn, v_ready] = gemv(cat(L, ".v"), n, n_ready, h, buffer_kind::activation);
      const std::int64_t ctx = 8;
      auto kc = p.add_buffer(cat(L, ".k_cache"), buffer_kind::kv_cache, dtype::f32, {ctx, h});
      auto vc = p.add_buffer(cat(L, ".v_cache"), buffer_kind::kv_cache, dtype::f32, {ctx, h});
      ready_waits cache_ready;
      auto append = [&](std::int32_t src, const ready_waits& src_ready, std::int32_t cache) {
        auto c = p.add_counter(cat(L, " kv append"));
        task t;
        t.op = opcode::kv_append;
        t.inputs = {src, cache};
        t.outputs = {cache};
        t.out_counter = c;
        t.waits = src_ready;
        t.params.set(param_key::pos, 3);
        t.label = cat(L, ".kv_append");
        p.add_task(t);
        cache_ready.push_back({c, 1});
      };
      append(kn, k_ready, kc);
      append(vn, v_ready, vc);
      auto att_ready = merge_waits(q_ready, cache_ready);
      auto attn_params = [&](task& t, int kv_start, int kv_len, bool partial) {
        t.params.set(param_key::head_dim, h / 2).set(param_key::kv_start, kv_start).set(param_key::kv_len, kv_len);
        t.params.set_real(param_key::scale, 0.25).set(param_key::n_heads, 2).set(param_key::n_kv_heads, 2);
        if (partial) t.params.set(param_key::partial, 1);
      };
      std::int32_t att;
      ready_waits att_out_ready;
      if (rng.chance(50)) {
        att = p.add_buffer(cat(L, ".att"), buffer_kind::activation, dtype::f32, {1, h});
        auto c = p.add_counter(cat(L, " attention"));
        task t;
        t.op = opcode::attention_tile;
        t.inputs = {q, kc, vc};
        t.outputs = {att};
        t.out_counter = c;
        t.waits = att_ready;
        attn_params(t, 0, 4, false);
        p.add_task(t);
        att_out_ready = {{c, 1}};
      } else {
        // split-K decode: two partial tiles join on one shared counter, then a combine
        auto c = p.add_counter(cat(L, " attention partials"));
        std::vector<std::int32_t> parts;
        for (int s = 0; s < 2; ++s) {
          auto part = p.add_buffer(cat(L, ".att_part", s), buffer_kind::activation, dtype::f32, {1, 2, h / 2 + 2});
          parts.push_back(part);
          task t;
          t.op = opcode::attention_tile;
          t.inputs = {q, kc, vc};
          t.outputs = {part};
          t.out_counter = c;
          t.waits = att_ready;
          attn_params(t, s * 2, 2, true);
          p.add_task(t);
        }
        auto [a, a_ready] = simple(opcode::attention_combine, cat(L, ".att"), parts, ready_waits{{c, 2}});
        att = a;
        att_out_ready = a_ready;
      }
      auto [proj, proj_ready] = gemv(cat(L, ".o"), att, att_out_ready, h, buffer_kind::activation);
      auto [res, res_ready] = simple(opcode::add, cat(L, ".attn_res"), {cur, proj}, merge_waits(cur_ready, proj_ready));
      cur = res;
      cur_ready = res_ready;
    }
    if (o.mlp) {
      auto [n, n_ready] = norm(cat(L, ".ffn_norm"));
      auto [g, g_ready] = gemv(cat(L, ".gate"), n, n_ready, h, buffer_kind::activation);
      auto [u, u_ready] = gemv(cat(L, ".up"), n, n_ready, h, buffer_kind::activation);
      auto [act, act_ready] = simple(opcode::silu_mul, cat(L, ".act"), {g, u}, merge_waits(g_ready, u_ready));
      auto [d, d_ready] = gemv(cat(L, ".down"), act, act_ready, h, buffer_kind::activation);
      auto [res, res_ready] = simple(opcode::add, cat(L, ".ffn_res"), {cur, d}, merge_waits(cur_ready, d_ready));
      cur = res;
      cur_ready = res_ready;
    }
  }
  auto [n, n_ready] = norm(text("final_norm"));
  auto [logits, l_ready] = gemv(text("logits"), n, n_ready, 4 * h, buffer_kind::io_output);
  auto ids = p.add_buffer("next_token", buffer_kind::io_output, dtype::i32, {1});
  auto c = p.add_counter("sampled");
  task t;
  t.op = opcode::sample_argmax;
  t.inputs = {logits};
  t.outputs = {ids};
  t.out_counter = c;
  t.waits = l_ready;
  p.add_task(t);
  return p;
}

struct dag_options {
  std::uint64_t seed = 1;
  int tasks = 40;
  int max_fanin = 3;       // inputs per task (<= 8)
  int share_percent = 30;  // chance that a task joins the previous task's tile group (shared counter)
  int window = 0;          // inputs come from the last `window` groups (0: any earlier group)
};

/// A generic random DAG of ALLREDUCE_SHARD tasks (1-8 inputs, no params). Consecutive tasks may form a
/// tile group that writes one buffer and signals one shared counter; readers wait with the group size.
/// Task order is a topological order. Group g's buffer is named "g<g>".
constexpr ir::program random_dag_program(const dag_options& o) {
  using namespace ir;
  using octo::detail::cat;
  rng64 rng{o.seed};
  program p;
  auto in = p.add_buffer("in", buffer_kind::io_input, dtype::f32, {4});
  struct group { std::int32_t buffer, counter, size; std::vector<std::int32_t> inputs; ready_waits waits; };
  std::vector<group> groups;
  for (int i = 0; i < o.tasks; ++i) {
    const bool join = !groups.empty() && rng.chance(o.share_percent) && groups.back().size < 4;
    if (join) {
      auto& g = groups.back();
      task t;
      t.op = opcode::allreduce_shard;
      t.inputs = g.inputs;  // a tile reads what its group reads
      t.outputs = {g.buffer};
      t.out_counter = g.counter;
      t.waits = g.waits;
      p.add_task(t);
      ++g.size;
      continue;
    }
    group g;
    g.buffer = p.add_buffer(cat("g", static_cast<int>(groups.size())), buffer_kind::activation, dtype::f32, {4});
    g.counter = p.add_counter();
    g.size = 1;
    const int fanin = groups.empty() ? 1 : rng.between(1, o.max_fanin);
    for (int k = 0; k < fanin; ++k) {
      if (groups.empty()) {
        g.inputs.push_back(in);
        break;
      }
      const int n = static_cast<int>(groups.size());
      const int lo = o.window > 0 && n > o.window ? n - o.window : 0;
      const auto& src = groups[static_cast<std::size_t>(rng.between(lo, n - 1))];
      bool dup = false;
      for (auto b : g.inputs)
        if (b == src.buffer) dup = true;
      if (dup) continue;
      g.inputs.push_back(src.buffer);
      g.waits.push_back({src.counter, -1});  // threshold fixed below, once the group's size is final
    }
    task t;
    t.op = opcode::allreduce_shard;
    t.inputs = g.inputs;
    t.outputs = {g.buffer};
    t.out_counter = g.counter;
    t.waits = g.waits;
    p.add_task(t);
    groups.push_back(g);
  }
  // thresholds: a wait on a group's counter needs the whole group
  std::vector<std::int32_t> size_of(p.counters.size(), 0);
  for (const auto& t : p.tasks) ++size_of[static_cast<std::size_t>(t.out_counter)];
  for (auto& t : p.tasks)
    for (auto& w : t.waits) w.threshold = size_of[static_cast<std::size_t>(w.counter)];
  // the last group's buffer is the program's output
  if (!groups.empty()) p.buffers[static_cast<std::size_t>(groups.back().buffer)].kind = buffer_kind::io_output;
  return p;
}

/// A chain of n COPY tasks in0 -> a0 -> a1 -> ... ; with `close_cycle` task 0 also waits on the last
/// task's counter, making one n-task cycle.
constexpr ir::program chain_program(int n, bool close_cycle = false) {
  using namespace ir;
  program p;
  auto prev = p.add_buffer("in", buffer_kind::io_input, dtype::f32, {4});
  for (int i = 0; i < n; ++i) {
    auto out = p.add_buffer(octo::detail::cat("a", i), i + 1 == n ? buffer_kind::io_output : buffer_kind::activation,
                            dtype::f32, {4});
    auto c = p.add_counter();
    task t;
    t.op = opcode::copy;
    t.inputs = {prev};
    t.outputs = {out};
    t.out_counter = c;
    if (i > 0) t.waits = {{c - 1, 1}};
    p.add_task(t);
    prev = out;
  }
  if (close_cycle && n > 0) p.tasks[0].waits = {{n - 1, 1}};
  return p;
}

}  // namespace octo::testing
