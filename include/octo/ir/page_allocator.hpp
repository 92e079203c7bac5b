// Page allocation (docs/ir.md §4): binds every ACTIVATION buffer to a physical scratch page. `linear` gives
// each its own page; `graph_color` lets buffers share a page when their uses are ordered by the DAG.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "octo/error.hpp"
#include "octo/ir/dependency_graph.hpp"
#include "octo/ir/program.hpp"
#include "octo/ir/schedule_config.hpp"

namespace octo::ir {

/// Above this many tasks graph_color stops sharing pages: proving two buffers' uses ordered needs a
/// task x task happens-before matrix (tasks^2 / 8 bytes), and an unproven share could clobber data.
inline constexpr std::size_t graph_color_max_tasks = 8192;

/// Allocates pages for the ACTIVATION buffers of a program whose structure validate() accepts.
/// Live ranges are positions in the topological order. graph_color reuses a page for a buffer only
/// when the page's previous occupants' live ranges end before it starts AND every access of those
/// occupants happens-before every access of the new buffer where either side writes, so validate()'s
/// page-aliasing check never fires on its output. Throws octo::error on a cyclic program.
/// @code
///   p.pages = allocate_pages(p, page_allocation_mode::graph_color);
///   p.has_pages = true;
/// @endcode
constexpr page_allocation allocate_pages(const program& p, page_allocation_mode mode) {
  // Written for constant evaluation, where g++ charges every call and every std::vector: flat CSR arrays,
  // counting sorts instead of std::sort, raw pointers in the hot loops (docs/compile-time.md).
  page_allocation out;
  if (mode == page_allocation_mode::none) return out;
  const auto nt = p.tasks.size(), nb = p.buffers.size();
  const auto g = detail::index_counters(p);
  const auto topo = detail::kahn_tasks(detail::build_node_graph(p, g));
  if (topo.size() != nt) throw octo::error("allocate_pages: the program's dependency graph has a cycle");
  std::vector<std::int32_t> pos(nt, 0);
  for (std::size_t i = 0; i < nt; ++i) pos[static_cast<std::size_t>(topo[i])] = static_cast<std::int32_t>(i);
  std::vector<std::uint8_t> act(nb, 0);
  for (std::size_t b = 0; b < nb; ++b) act[b] = p.buffers[b].kind == buffer_kind::activation ? 1 : 0;
  auto is_act = [&act, nb](std::int32_t b) { return b >= 0 && static_cast<std::size_t>(b) < nb && act[static_cast<std::size_t>(b)]; };
  // accessors of every activation in CSR form: entry = task * 2 + (1 if it writes)
  std::vector<std::int32_t> astart(nb + 1, 0);
  for (const auto& tk : p.tasks) {
    for (auto b : tk.inputs)
      if (is_act(b)) ++astart[static_cast<std::size_t>(b) + 1];
    for (auto b : tk.outputs)
      if (is_act(b)) ++astart[static_cast<std::size_t>(b) + 1];
  }
  for (std::size_t b = 0; b < nb; ++b) astart[b + 1] += astart[b];
  std::vector<std::int32_t> acc(static_cast<std::size_t>(astart[nb]), 0);
  std::vector<std::int32_t> lo(nb, std::numeric_limits<std::int32_t>::max()), hi(nb, -1);
  {
    std::vector<std::int32_t> fill(astart.begin(), astart.end() - 1);
    for (std::size_t t = 0; t < nt; ++t) {
      const auto& tk = p.tasks[t];
      auto touch = [&](std::int32_t b, std::int32_t w) {
        if (!is_act(b)) return;
        const auto bu = static_cast<std::size_t>(b);
        acc[static_cast<std::size_t>(fill[bu]++)] = static_cast<std::int32_t>(t) * 2 + w;
        lo[bu] = std::min(lo[bu], pos[t]);
        hi[bu] = std::max(hi[bu], pos[t]);
      };
      for (auto b : tk.inputs) touch(b, 0);
      for (auto b : tk.outputs) touch(b, 1);
    }
  }
  std::vector<std::int64_t> need(nb, 0);
  std::vector<mem_space> space(nb, mem_space::global_scratch);
  for (std::size_t b = 0; b < nb; ++b)
    if (act[b]) {
      need[b] = p.buffers[b].nbytes();
      const auto s = p.buffers[b].space;
      space[b] = s == mem_space::hbm ? mem_space::global_scratch : s;
    }
  auto new_page = [&](std::size_t b) {
    auto id = static_cast<std::int32_t>(out.pages.size());
    out.pages.push_back(page{id, space[b], need[b], hi[b] < 0 ? -1 : lo[b], hi[b]});
    return id;
  };
  const bool share = mode == page_allocation_mode::graph_color && nt <= graph_color_max_tasks;
  out.buffer_to_page.reserve(nb);
  if (!share) {
    for (std::size_t b = 0; b < nb; ++b)
      if (act[b]) out.buffer_to_page.push_back({static_cast<std::int32_t>(b), new_page(b)});
    return out;
  }
  const auto anc = detail::ancestors_by_position(p, g, topo);
  const std::uint64_t* bits = anc.bits.data();
  const std::size_t words = anc.words;
  // Used buffers in order of first use (a counting sort by position, ids ascending within one position);
  // unused ones keep private pages.
  std::vector<std::int32_t> by_lo_start(nt + 1, 0), used;
  for (std::size_t b = 0; b < nb; ++b)
    if (act[b] && hi[b] >= 0) ++by_lo_start[static_cast<std::size_t>(lo[b]) + 1];
  for (std::size_t i = 0; i < nt; ++i) by_lo_start[i + 1] += by_lo_start[i];
  used.assign(static_cast<std::size_t>(by_lo_start[nt]), 0);
  for (std::size_t b = 0; b < nb; ++b)
    if (act[b] && hi[b] >= 0) used[static_cast<std::size_t>(by_lo_start[static_cast<std::size_t>(lo[b])]++)] = static_cast<std::int32_t>(b);
  std::vector<std::int32_t> page_of(nb, -1);
  std::vector<std::int32_t> occupant;  // last buffer placed on each page
  const std::int32_t* A = acc.data();
  const std::int32_t* AS = astart.data();
  const std::int32_t* P = pos.data();
  for (auto b32 : used) {
    const auto bu = static_cast<std::size_t>(b32);
    std::int32_t best = -1;
    std::int64_t best_cost = 0;
    for (std::size_t pg = 0; pg < out.pages.size(); ++pg) {
      const auto ou = static_cast<std::size_t>(occupant[pg]);
      if (hi[ou] >= lo[bu] || out.pages[pg].space != space[bu]) continue;
      // every access of the occupant must happen-before every access of b where either side writes
      bool safe = true;
      for (auto x = AS[ou]; x < AS[ou + 1] && safe; ++x) {
        const auto xp = static_cast<std::size_t>(P[A[x] >> 1]);  // positions: rows of `anc`
        const bool xw = (A[x] & 1) != 0;
        for (auto y = AS[bu]; y < AS[bu + 1]; ++y) {
          if (!xw && (A[y] & 1) == 0) continue;
          const auto yp = static_cast<std::size_t>(P[A[y] >> 1]);
          if (xp > yp || ((bits[yp * words + xp / 64] >> (xp % 64)) & 1u) == 0) {
            safe = false;
            break;
          }
        }
      }
      if (!safe) continue;
      // best fit: the page whose size is closest to what b needs, growing as little as possible
      const auto have = out.pages[pg].nbytes;
      const auto cost = have >= need[bu] ? have - need[bu] : (need[bu] - have) * 4;
      if (best < 0 || cost < best_cost) {
        best = static_cast<std::int32_t>(pg);
        best_cost = cost;
      }
    }
    if (best < 0) {
      best = new_page(bu);
      occupant.push_back(b32);
    } else {
      auto& pg = out.pages[static_cast<std::size_t>(best)];
      pg.nbytes = std::max(pg.nbytes, need[bu]);
      pg.live_end = std::max(pg.live_end, hi[bu]);
      occupant[static_cast<std::size_t>(best)] = b32;
    }
    page_of[bu] = best;
  }
  for (std::size_t b = 0; b < nb; ++b)
    if (act[b] && hi[b] < 0) {
      page_of[b] = new_page(b);
      occupant.push_back(static_cast<std::int32_t>(b));
    }
  for (std::size_t b = 0; b < nb; ++b)  // sorted by buffer id
    if (act[b]) out.buffer_to_page.push_back({static_cast<std::int32_t>(b), page_of[b]});
  return out;
}

}  // namespace octo::ir
