// GEMV_TILE (opcode 5): one column tile of y = x @ W.T (+ bias); the other columns are left untouched so
// several tiles can write one buffer. Reference semantics (docs/opcodes.md); dot products accumulate in fp32.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "octo/detail/reference_checks.hpp"

namespace octo::semantics {

/// Rows [m_off, m_off+M_tile) and columns [n_off, n_off+N_tile) of y = x @ W.T (+ bias): x [R, K],
/// W [N, K], bias [N] or empty, y [R, N]. Shared by GEMV_TILE (all rows) and GEMM_TILE.
inline void matmul_tile(const char* op, std::span<const float> x, std::span<const float> w,
                        std::span<const float> bias, std::span<float> y, std::int64_t K, std::int64_t N_tile,
                        std::int64_t n_off, std::int64_t M_tile, std::int64_t m_off) {
  const auto k = detail::positive_extent(K, op, "K");
  const auto R = detail::exact_rows(x.size(), k, op, "x");
  const auto N = detail::exact_rows(w.size(), k, op, "weight");
  detail::require(y.size() == R * N, op, "output must hold rows x N elements (N = weight rows)");
  detail::require(bias.empty() || bias.size() == N, op, "bias must have N elements");
  detail::require(N_tile >= 0 && n_off >= 0 && static_cast<std::uint64_t>(n_off + N_tile) <= N, op,
                  detail::message("column tile [", n_off, ", ", n_off + N_tile, ") is outside the ", N, " output columns"));
  detail::require(M_tile >= 0 && m_off >= 0 && static_cast<std::uint64_t>(m_off + M_tile) <= R, op,
                  detail::message("row tile [", m_off, ", ", m_off + M_tile, ") is outside the ", R, " rows"));
  for (auto r = static_cast<std::size_t>(m_off); r < static_cast<std::size_t>(m_off + M_tile); ++r)
    for (auto n = static_cast<std::size_t>(n_off); n < static_cast<std::size_t>(n_off + N_tile); ++n) {
      float acc = 0.0f;
      for (std::size_t i = 0; i < k; ++i) acc += x[r * k + i] * w[n * k + i];
      y[r * N + n] = acc + (bias.empty() ? 0.0f : bias[n]);
    }
}

/// x [R, K], W [N, K], bias [N] or empty -> y[:, n_off:n_off+N_tile] of y [R, N].
inline void gemv_tile(std::span<const float> x, std::span<const float> w, std::span<const float> bias,
                      std::span<float> y, std::int64_t K, std::int64_t N_tile, std::int64_t n_off) {
  const auto rows = K > 0 ? static_cast<std::int64_t>(x.size()) / K : 0;
  matmul_tile("GEMV_TILE", x, w, bias, y, K, N_tile, n_off, rows, 0);
}

}  // namespace octo::semantics
