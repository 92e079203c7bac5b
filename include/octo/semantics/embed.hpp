// EMBED (opcode 2): gathers table rows by token id, y[t] = table[ids[t]].
// Reference semantics (docs/opcodes.md) for the CPU reference VM.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "octo/detail/reference_checks.hpp"

namespace octo::semantics {

/// ids [T], table [V, hidden] -> y [T, hidden]. An id outside [0, V) is an octo::error.
inline void embed(std::span<const std::int32_t> ids, std::span<const float> table, std::span<float> y,
                  std::int64_t hidden) {
  const auto H = detail::positive_extent(hidden, "EMBED", "hidden");
  const auto V = detail::exact_rows(table.size(), H, "EMBED", "table");
  detail::require(y.size() == ids.size() * H, "EMBED", "output must hold ids x hidden elements");
  for (std::size_t t = 0; t < ids.size(); ++t) {
    const std::int64_t id = ids[t];
    detail::require(id >= 0 && static_cast<std::uint64_t>(id) < V, "EMBED",
                    detail::message("token id ", id, " is outside the table's ", V, " rows"));
    for (std::size_t h = 0; h < H; ++h) y[t * H + h] = table[static_cast<std::size_t>(id) * H + h];
  }
}

}  // namespace octo::semantics
