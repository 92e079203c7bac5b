// ATTENTION_TILE (opcode 7): GQA attention of T query rows over a window of the KV cache, either the
// normalised output or flash partials (o, m, l). Reference semantics (docs/opcodes.md); fp32 accumulation.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "octo/detail/reference_checks.hpp"

namespace octo::semantics {

/// The params of one attention tile (docs/opcodes.md names; optional ones at their defaults).
struct attention_params {
  std::int64_t head_dim = 0;
  std::int64_t kv_start = 0;
  std::int64_t kv_len = 0;
  float scale = 0.0f;
  std::int64_t n_heads = 0;
  std::int64_t n_kv_heads = 0;
  bool causal = false;
  std::int64_t q_pos = 0;
  bool partial = false;
};

/// q [T, n_heads*hd], k_cache / v_cache [S, n_kv*hd] -> o [T, n_heads*hd], or with p.partial
/// o [T, n_heads, hd+2] holding (normalised o, m, l) per (t, h). Query head h reads kv head
/// h / (n_heads / n_kv_heads) (repeat_interleave). Row t sees keys j in [kv_start, kv_start+kv_len) and,
/// when causal, j <= q_pos + t. A row with no visible key outputs o = 0 (m = -inf, l = 0).
inline void attention_tile(std::span<const float> q, std::span<const float> k_cache, std::span<const float> v_cache,
                           std::span<float> o, const attention_params& p) {
  constexpr const char* op = "ATTENTION_TILE";
  const auto hd = detail::positive_extent(p.head_dim, op, "head_dim");
  const auto nh = detail::positive_extent(p.n_heads, op, "n_heads");
  const auto nkv = detail::positive_extent(p.n_kv_heads, op, "n_kv_heads");
  detail::require(nh % nkv == 0, op, "n_heads must be a multiple of n_kv_heads");
  const std::size_t group = nh / nkv;
  const auto T = detail::exact_rows(q.size(), nh * hd, op, "q");
  const auto S = detail::exact_rows(k_cache.size(), nkv * hd, op, "k_cache");
  detail::require(v_cache.size() == k_cache.size(), op, "v_cache must match k_cache");
  detail::require(p.kv_start >= 0 && p.kv_len >= 0 && static_cast<std::uint64_t>(p.kv_start + p.kv_len) <= S, op,
                  detail::message("KV window [", p.kv_start, ", ", p.kv_start + p.kv_len, ") is outside the cache's ",
                                  S, " positions"));
  const std::size_t out_row = p.partial ? hd + 2 : hd;
  detail::require(o.size() == T * nh * out_row, op,
                  p.partial ? "partial output must hold T x n_heads x (head_dim+2) elements"
                            : "output must hold T x n_heads x head_dim elements");
  const float neg_inf = -std::numeric_limits<float>::infinity();
  std::vector<float> s(static_cast<std::size_t>(p.kv_len));
  std::vector<float> acc(hd);
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t h = 0; h < nh; ++h) {
      const std::size_t kvh = h / group;
      const float* qv = &q[(t * nh + h) * hd];
      std::int64_t end = p.kv_start + p.kv_len;
      if (p.causal && end > p.q_pos + static_cast<std::int64_t>(t) + 1) end = p.q_pos + static_cast<std::int64_t>(t) + 1;
      float m = neg_inf;
      for (std::int64_t j = p.kv_start; j < end; ++j) {
        const float* kv = &k_cache[(static_cast<std::size_t>(j) * nkv + kvh) * hd];
        float dot = 0.0f;
        for (std::size_t d = 0; d < hd; ++d) dot += qv[d] * kv[d];
        s[static_cast<std::size_t>(j - p.kv_start)] = p.scale * dot;
        if (p.scale * dot > m) m = p.scale * dot;
      }
      float l = 0.0f;
      for (auto& a : acc) a = 0.0f;
      for (std::int64_t j = p.kv_start; j < end; ++j) {
        const float e = std::exp(s[static_cast<std::size_t>(j - p.kv_start)] - m);
        l += e;
        const float* vv = &v_cache[(static_cast<std::size_t>(j) * nkv + kvh) * hd];
        for (std::size_t d = 0; d < hd; ++d) acc[d] += e * vv[d];
      }
      float* out = &o[(t * nh + h) * out_row];
      for (std::size_t d = 0; d < hd; ++d) out[d] = l > 0.0f ? acc[d] / l : 0.0f;
      if (p.partial) {
        out[hd] = m;
        out[hd + 1] = l;
      }
    }
}

}  // namespace octo::semantics
