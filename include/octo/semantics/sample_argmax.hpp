// SAMPLE_ARGMAX (opcode 17): greedy sampling, the index of each row's maximum (lowest index on ties).
// Reference semantics (docs/opcodes.md) for the CPU reference VM.
#pragma once

#include <cstdint>
#include <span>

#include "octo/detail/reference_checks.hpp"

namespace octo::semantics {

/// logits [R, V] -> ids [R]. NaN never wins (a row of NaNs gives 0).
inline void sample_argmax(std::span<const float> logits, std::span<std::int32_t> ids, std::int64_t vocab) {
  const auto V = detail::positive_extent(vocab, "SAMPLE_ARGMAX", "vocab");
  const auto R = detail::exact_rows(logits.size(), V, "SAMPLE_ARGMAX", "logits");
  detail::require(ids.size() == R, "SAMPLE_ARGMAX", "output must have one id per logits row");
  for (std::size_t r = 0; r < R; ++r) {
    std::size_t best = 0;
    for (std::size_t v = 1; v < V; ++v)
      if (logits[r * V + v] > logits[r * V + best] || (logits[r * V + best] != logits[r * V + best] &&
                                                        logits[r * V + v] == logits[r * V + v]))
        best = v;  // strictly greater keeps the lowest index on ties; a NaN leader yields to any number
    ids[r] = static_cast<std::int32_t>(best);
  }
}

}  // namespace octo::semantics
