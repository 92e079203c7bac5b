// KV_APPEND (opcode 16): writes this pass's new k or v rows into the persistent KV cache at pos.
// Reference semantics (docs/opcodes.md) for the CPU reference VM; rows outside the cache are an error.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "octo/detail/reference_checks.hpp"

namespace octo::semantics {

/// kv_new [T, row], cache [S, row] (updated in place): cache[pos + t] = kv_new[t]; pos + T > S is an error.
inline void kv_append(std::span<const float> kv_new, std::span<float> cache, std::int64_t row, std::int64_t pos) {
  constexpr const char* op = "KV_APPEND";
  const auto r = detail::positive_extent(row, op, "cache row length");
  const auto T = detail::exact_rows(kv_new.size(), r, op, "new k/v");
  const auto S = detail::exact_rows(cache.size(), r, op, "cache");
  detail::require(pos >= 0 && static_cast<std::uint64_t>(pos) + T <= S, op,
                  detail::message("writing ", T, " rows at pos ", pos, " overflows the cache's ", S, " positions"));
  for (std::size_t i = 0; i < kv_new.size(); ++i) cache[static_cast<std::size_t>(pos) * r + i] = kv_new[i];
}

}  // namespace octo::semantics
