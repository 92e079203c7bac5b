// RMSNORM (opcode 3): y = x * rsqrt(mean(x^2) + eps) * w per row of length hidden. With fewer output
// rows than input rows, y's R' rows are the normalised rows m_off .. m_off+R'-1 of x (a prefill's final
// norm of the last prompt row only, docs/opcodes.md).
// Reference semantics (docs/opcodes.md) for the CPU reference VM; the sum of squares accumulates in fp32.
#pragma once

#include <cmath>
#include <cstdint>
#include <span>

#include "octo/detail/reference_checks.hpp"

namespace octo::semantics {

/// x [R, hidden], w [hidden] -> y [R', hidden], R' <= R: rows m_off .. m_off+R'-1 of x (R' = R, m_off = 0:
/// every row).
inline void rmsnorm(std::span<const float> x, std::span<const float> w, std::span<float> y, std::int64_t hidden,
                    float eps, std::int64_t m_off = 0) {
  const auto H = detail::positive_extent(hidden, "RMSNORM", "hidden");
  const auto R = detail::exact_rows(x.size(), H, "RMSNORM", "x");
  const auto R_out = detail::exact_rows(y.size(), H, "RMSNORM", "y");
  detail::require(w.size() == H, "RMSNORM", "weight must have hidden elements");
  detail::require(m_off >= 0 && static_cast<std::size_t>(m_off) + R_out <= R, "RMSNORM",
                  "output rows [m_off, m_off + rows of y) must lie within x's rows");
  x = x.subspan(static_cast<std::size_t>(m_off) * H, R_out * H);
  for (std::size_t r = 0; r < R_out; ++r) {
    float ss = 0.0f;
    for (std::size_t h = 0; h < H; ++h) ss += x[r * H + h] * x[r * H + h];
    const float inv = 1.0f / std::sqrt(ss / static_cast<float>(H) + eps);
    for (std::size_t h = 0; h < H; ++h) y[r * H + h] = x[r * H + h] * inv * w[h];
  }
}

}  // namespace octo::semantics
