// ADD (opcode 11): residual add, y = a + b with b broadcast over rows (b's numel divides a's).
// Reference semantics (docs/opcodes.md) for the CPU reference VM.
#pragma once

#include <span>

#include "octo/detail/reference_checks.hpp"

namespace octo::semantics {

/// y[i] = a[i] + b[i % b.size()].
inline void add(std::span<const float> a, std::span<const float> b, std::span<float> y) {
  detail::require(!b.empty() && a.size() % b.size() == 0, "ADD", "b's element count must divide a's");
  detail::require(y.size() == a.size(), "ADD", "output must have as many elements as a");
  for (std::size_t i = 0; i < a.size(); ++i) y[i] = a[i] + b[i % b.size()];
}

}  // namespace octo::semantics
