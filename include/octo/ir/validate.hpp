// validate(): the static proof that a program is safe to load (docs/ir.md §3): deadlock-freedom,
// race-freedom and the additional checks. constexpr throughout, so it runs inside static_assert.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>
#include <vector>

#include "octo/detail/constexpr_text.hpp"
#include "octo/ir/dependency_graph.hpp"
#include "octo/ir/op_registry.hpp"
#include "octo/ir/program.hpp"
#include "octo/ir/version.hpp"

namespace octo::ir {

struct validation_stats {
  std::int64_t tasks = 0, buffers = 0, counters = 0;
  std::int64_t edges = 0;          // producer -> waiter pairs (dependency_edges().size())
  std::int64_t weight_bytes = 0;   // total_weight_bytes(): what a bandwidth-bound pass must read
  std::int64_t critical_path = 0;  // tasks on the longest dependency chain
  friend constexpr bool operator==(const validation_stats&, const validation_stats&) = default;
};

struct validation_result {
  bool ok = true;
  std::vector<text> errors;    // one line each; names tasks as OPNAME#id and the counter / buffer
  std::vector<text> warnings;
  validation_stats stats;

  /// A multi-line human summary: verdict, stats, then every error and warning.
  constexpr text report() const {
    using octo::detail::cat;
    text r = cat(ok ? "validate: OK" : "validate: REJECTED", " (", stats.tasks, " tasks, ", stats.buffers,
                 " buffers, ", stats.counters, " counters, ", stats.edges, " edges, ", stats.weight_bytes,
                 " weight bytes, critical path ", stats.critical_path, ")\n");
    // Append piecewise: g++ 12 mis-evaluates `text += temporary_text` in constant evaluation.
    for (const auto& e : errors) {
      r += "  error: ";
      r += e.view();
      r += '\n';
    }
    for (const auto& w : warnings) {
      r += "  warning: ";
      r += w.view();
      r += '\n';
    }
    return r;
  }
};

namespace detail {

using octo::detail::cat;

inline constexpr std::size_t max_reported = 1000;  // a corrupt 100k-task file must not yield 100k lines
inline constexpr std::size_t page_check_max_tasks = 4000;

struct validator {
  const program& p;
  validation_result r;
  std::size_t dropped_errors = 0;

  constexpr void error(text m) {
    r.ok = false;
    if (r.errors.size() < max_reported) r.errors.push_back(static_cast<text&&>(m));
    else ++dropped_errors;
  }
  constexpr void warn(text m) {
    if (r.warnings.size() < max_reported) r.warnings.push_back(static_cast<text&&>(m));
  }

  constexpr std::size_t nb() const { return p.buffers.size(); }
  constexpr std::size_t nc() const { return p.counters.size(); }
  constexpr std::size_t nt() const { return p.tasks.size(); }
  constexpr bool buffer_ok(std::int32_t b) const { return b >= 0 && static_cast<std::size_t>(b) < nb(); }
  constexpr bool counter_ok(std::int32_t c) const { return c >= 0 && static_cast<std::size_t>(c) < nc(); }

  constexpr text tname(std::int32_t t) const {
    const auto& tk = p.tasks[static_cast<std::size_t>(t)];
    auto op = static_cast<int>(tk.op);
    return cat(op < opcode_count ? name(tk.op) : std::string_view("TASK"), "#", t);
  }
  constexpr text bname(std::int32_t b) const {
    return cat("buffer ", b, " (", p.buffers[static_cast<std::size_t>(b)].name, ")");
  }
  constexpr const buffer& buf(std::int32_t b) const { return p.buffers[static_cast<std::size_t>(b)]; }

  // ---- §3.1 structure: ids, enums, references, arity, caps, params ---------------------------------
  constexpr void check_buffers() {
    for (std::size_t i = 0; i < nb(); ++i) {
      const auto& b = p.buffers[i];
      const auto bi = static_cast<std::int32_t>(i);
      if (b.id != bi) error(cat("buffer at index ", bi, " (", b.name, ") has id ", b.id, "; ids must equal indices"));
      if (static_cast<int>(b.kind) >= buffer_kind_count)
        error(cat("buffer ", bi, " (", b.name, ") has invalid kind code ", static_cast<int>(b.kind)));
      if (static_cast<int>(b.dtype) >= dtype_count)
        error(cat("buffer ", bi, " (", b.name, ") has invalid dtype code ", static_cast<int>(b.dtype)));
      if (static_cast<int>(b.space) >= mem_space_count)
        error(cat("buffer ", bi, " (", b.name, ") has invalid memory space code ", static_cast<int>(b.space)));
      if (b.shape.size() > static_cast<std::size_t>(abi_max_rank))
        error(cat("buffer ", bi, " (", b.name, ") has rank ", b.shape.size(), ", above the ABI cap of ",
                  abi_max_rank));
      std::int64_t n = 1;
      bool bad = false;
      for (auto e : b.shape) {
        if (e < 0) {
          error(cat("buffer ", bi, " (", b.name, ") has negative dimension ", e));
          bad = true;
          break;
        }
        if (e != 0 && n > (std::int64_t(1) << 56) / e) {
          error(cat("buffer ", bi, " (", b.name, ") is too large (element count overflows)"));
          bad = true;
          break;
        }
        n *= e;
      }
      (void)bad;
    }
  }

  constexpr void check_counters() {
    for (std::size_t i = 0; i < nc(); ++i) {
      const auto& c = p.counters[i];
      if (c.id != static_cast<std::int32_t>(i))
        error(cat("counter at index ", i, " has id ", c.id, "; ids must equal indices"));
      if (c.init != 0)
        warn(cat("counter ", i, " has init ", c.init, "; counters are zeroed before every pass"));
    }
  }

  constexpr void check_params(std::int32_t t, const task& tk) {
    const auto& items = tk.params.items;
    if (items.size() <= 16) {
      // few params (every real task): compare pairs, keys first (equal known keys have equal names);
      // report a name once, at its second occurrence. No heap: this runs once per task in static_assert.
      const param* d = items.data();
      for (std::size_t i = 1; i < items.size(); ++i) {
        std::size_t seen = 0;
        for (std::size_t j = 0; j < i; ++j) {
          const bool same = (d[i].key != param_key::unknown && d[j].key != param_key::unknown)
                                ? d[i].key == d[j].key
                                : d[i].key_name() == d[j].key_name();
          seen += same ? 1 : 0;
        }
        if (seen == 1) error(cat(tname(t), ": param '", d[i].key_name(), "' appears twice"));
      }
    } else {
      // duplicates by sorting the names: a corrupt file with 10^5 params in one task must not go quadratic
      std::vector<std::string_view> names;
      names.reserve(items.size());
      for (const auto& pr : items) names.push_back(pr.key_name());
      std::sort(names.begin(), names.end());
      for (std::size_t i = 1; i < names.size(); ++i)
        if (names[i] == names[i - 1] && (i == 1 || names[i - 2] != names[i]))
          error(cat(tname(t), ": param '", names[i], "' appears twice"));
    }
    for (std::size_t i = 0; i < items.size(); ++i) {
      const auto& pr = items[i];
      if (pr.key == param_key::unknown) {
        warn(cat(tname(t), ": unknown param '", pr.unknown_name, "' will not marshal to the device"));
        continue;
      }
      if (static_cast<int>(pr.key) >= param_key_count) {
        error(cat(tname(t), ": invalid param key code ", static_cast<int>(pr.key)));
        continue;
      }
      const auto& f = param_fields[static_cast<std::size_t>(pr.key)];
      if (f.type == param_type::i32) {
        if (pr.is_real)
          error(cat(tname(t), ": param '", f.name, "' is an int32 field but holds a real"));
        else if (pr.i < std::numeric_limits<std::int32_t>::min() || pr.i > std::numeric_limits<std::int32_t>::max())
          error(cat(tname(t), ": param '", f.name, "' = ", pr.i, " does not fit in int32"));
      } else if (pr.is_real) {
        const double v = pr.f;
        if (!(v == v) || v > std::numeric_limits<double>::max() || v < -std::numeric_limits<double>::max())
          error(cat(tname(t), ": param '", f.name, "' is not a finite number"));
      }
    }
    const auto& s = spec(tk.op);
    for (int k = 0; k < s.n_required; ++k) {
      auto key = s.required[static_cast<std::size_t>(k)];
      if (!tk.params.has(key)) error(cat(tname(t), " lacks required param '", name(key), "'"));
    }
  }

  constexpr void check_tasks() {
    for (std::size_t i = 0; i < nt(); ++i) {
      const auto& tk = p.tasks[i];
      const auto t = static_cast<std::int32_t>(i);
      if (tk.id != t) error(cat("task at index ", t, " has id ", tk.id, "; ids must equal indices"));
      if (static_cast<int>(tk.op) >= opcode_count) {
        error(cat("task ", t, " has invalid opcode ", static_cast<int>(tk.op)));
        continue;
      }
      const auto ni = static_cast<int>(tk.inputs.size());
      const auto no = static_cast<int>(tk.outputs.size());
      const auto nw = static_cast<int>(tk.waits.size());
      if (ni > abi_max_inputs) error(cat(tname(t), " has ", ni, " inputs, above the ABI cap of ", abi_max_inputs));
      if (no > abi_max_outputs)
        error(cat(tname(t), " has ", no, " outputs, above the ABI cap of ", abi_max_outputs));
      if (nw > abi_max_waits) error(cat(tname(t), " has ", nw, " waits, above the ABI cap of ", abi_max_waits));
      const auto& s = spec(tk.op);
      if (ni < s.min_inputs || ni > s.max_inputs) {
        if (s.min_inputs == s.max_inputs)
          error(cat(tname(t), " has ", ni, " inputs; ", name(tk.op), " takes ", s.min_inputs));
        else
          error(cat(tname(t), " has ", ni, " inputs; ", name(tk.op), " takes ", s.min_inputs, " to ", s.max_inputs));
      }
      if (no != s.n_outputs) error(cat(tname(t), " has ", no, " outputs; ", name(tk.op), " writes ", s.n_outputs));
      for (auto b : tk.inputs)
        if (!buffer_ok(b)) error(cat(tname(t), " reads buffer ", b, ", which does not exist (", nb(), " buffers)"));
      for (auto b : tk.outputs)
        if (!buffer_ok(b)) error(cat(tname(t), " writes buffer ", b, ", which does not exist (", nb(), " buffers)"));
      if (!counter_ok(tk.out_counter))
        error(cat(tname(t), " signals counter ", tk.out_counter, ", which does not exist (", nc(), " counters)"));
      for (const auto& w : tk.waits)
        if (!counter_ok(w.counter))
          error(cat(tname(t), " waits on counter ", w.counter, ", which does not exist (", nc(), " counters)"));
      if (tk.sm < unassigned_sm) error(cat(tname(t), " has SM ", tk.sm, "; SMs are >= 0 (or unassigned)"));
      check_params(t, tk);
    }
  }

  constexpr void check_pages() {
    if (!p.has_pages) return;
    const auto& pa = p.pages;
    for (std::size_t i = 0; i < pa.pages.size(); ++i) {
      const auto& pg = pa.pages[i];
      if (pg.id != static_cast<std::int32_t>(i)) error(cat("page at index ", i, " has id ", pg.id, "; ids must equal indices"));
      if (static_cast<int>(pg.space) >= mem_space_count)
        error(cat("page ", i, " has invalid memory space code ", static_cast<int>(pg.space)));
      if (pg.nbytes < 0) error(cat("page ", i, " has negative size ", pg.nbytes));
    }
    std::vector<std::uint8_t> bound(nb(), 0);
    for (const auto& e : pa.buffer_to_page) {
      if (!buffer_ok(e.buffer)) {
        error(cat("page binding names buffer ", e.buffer, ", which does not exist (", nb(), " buffers)"));
        continue;
      }
      if (e.page < 0 || static_cast<std::size_t>(e.page) >= pa.pages.size()) {
        error(cat(bname(e.buffer), " is bound to page ", e.page, ", which does not exist (", pa.pages.size(), " pages)"));
        continue;
      }
      if (bound[static_cast<std::size_t>(e.buffer)]++) error(cat(bname(e.buffer), " is bound to a page twice"));
      if (buf(e.buffer).kind != buffer_kind::activation)
        warn(cat(bname(e.buffer), " is bound to page ", e.page, " but is not an ACTIVATION"));
    }
  }

  constexpr bool structure_ok() const { return r.ok; }

  // ---- buffer sizes and weights (only once the structure is sound) -----------------------------------
  constexpr void check_sizes() {
    for (std::size_t i = 0; i < nb(); ++i)
      if (p.buffers[i].kind == buffer_kind::weight) {
        // saturate: each buffer is bounded (check_buffers) but a sum of many need not fit
        const auto n = p.buffers[i].nbytes();
        r.stats.weight_bytes =
            r.stats.weight_bytes > std::numeric_limits<std::int64_t>::max() - n ? std::numeric_limits<std::int64_t>::max() : r.stats.weight_bytes + n;
      }
    if (!p.has_pages) return;
    for (const auto& e : p.pages.buffer_to_page) {
      auto need = buf(e.buffer).nbytes();
      auto have = p.pages.pages[static_cast<std::size_t>(e.page)].nbytes;
      if (need > have) error(cat(bname(e.buffer), " needs ", need, " bytes but page ", e.page, " holds ", have));
    }
  }

  // ---- §3.1 / §3.2 thresholds and the shared-counter all-join rule -----------------------------------
  constexpr void check_waits(const counter_index& g) {
    for (std::size_t i = 0; i < nt(); ++i) {
      const auto t = static_cast<std::int32_t>(i);
      for (const auto& w : p.tasks[i].waits) {
        const auto n = g.producers(w.counter);
        if (w.threshold < 1)
          error(cat(tname(t), " waits on counter ", w.counter, " with threshold ", w.threshold,
                    "; thresholds must be >= 1"));
        else if (n == 0)
          error(cat("deadlock: ", tname(t), " waits on counter ", w.counter, ", which no task signals"));
        else if (w.threshold > n)
          error(cat("deadlock: ", tname(t), " waits for counter ", w.counter, " to reach ", w.threshold, ", but only ",
                    n, n == 1 ? " task signals it" : " tasks signal it"));
        else if (n > 1 && w.threshold != n)
          error(cat("race: ", tname(t), " waits on counter ", w.counter, " with threshold ", w.threshold, " but ", n,
                    " tasks signal it; a partial wait on a shared counter can be satisfied by the wrong producers "
                    "(use threshold ",
                    n, ")"));
      }
    }
  }

  // ---- acyclicity with a witness --------------------------------------------------------------------
  constexpr text describe_cycle(const node_graph& n, const std::vector<std::int32_t>& cyc) const {
    // Show the cycle as task -> (counter c | SM queue) -> task; long cycles are elided in the middle.
    std::vector<std::int32_t> tasks_in;
    for (auto v : cyc)
      if (v < n.n_tasks) tasks_in.push_back(v);
    text s;
    const std::size_t k = tasks_in.size();
    const std::size_t head = 12;
    auto link = [&](std::size_t j) {
      auto a = tasks_in[j];
      const auto& tk = p.tasks[static_cast<std::size_t>(a)];
      auto b = tasks_in[(j + 1) % k];
      bool via_counter = false;
      if (counter_ok(tk.out_counter))
        for (const auto& w : p.tasks[static_cast<std::size_t>(b)].waits)
          if (w.counter == tk.out_counter) via_counter = true;
      if (via_counter) return cat(" -> (counter ", tk.out_counter, ") -> ");
      return cat(" -> (queue of SM ", tk.sm, ") -> ");
    };
    for (std::size_t j = 0; j < k; ++j) {
      if (k > 2 * head && j == head) {
        const text skip = cat("... ", k - 2 * head, " more tasks ... -> ");
        s += skip.view();
        j = k - head;
      }
      const text tn = tname(tasks_in[j]);  // named: `s += temporary` trips g++ 12's constant evaluator
      const text ln = link(j);
      s += tn.view();
      s += ln.view();
    }
    if (k > 0) {
      const text first = tname(tasks_in[0]);
      s += first.view();
    }
    return cat(s, " (", k, k == 1 ? " task)" : " tasks)");
  }

  // ---- §3.1 per-SM queue order ---------------------------------------------------------------------
  constexpr bool check_sm_queues(const counter_index& g) {
    bool any = false, all = true;
    for (const auto& tk : p.tasks) {
      if (tk.sm >= 0) any = true;
      else all = false;
    }
    if (!any) return true;
    bool fine = true;
    if (!all) {
      for (std::size_t i = 0; i < nt(); ++i)
        if (p.tasks[i].sm < 0) {
          error(cat(tname(static_cast<std::int32_t>(i)), " has no SM while other tasks do; assign every task"));
          fine = false;
          break;
        }
    }
    if (p.has_target)
      for (std::size_t i = 0; i < nt(); ++i)
        if (p.tasks[i].sm >= p.target.num_sms) {
          error(cat(tname(static_cast<std::int32_t>(i)), " is on SM ", p.tasks[i].sm, " but target ", p.target.name,
                    " has ", p.target.num_sms, " SMs"));
          fine = false;
        }
    // Direct edges: a waiter must come after every producer of the same SM in the queue. Producers per
    // counter are ascending by id, so the latest same-SM producer is found by a backwards scan; to stay
    // O(N log N) we sort (sm, id) pairs per counter once.
    std::vector<std::int64_t> keys;
    for (std::int32_t c = 0; c < g.n_counters; ++c) {
      const auto cu = static_cast<std::size_t>(c);
      if (g.wait_start[cu] == g.wait_start[cu + 1]) continue;
      keys.clear();
      for (auto i = g.prod_start[cu]; i < g.prod_start[cu + 1]; ++i) {
        auto pt = g.prod[static_cast<std::size_t>(i)];
        keys.push_back((static_cast<std::int64_t>(p.tasks[static_cast<std::size_t>(pt)].sm) << 32) | pt);
      }
      std::sort(keys.begin(), keys.end());
      for (auto i = g.wait_start[cu]; i < g.wait_start[cu + 1]; ++i) {
        auto wt = g.waiter[static_cast<std::size_t>(i)];
        auto sm = p.tasks[static_cast<std::size_t>(wt)].sm;
        if (sm < 0) continue;
        // Latest producer on this SM: the last key below (sm + 1) << 32.
        auto it = std::lower_bound(keys.begin(), keys.end(), static_cast<std::int64_t>(sm + 1) << 32);
        if (it == keys.begin()) continue;
        --it;
        if ((*it >> 32) != sm) continue;
        auto last = static_cast<std::int32_t>(*it & 0xffffffff);
        if (last >= wt) {
          error(cat("deadlock: SM ", sm, " queues ", tname(wt), " before ", tname(last), ", which signals counter ", c,
                    " that ", tname(wt), " waits on"));
          fine = false;
        }
      }
    }
    if (!fine) return false;
    // Transitive: a -> x -> b with a and b on one SM and b queued first blocks too. Add each queue's
    // order as edges and look for a cycle.
    // SM numbers may be sparse and large (no target to bound them): chain each queue through a sort of
    // (sm, position) pairs rather than a table indexed by SM.
    std::vector<std::int32_t> queue_next(nt(), -1);
    std::vector<std::int64_t> by_sm;
    by_sm.reserve(nt());
    for (std::size_t i = 0; i < nt(); ++i) by_sm.push_back((static_cast<std::int64_t>(p.tasks[i].sm) << 32) | static_cast<std::int64_t>(i));
    std::sort(by_sm.begin(), by_sm.end());
    for (std::size_t k = 0; k + 1 < by_sm.size(); ++k)
      if ((by_sm[k] >> 32) == (by_sm[k + 1] >> 32))
        queue_next[static_cast<std::size_t>(by_sm[k] & 0xffffffff)] = static_cast<std::int32_t>(by_sm[k + 1] & 0xffffffff);
    auto n = build_node_graph(p, g, queue_next);
    if (kahn_tasks(n).size() != nt()) {
      error(cat("deadlock: SM queue order contradicts the DAG: ", describe_cycle(n, find_cycle(n))));
      return false;
    }
    return true;
  }

  // ---- §3.2 transitive happens-before for ACTIVATION / IO_OUTPUT reads, and KV_CACHE ordering ---------
  constexpr void check_races(const counter_index& g, const std::vector<std::int32_t>& topo) {
    // Track only transient buffers: read-only kinds are always available (ext_mask).
    std::vector<std::int32_t> slot(nb(), -1);
    std::size_t n_tracked = 0;
    for (std::size_t b = 0; b < nb(); ++b)
      if (p.buffers[b].kind == buffer_kind::activation || p.buffers[b].kind == buffer_kind::io_output)
        slot[b] = static_cast<std::int32_t>(n_tracked++);
    // writers per buffer (CSR)
    std::vector<std::int32_t> wstart(nb() + 1, 0), writers;
    for (const auto& tk : p.tasks)
      for (auto b : tk.outputs) ++wstart[static_cast<std::size_t>(b) + 1];
    for (std::size_t b = 0; b < nb(); ++b) wstart[b + 1] += wstart[b];
    writers.assign(static_cast<std::size_t>(wstart[nb()]), 0);
    {
      std::vector<std::int32_t> f(wstart.begin(), wstart.end() - 1);
      for (std::size_t i = 0; i < nt(); ++i)
        for (auto b : p.tasks[i].outputs) writers[static_cast<std::size_t>(f[static_cast<std::size_t>(b)]++)] = static_cast<std::int32_t>(i);
    }
    auto writes = [&](std::int32_t t, std::int32_t b) {
      for (auto o : p.tasks[static_cast<std::size_t>(t)].outputs)
        if (o == b) return true;
      return false;
    };
    auto test = [](const std::vector<std::uint64_t>& row, std::size_t bit) { return ((row[bit / 64] >> (bit % 64)) & 1u) != 0; };
    const std::int32_t* sl = slot.data();
    // KV_CACHE: every task that writes a cache this pass must precede every other reader of it. Its bits
    // (one per writing task) follow the tracked buffers' in the same rows: one streaming pass for both.
    std::vector<std::int32_t> kv_slot(nt(), -1);
    std::size_t n_kv = 0;
    for (std::size_t i = 0; i < nt(); ++i)
      for (auto b : p.tasks[i].outputs)
        if (buf(b).kind == buffer_kind::kv_cache && kv_slot[i] < 0) kv_slot[i] = static_cast<std::int32_t>(n_tracked + n_kv++);
    const std::int32_t* ks = kv_slot.data();
    if (n_tracked + n_kv == 0) return;
    stream_before(
        p, g, topo, n_tracked + n_kv,
        [&](std::int32_t t, auto set_bit) {
          const auto& outs = p.tasks[static_cast<std::size_t>(t)].outputs;
          const std::int32_t* o = outs.data();
          for (std::size_t k = 0, e = outs.size(); k < e; ++k)
            if (sl[o[k]] >= 0) set_bit(static_cast<std::size_t>(sl[o[k]]));
          if (ks[t] >= 0) set_bit(static_cast<std::size_t>(ks[t]));
        },
        [&](std::int32_t t, const std::vector<std::uint64_t>& avail) {
          const auto& ins = p.tasks[static_cast<std::size_t>(t)].inputs;
          const std::int32_t* in = ins.data();
          const std::uint64_t* av = avail.data();
          for (std::size_t k = 0; k < ins.size(); ++k) {
            const auto b = in[k];
            const auto s = sl[b];
            if (s < 0 || ((av[s / 64] >> (s % 64)) & 1u) != 0) continue;
            bool again = false;  // reported at its first slot only
            for (std::size_t j = 0; j < k; ++j) again = again || in[j] == b;
            if (again) continue;
            const auto bu = static_cast<std::size_t>(b);
            if (wstart[bu] == wstart[bu + 1]) {
              if (buf(b).kind == buffer_kind::io_output) continue;  // reported once by output reachability
              error(cat("race: ", tname(t), " reads ", bname(b), ", which no task writes"));
            } else {
              auto w0 = writers[static_cast<std::size_t>(wstart[bu])];
              if (w0 == t && wstart[bu + 1] - wstart[bu] == 1)
                error(cat("race: ", tname(t), " reads ", bname(b), ", which only it writes (no earlier writer)"));
              else
                error(cat("race: ", tname(t), " reads ", bname(b), " with no happens-before path from a writer (e.g. ",
                          tname(w0 == t ? writers[static_cast<std::size_t>(wstart[bu]) + 1] : w0), ")"));
            }
          }
          if (n_kv == 0) return;
          for (auto b : p.tasks[static_cast<std::size_t>(t)].inputs) {
            if (buf(b).kind != buffer_kind::kv_cache || writes(t, b)) continue;
            const auto bu = static_cast<std::size_t>(b);
            for (auto k = wstart[bu]; k < wstart[bu + 1]; ++k) {
              auto w = writers[static_cast<std::size_t>(k)];
              if (!test(avail, static_cast<std::size_t>(ks[w]))) {
                error(cat("race: ", tname(t), " reads KV cache ", bname(b), " without being ordered after ", tname(w),
                          ", which writes it this pass"));
                break;
              }
            }
          }
        });
  }

  // ---- §3.3 page aliasing (warnings) ---------------------------------------------------------------
  constexpr void check_page_aliasing(const counter_index& g, const std::vector<std::int32_t>& topo) {
    if (!p.has_pages || nt() > page_check_max_tasks || p.pages.buffer_to_page.empty()) return;
    const auto anc = ancestors_by_position(p, g, topo);
    auto ordered = [&anc](std::int32_t a, std::int32_t b) { return anc.before(a, b) || anc.before(b, a); };
    const auto& pos = anc.pos;
    // Flat arrays and counting sorts rather than vectors of structs and std::sort: this runs inside
    // static_assert, where g++ charges every call (docs/compile-time.md).
    std::vector<std::int32_t> page_of(nb(), -1);
    for (const auto& e : p.pages.buffer_to_page) page_of[static_cast<std::size_t>(e.buffer)] = e.page;
    // accessors (readers and writers) of each bound buffer, CSR: entry = task * 2 + (1 if it writes)
    std::vector<std::int32_t> astart(nb() + 1, 0);
    for (const auto& tk : p.tasks) {
      for (auto b : tk.inputs)
        if (page_of[static_cast<std::size_t>(b)] >= 0) ++astart[static_cast<std::size_t>(b) + 1];
      for (auto b : tk.outputs)
        if (page_of[static_cast<std::size_t>(b)] >= 0) ++astart[static_cast<std::size_t>(b) + 1];
    }
    for (std::size_t b = 0; b < nb(); ++b) astart[b + 1] += astart[b];
    std::vector<std::int32_t> acc(static_cast<std::size_t>(astart[nb()]), 0);
    std::vector<std::int32_t> first(nb(), static_cast<std::int32_t>(nt()));  // nt(): never accessed
    {
      std::vector<std::int32_t> fill(astart.begin(), astart.end() - 1);
      for (std::size_t i = 0; i < nt(); ++i) {
        const auto ti = static_cast<std::int32_t>(i);
        for (auto b : p.tasks[i].inputs)
          if (page_of[static_cast<std::size_t>(b)] >= 0) {
            acc[static_cast<std::size_t>(fill[static_cast<std::size_t>(b)]++)] = ti * 2;
            first[static_cast<std::size_t>(b)] = std::min(first[static_cast<std::size_t>(b)], pos[i]);
          }
        for (auto b : p.tasks[i].outputs)
          if (page_of[static_cast<std::size_t>(b)] >= 0) {
            acc[static_cast<std::size_t>(fill[static_cast<std::size_t>(b)]++)] = ti * 2 + 1;
            first[static_cast<std::size_t>(b)] = std::min(first[static_cast<std::size_t>(b)], pos[i]);
          }
      }
    }
    // occupants of each page ordered by first access, then buffer id: two stable counting sorts
    std::vector<std::int32_t> by_first, occ;
    {
      std::vector<std::int32_t> start(nt() + 2, 0);
      for (std::size_t b = 0; b < nb(); ++b)
        if (page_of[b] >= 0) ++start[static_cast<std::size_t>(first[b]) + 1];
      for (std::size_t i = 0; i + 1 < start.size(); ++i) start[i + 1] += start[i];
      by_first.assign(static_cast<std::size_t>(start.back()), 0);
      for (std::size_t b = 0; b < nb(); ++b)
        if (page_of[b] >= 0) by_first[static_cast<std::size_t>(start[static_cast<std::size_t>(first[b])]++)] = static_cast<std::int32_t>(b);
      const std::size_t np = p.pages.pages.size();
      std::vector<std::int32_t> pstart(np + 1, 0);
      for (auto b : by_first) ++pstart[static_cast<std::size_t>(page_of[static_cast<std::size_t>(b)]) + 1];
      for (std::size_t i = 0; i < np; ++i) pstart[i + 1] += pstart[i];
      occ.assign(by_first.size(), 0);
      for (auto b : by_first) occ[static_cast<std::size_t>(pstart[static_cast<std::size_t>(page_of[static_cast<std::size_t>(b)])]++)] = b;
    }
    const std::int32_t* A = acc.data();
    const std::int32_t* AS = astart.data();
    for (std::size_t i = 0; i + 1 < occ.size(); ++i) {
      const auto a = occ[i], b = occ[i + 1];
      const auto au = static_cast<std::size_t>(a), bu = static_cast<std::size_t>(b);
      if (page_of[au] != page_of[bu]) continue;
      bool warned = false;
      for (auto x = AS[au]; x < AS[au + 1] && !warned; ++x)
        for (auto y = AS[bu]; y < AS[bu + 1] && !warned; ++y) {
          const bool xw = (A[x] & 1) != 0, yw = (A[y] & 1) != 0;
          if (!xw && !yw) continue;
          const auto xt = A[x] >> 1, yt = A[y] >> 1;
          if (!ordered(xt, yt)) {
            warn(cat("page aliasing: ", bname(a), " and ", bname(b), " share page ", page_of[au], " but ",
                     tname(xt), (xw ? " (writes " : " (reads "), p.buffers[au].name,
                     ") and ", tname(yt), (yw ? " (writes " : " (reads "),
                     p.buffers[bu].name, ") are unordered: possible clobber"));
            warned = true;
          }
        }
    }
  }

  // ---- §3.3 output reachability, read-only writes, GPU label, config ------------------------------
  constexpr void check_outputs() {
    std::vector<std::uint8_t> written(nb(), 0);
    for (std::size_t i = 0; i < nt(); ++i)
      for (auto b : p.tasks[i].outputs) {
        written[static_cast<std::size_t>(b)] = 1;
        if (is_read_only(buf(b).kind))
          error(cat(tname(static_cast<std::int32_t>(i)), " writes ", bname(b), ", which is read-only (",
                    name(buf(b).kind), ")"));
      }
    for (std::size_t b = 0; b < nb(); ++b)
      if (p.buffers[b].kind == buffer_kind::io_output && !written[b])
        error(cat("output ", bname(static_cast<std::int32_t>(b)), " is never written by any task"));
  }

  constexpr void check_labels_and_config() {
    if (p.has_target) {
      auto gpu = p.meta_value("gpu");
      bool has_gpu = false;
      for (const auto& m : p.meta)
        if (m.key == "gpu") has_gpu = true;
      if (has_gpu && gpu != p.target.name)
        warn(cat("meta gpu '", gpu, "' differs from target name '", p.target.name,
                 "' (results are filed under the target's name)"));
      if (p.target.num_sms < 1) error(cat("target ", p.target.name, " has ", p.target.num_sms, " SMs"));
    }
    if (p.has_config) {
      const auto& c = p.config;
      if (static_cast<int>(c.sm_assignment) > 2)
        error(cat("config: invalid sm_assignment code ", static_cast<int>(c.sm_assignment)));
      if (static_cast<int>(c.page_allocation) > 2)
        error(cat("config: invalid page_allocation code ", static_cast<int>(c.page_allocation)));
      if (c.pipelining_depth < 0) error(cat("config: pipelining_depth ", c.pipelining_depth, " is negative"));
      if (c.threads_per_block < 1) error(cat("config: threads_per_block ", c.threads_per_block, " must be >= 1"));
      if (c.smem_bytes_per_block < 0) error(cat("config: smem_bytes_per_block ", c.smem_bytes_per_block, " is negative"));
      if (p.has_target && c.smem_bytes_per_block > p.target.smem_bytes_per_block_optin)
        error(cat("config: smem_bytes_per_block ", c.smem_bytes_per_block, " exceeds target ", p.target.name,
                  "'s opt-in limit of ", p.target.smem_bytes_per_block_optin));
    }
  }

  constexpr void run() {
    r.stats.tasks = static_cast<std::int64_t>(nt());
    r.stats.buffers = static_cast<std::int64_t>(nb());
    r.stats.counters = static_cast<std::int64_t>(nc());
    check_buffers();
    check_counters();
    check_tasks();
    check_pages();
    check_labels_and_config();
    if (!structure_ok()) return finish();  // later checks index by id: stop before they could go out of range
    check_sizes();
    check_outputs();
    auto g = index_counters(p);
    for (std::int32_t c = 0; c < g.n_counters; ++c) {
      std::int64_t waiters = 0;
      const auto cu = static_cast<std::size_t>(c);
      // edges count distinct waiting tasks; waiter lists are in task order so duplicates are adjacent
      for (auto i = g.wait_start[cu]; i < g.wait_start[cu + 1]; ++i)
        if (i == g.wait_start[cu] || g.waiter[static_cast<std::size_t>(i)] != g.waiter[static_cast<std::size_t>(i) - 1]) ++waiters;
      r.stats.edges += waiters * g.producers(c);
    }
    check_waits(g);
    auto n = build_node_graph(p, g);
    auto topo = kahn_tasks(n);
    if (topo.size() != nt()) {
      error(cat("cycle: ", describe_cycle(n, find_cycle(n))));
      return finish();
    }
    // critical path: tasks on the longest chain
    {
      std::vector<std::int64_t> depth(nt(), 0), at_counter(nc(), 0);
      for (auto t : topo) {
        const auto& tk = p.tasks[static_cast<std::size_t>(t)];
        std::int64_t d = 0;
        for (const auto& w : tk.waits) d = std::max(d, at_counter[static_cast<std::size_t>(w.counter)]);
        depth[static_cast<std::size_t>(t)] = d + 1;
        auto& c = at_counter[static_cast<std::size_t>(tk.out_counter)];
        c = std::max(c, d + 1);
        r.stats.critical_path = std::max(r.stats.critical_path, d + 1);
      }
    }
    check_sm_queues(g);
    check_races(g, topo);
    check_page_aliasing(g, topo);
    finish();
  }

  constexpr void finish() {
    if (dropped_errors > 0) r.errors.push_back(cat("... and ", dropped_errors, " more errors"));
  }
};

}  // namespace detail

/// Checks every rule of docs/ir.md §3.1-§3.3. Never throws and never indexes out of range, whatever the
/// program holds: structural errors (ids, enums, references, arity) stop it before the graph checks.
/// @code
///   static_assert(octo::ir::validate(make_program()).ok);
/// @endcode
constexpr validation_result validate(const program& p) {
  detail::validator v{p, {}, 0};
  v.run();
  return v.r;
}

}  // namespace octo::ir

namespace octo {
using ir::schedule_config;
using ir::validate;
using ir::validation_result;
}  // namespace octo
