// SILU_MUL (opcode 9): the SwiGLU gate, y = silu(gate) * up.
// Reference semantics (docs/opcodes.md) for the CPU reference VM.
#pragma once

#include <cmath>
#include <span>

#include "octo/detail/reference_checks.hpp"

namespace octo::semantics {

/// y = gate * sigmoid(gate) * up, elementwise.
inline void silu_mul(std::span<const float> gate, std::span<const float> up, std::span<float> y) {
  detail::require(gate.size() == up.size() && y.size() == gate.size(), "SILU_MUL",
                  "gate, up and output must have the same element count");
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

}  // namespace octo::semantics
