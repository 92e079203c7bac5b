// ROPE (opcode 8): rotary position embedding per head, rotate-half (NeoX; Qwen2/Qwen3/HF llama) or
// interleaved (GGUF llama) pairs. Reference semantics (docs/opcodes.md); angles in fp32 as HF computes them.
#pragma once

#include <cmath>
#include <cstdint>
#include <span>
#include <string>

#include "octo/detail/reference_checks.hpp"

namespace octo::semantics {

inline constexpr std::int64_t rope_rotate_half = 0;  // pairs (i, i + n_rot/2)
inline constexpr std::int64_t rope_interleaved = 1;  // pairs (2i, 2i+1)

/// x [T, n*head_dim], pos [T] -> y [T, n*head_dim]. For i < n_rot/2, theta_i = pos * theta^(-2i/n_rot),
/// (a, b) -> (a cos - b sin, a sin + b cos); dims >= n_rot pass through.
inline void rope(std::span<const float> x, std::span<const std::int32_t> pos, std::span<float> y,
                 std::int64_t head_dim, float theta, std::int64_t rope_style, std::int64_t n_rot) {
  constexpr const char* op = "ROPE";
  const auto hd = detail::positive_extent(head_dim, op, "head_dim");
  detail::require(n_rot > 0 && n_rot % 2 == 0 && static_cast<std::uint64_t>(n_rot) <= hd, op,
                  detail::message("n_rot must be even and in (0, head_dim], got ", n_rot));
  detail::require(rope_style == rope_rotate_half || rope_style == rope_interleaved, op,
                  detail::message("rope_style must be 0 (rotate-half) or 1 (interleaved), got ", rope_style));
  detail::require(!pos.empty(), op, "pos must have one entry per token");
  const auto row = detail::exact_rows(x.size(), pos.size(), op, "x (rows = pos entries)");
  const auto n_heads = detail::exact_rows(row, hd, op, "x row");
  detail::require(y.size() == x.size(), op, "output must have as many elements as x");
  const auto half = static_cast<std::size_t>(n_rot / 2);
  for (std::size_t t = 0; t < pos.size(); ++t)
    for (std::size_t h = 0; h < n_heads; ++h) {
      const float* xs = &x[t * row + h * hd];
      float* ys = &y[t * row + h * hd];
      for (std::size_t d = 0; d < hd; ++d) ys[d] = xs[d];
      for (std::size_t i = 0; i < half; ++i) {
        const float inv_freq =
            1.0f / std::pow(theta, static_cast<float>(2 * i) / static_cast<float>(n_rot));
        const float ang = static_cast<float>(pos[t]) * inv_freq;
        const float c = std::cos(ang), s = std::sin(ang);
        const std::size_t ia = rope_style == rope_rotate_half ? i : 2 * i;
        const std::size_t ib = rope_style == rope_rotate_half ? i + half : 2 * i + 1;
        const float a = xs[ia], b = xs[ib];
        ys[ia] = a * c - b * s;
        ys[ib] = a * s + b * c;
      }
    }
}

}  // namespace octo::semantics
