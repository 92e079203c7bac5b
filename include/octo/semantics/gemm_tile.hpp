// GEMM_TILE (opcode 6): a (row, column) tile of y = x @ W.T (+ bias) for prefill / batches.
// Reference semantics (docs/opcodes.md) for the CPU reference VM; dot products accumulate in fp32.
#pragma once

#include <cstdint>
#include <span>

#include "octo/semantics/gemv_tile.hpp"

namespace octo::semantics {

/// x [M, K], W [N, K], bias [N] or empty -> y[m_off:m_off+M_tile, n_off:n_off+N_tile] of y [M, N].
inline void gemm_tile(std::span<const float> x, std::span<const float> w, std::span<const float> bias,
                      std::span<float> y, std::int64_t M_tile, std::int64_t K, std::int64_t N_tile,
                      std::int64_t n_off, std::int64_t m_off) {
  matmul_tile("GEMM_TILE", x, w, bias, y, K, N_tile, n_off, M_tile, m_off);
}

}  // namespace octo::semantics
