// SOFTMAX (opcode 14): max-subtracted softmax over each row of length dim.
// Reference semantics (docs/opcodes.md) for the CPU reference VM; the sum accumulates in fp32.
#pragma once

#include <cmath>
#include <cstdint>
#include <span>

#include "octo/detail/reference_checks.hpp"

namespace octo::semantics {

/// x [R, dim] -> y [R, dim].
inline void softmax(std::span<const float> x, std::span<float> y, std::int64_t dim) {
  const auto D = detail::positive_extent(dim, "SOFTMAX", "dim");
  const auto R = detail::exact_rows(x.size(), D, "SOFTMAX", "x");
  detail::require(y.size() == x.size(), "SOFTMAX", "output must have as many elements as x");
  for (std::size_t r = 0; r < R; ++r) {
    float m = x[r * D];
    for (std::size_t d = 1; d < D; ++d) m = x[r * D + d] > m ? x[r * D + d] : m;
    float sum = 0.0f;
    for (std::size_t d = 0; d < D; ++d) {
      y[r * D + d] = std::exp(x[r * D + d] - m);
      sum += y[r * D + d];
    }
    for (std::size_t d = 0; d < D; ++d) y[r * D + d] /= sum;
  }
}

}  // namespace octo::semantics
