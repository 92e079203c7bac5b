// ATTENTION_COMBINE (opcode 18): merges flash-attention partials (o, m, l) of disjoint KV blocks into
// the attention output. Reference semantics (docs/opcodes.md) for the CPU reference VM.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "octo/detail/reference_checks.hpp"

namespace octo::semantics {

/// partials: 2..8 buffers [T, n_heads, head_dim+2] -> o [T, n_heads*head_dim];
/// m* = max m_i, w_i = l_i exp(m_i - m*), o = sum w_i o_i / sum w_i (0 when sum w_i = 0).
inline void attention_combine(std::span<const std::span<const float>> partials, std::span<float> o,
                              std::int64_t n_tokens, std::int64_t n_heads, std::int64_t head_dim) {
  constexpr const char* op = "ATTENTION_COMBINE";
  const auto T = detail::positive_extent(n_tokens, op, "tokens");
  const auto nh = detail::positive_extent(n_heads, op, "n_heads");
  const auto hd = detail::positive_extent(head_dim, op, "head_dim");
  detail::require(!partials.empty(), op, "needs at least one partial");
  for (const auto& part : partials)
    detail::require(part.size() == T * nh * (hd + 2), op, "every partial must hold T x n_heads x (head_dim+2) elements");
  detail::require(o.size() == T * nh * hd, op, "output must hold T x n_heads x head_dim elements");
  const float neg_inf = -std::numeric_limits<float>::infinity();
  for (std::size_t row = 0; row < T * nh; ++row) {
    float m_star = neg_inf;
    for (const auto& part : partials) m_star = std::max(m_star, part[row * (hd + 2) + hd]);
    float* out = &o[row * hd];
    for (std::size_t d = 0; d < hd; ++d) out[d] = 0.0f;
    if (m_star == neg_inf) continue;  // no partial saw a key: exp(-inf - -inf) would be NaN
    float wsum = 0.0f;
    for (const auto& part : partials) {
      const float* pr = &part[row * (hd + 2)];
      const float w = pr[hd + 1] * std::exp(pr[hd] - m_star);
      wsum += w;
      for (std::size_t d = 0; d < hd; ++d) out[d] += w * pr[d];
    }
    for (std::size_t d = 0; d < hd; ++d) out[d] = wsum > 0.0f ? out[d] / wsum : 0.0f;
  }
}

}  // namespace octo::semantics
