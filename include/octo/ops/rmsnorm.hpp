// RMSNORM (opcode 3): y = x * rsqrt(mean(x^2) + eps) * w per row of length hidden.
// Reference semantics (docs/opcodes.md) for the CPU reference VM; the sum of squares accumulates in fp32.
#pragma once

#include <cmath>
#include <cstdint>
#include <span>

#include "octo/detail/reference_checks.hpp"

namespace octo::ops::reference {

/// x [R, hidden], w [hidden] -> y [R, hidden].
inline void rmsnorm(std::span<const float> x, std::span<const float> w, std::span<float> y, std::int64_t hidden,
                    float eps) {
  const auto H = detail::positive_extent(hidden, "RMSNORM", "hidden");
  const auto R = detail::exact_rows(x.size(), H, "RMSNORM", "x");
  detail::require(w.size() == H, "RMSNORM", "weight must have hidden elements");
  detail::require(y.size() == x.size(), "RMSNORM", "output must have as many elements as x");
  for (std::size_t r = 0; r < R; ++r) {
    float ss = 0.0f;
    for (std::size_t h = 0; h < H; ++h) ss += x[r * H + h] * x[r * H + h];
    const float inv = 1.0f / std::sqrt(ss / static_cast<float>(H) + eps);
    for (std::size_t h = 0; h < H; ++h) y[r * H + h] = x[r * H + h] * inv * w[h];
  }
}

}  // namespace octo::ops::reference
