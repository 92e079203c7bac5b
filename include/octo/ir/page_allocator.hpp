// Page allocation (IR spec §4): binds every ACTIVATION buffer to a physical scratch page. `linear` gives
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
  page_allocation out;
  if (mode == page_allocation_mode::none) return out;
  const auto nt = p.tasks.size(), nb = p.buffers.size();
  auto order = topological_order(p);
  if (!order) throw octo::error("allocate_pages: the program's dependency graph has a cycle");
  const auto& topo = *order;
  std::vector<std::int32_t> pos(nt, 0);
  for (std::size_t i = 0; i < topo.size(); ++i) pos[static_cast<std::size_t>(topo[i])] = static_cast<std::int32_t>(i);
  auto is_act = [&](std::int32_t b) {
    return b >= 0 && static_cast<std::size_t>(b) < nb && p.buffers[static_cast<std::size_t>(b)].kind == buffer_kind::activation;
  };
  // live ranges and accessors of every activation
  struct access { std::int32_t task; bool write; };
  std::vector<std::vector<access>> acc(nb);
  std::vector<std::int32_t> lo(nb, std::numeric_limits<std::int32_t>::max()), hi(nb, -1);
  for (std::size_t t = 0; t < nt; ++t) {
    const auto& tk = p.tasks[t];
    auto touch = [&](std::int32_t b, bool w) {
      if (!is_act(b)) return;
      const auto bu = static_cast<std::size_t>(b);
      acc[bu].push_back({static_cast<std::int32_t>(t), w});
      lo[bu] = std::min(lo[bu], pos[t]);
      hi[bu] = std::max(hi[bu], pos[t]);
    };
    for (auto b : tk.inputs) touch(b, false);
    for (auto b : tk.outputs) touch(b, true);
  }
  std::vector<std::int32_t> bufs;
  for (std::size_t b = 0; b < nb; ++b)
    if (p.buffers[b].kind == buffer_kind::activation) bufs.push_back(static_cast<std::int32_t>(b));
  auto space_of = [&](std::int32_t b) {
    auto s = p.buffers[static_cast<std::size_t>(b)].space;
    return s == mem_space::hbm ? mem_space::global_scratch : s;
  };
  auto new_page = [&](std::int32_t b) {
    const auto bu = static_cast<std::size_t>(b);
    auto id = static_cast<std::int32_t>(out.pages.size());
    out.pages.push_back(page{id, space_of(b), p.buffers[bu].nbytes(), hi[bu] < 0 ? -1 : lo[bu], hi[bu]});
    return id;
  };
  const bool share = mode == page_allocation_mode::graph_color && nt <= graph_color_max_tasks;
  if (!share) {
    for (auto b : bufs) out.buffer_to_page.push_back({b, new_page(b)});
    return out;
  }
  auto g = detail::index_counters(p);
  auto anc = detail::propagate_before(p, g, topo, nt, [](std::int32_t t, auto set_bit) { set_bit(static_cast<std::size_t>(t)); });
  auto before = [&](std::int32_t a, std::int32_t x) {  // a happens-before x
    return a == x || anc.test(static_cast<std::size_t>(x), static_cast<std::size_t>(a));
  };
  // Unused buffers keep private pages; the rest go in order of first use.
  std::vector<std::int32_t> used;
  for (auto b : bufs)
    if (hi[static_cast<std::size_t>(b)] >= 0) used.push_back(b);
  std::sort(used.begin(), used.end(), [&](std::int32_t a, std::int32_t b) {
    return lo[static_cast<std::size_t>(a)] != lo[static_cast<std::size_t>(b)] ? lo[static_cast<std::size_t>(a)] < lo[static_cast<std::size_t>(b)] : a < b;
  });
  std::vector<std::int32_t> occupant;  // last buffer placed on each page
  std::vector<page_binding> bind;
  for (auto b : used) {
    const auto bu = static_cast<std::size_t>(b);
    std::int32_t best = -1;
    for (std::size_t pg = 0; pg < out.pages.size(); ++pg) {
      auto o = occupant[pg];
      const auto ou = static_cast<std::size_t>(o);
      if (out.pages[pg].space != space_of(b) || hi[ou] >= lo[bu]) continue;
      bool safe = true;
      for (const auto& x : acc[ou]) {
        for (const auto& y : acc[bu])
          if ((x.write || y.write) && !before(x.task, y.task)) {
            safe = false;
            break;
          }
        if (!safe) break;
      }
      if (!safe) continue;
      // best fit: the page whose size is closest to what b needs, growing as little as possible
      auto cost = [&](std::size_t q) {
        auto have = out.pages[q].nbytes, need = p.buffers[bu].nbytes();
        return have >= need ? have - need : (need - have) * 4;
      };
      if (best < 0 || cost(pg) < cost(static_cast<std::size_t>(best))) best = static_cast<std::int32_t>(pg);
    }
    if (best < 0) {
      best = new_page(b);
      occupant.push_back(b);
    } else {
      auto& pg = out.pages[static_cast<std::size_t>(best)];
      pg.nbytes = std::max(pg.nbytes, p.buffers[bu].nbytes());
      pg.live_end = std::max(pg.live_end, hi[bu]);
      occupant[static_cast<std::size_t>(best)] = b;
    }
    bind.push_back({b, best});
  }
  for (auto b : bufs)
    if (hi[static_cast<std::size_t>(b)] < 0) {
      bind.push_back({b, new_page(b)});
      occupant.push_back(b);
    }
  std::sort(bind.begin(), bind.end(), [](const page_binding& x, const page_binding& y) { return x.buffer < y.buffer; });
  out.buffer_to_page = bind;
  return out;
}

}  // namespace octo::ir
