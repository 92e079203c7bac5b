// MUL (opcode 12): scale (one input, y = alpha a) or elementwise product (two inputs, y = a b with b
// broadcast over rows as in ADD). Reference semantics (docs/opcodes.md) for the CPU reference VM.
#pragma once

#include <span>

#include "octo/detail/reference_checks.hpp"

namespace octo::semantics {

/// One input: y = alpha * a.
inline void mul(std::span<const float> a, std::span<float> y, float alpha) {
  detail::require(y.size() == a.size(), "MUL", "output must have as many elements as a");
  for (std::size_t i = 0; i < a.size(); ++i) y[i] = alpha * a[i];
}

/// Two inputs: y[i] = a[i] * b[i % b.size()].
inline void mul(std::span<const float> a, std::span<const float> b, std::span<float> y) {
  detail::require(!b.empty() && a.size() % b.size() == 0, "MUL", "b's element count must divide a's");
  detail::require(y.size() == a.size(), "MUL", "output must have as many elements as a");
  for (std::size_t i = 0; i < a.size(); ++i) y[i] = a[i] * b[i % b.size()];
}

}  // namespace octo::semantics
