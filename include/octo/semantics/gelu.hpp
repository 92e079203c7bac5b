// GELU (opcode 10): the exact (erf) GELU, 0.5 x (1 + erf(x / sqrt 2)).
// Reference semantics (docs/opcodes.md) for the CPU reference VM.
#pragma once

#include <cmath>
#include <span>

#include "octo/detail/reference_checks.hpp"

namespace octo::semantics {

/// y = 0.5 x (1 + erf(x / sqrt 2)), elementwise.
inline void gelu(std::span<const float> x, std::span<float> y) {
  detail::require(x.size() == y.size(), "GELU", "input and output element counts differ");
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * 0.70710678118654752f));
}

}  // namespace octo::semantics
