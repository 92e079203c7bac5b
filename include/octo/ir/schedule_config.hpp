// ScheduleConfig: the search surface a lowering is parameterised by (docs/ir.md §5). Tuning changes
// speed, never safety: whatever point is chosen, lowering + validate() keep the result safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "octo/ir/text.hpp"

namespace octo::ir {

/// One tile size, e.g. {"gemv", "N_tile", 256} or {"attention", "kv_block", 128}.
struct tile_setting {
  text archetype;
  text key;
  std::int64_t value = 0;
  friend constexpr bool operator==(const tile_setting&, const tile_setting&) = default;
};

enum class sm_assignment_mode : std::uint8_t { round_robin, load_balance, explicit_map };
enum class page_allocation_mode : std::uint8_t { linear, graph_color, none };

struct sm_binding {
  std::int32_t task = 0;
  std::int32_t sm = 0;
  friend constexpr bool operator==(const sm_binding&, const sm_binding&) = default;
};

struct schedule_config {
  std::vector<tile_setting> tiling;
  std::vector<std::vector<text>> fusion_grouping;
  sm_assignment_mode sm_assignment = sm_assignment_mode::load_balance;
  std::vector<sm_binding> sm_map;  // used when sm_assignment == explicit_map
  std::int32_t pipelining_depth = 2;
  page_allocation_mode page_allocation = page_allocation_mode::graph_color;
  std::int32_t threads_per_block = 256;
  std::int32_t smem_bytes_per_block = 0;

  /// The tile size `key` of `archetype`, or `fallback`.
  constexpr std::int64_t tile(std::string_view archetype, std::string_view key, std::int64_t fallback) const {
    for (const auto& t : tiling)
      if (t.archetype == archetype && t.key == key) return t.value;
    return fallback;
  }
  constexpr schedule_config& set_tile(std::string_view archetype, std::string_view key, std::int64_t value) {
    for (auto& t : tiling)
      if (t.archetype == archetype && t.key == key) {
        t.value = value;
        return *this;
      }
    tiling.push_back({text(archetype), text(key), value});
    return *this;
  }
  friend constexpr bool operator==(const schedule_config&, const schedule_config&) = default;
};

constexpr std::string_view name(sm_assignment_mode m) {
  switch (m) {
    case sm_assignment_mode::round_robin: return "round_robin";
    case sm_assignment_mode::load_balance: return "load_balance";
    case sm_assignment_mode::explicit_map: return "explicit";
  }
  return "?";
}
constexpr std::string_view name(page_allocation_mode m) {
  switch (m) {
    case page_allocation_mode::linear: return "linear";
    case page_allocation_mode::graph_color: return "graph_color";
    case page_allocation_mode::none: return "none";
  }
  return "?";
}

}  // namespace octo::ir
