// LAYERNORM (opcode 4): y = (x - mean) / sqrt(var + eps) * w (+ b) per row, biased variance.
// Reference semantics (docs/opcodes.md) for the CPU reference VM; mean and variance accumulate in fp32.
#pragma once

#include <cmath>
#include <cstdint>
#include <span>

#include "octo/detail/reference_checks.hpp"

namespace octo::semantics {

/// x [R, hidden], w [hidden], b [hidden] or empty -> y [R, hidden].
inline void layernorm(std::span<const float> x, std::span<const float> w, std::span<const float> b,
                      std::span<float> y, std::int64_t hidden, float eps) {
  const auto H = detail::positive_extent(hidden, "LAYERNORM", "hidden");
  const auto R = detail::exact_rows(x.size(), H, "LAYERNORM", "x");
  detail::require(w.size() == H, "LAYERNORM", "weight must have hidden elements");
  detail::require(b.empty() || b.size() == H, "LAYERNORM", "bias must have hidden elements");
  detail::require(y.size() == x.size(), "LAYERNORM", "output must have as many elements as x");
  for (std::size_t r = 0; r < R; ++r) {
    float sum = 0.0f;
    for (std::size_t h = 0; h < H; ++h) sum += x[r * H + h];
    const float mean = sum / static_cast<float>(H);
    float var = 0.0f;  // two passes: no cancellation from E[x^2] - E[x]^2
    for (std::size_t h = 0; h < H; ++h) var += (x[r * H + h] - mean) * (x[r * H + h] - mean);
    const float inv = 1.0f / std::sqrt(var / static_cast<float>(H) + eps);
    for (std::size_t h = 0; h < H; ++h)
      y[r * H + h] = (x[r * H + h] - mean) * inv * w[h] + (b.empty() ? 0.0f : b[h]);
  }
}

}  // namespace octo::semantics
