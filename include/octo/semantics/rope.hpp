// ROPE (opcode 8): rotary position embedding per head, rotate-half (NeoX; Qwen2/Qwen3/HF llama) or
// interleaved (GGUF llama) pairs. Reference semantics (docs/opcodes.md); angles in fp32 as HF computes them.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "octo/detail/reference_checks.hpp"
#include "octo/ir/param_fields.hpp"

namespace octo::semantics {

inline constexpr std::int64_t rope_rotate_half = 0;  // pairs (i, i + n_rot/2)
inline constexpr std::int64_t rope_interleaved = 1;  // pairs (2i, 2i+1)

/// RoPE frequency scaling as a ramp in frequency (Llama 3.1+'s "llama3" rope scaling; the params
/// rope_low_scale, rope_ramp_slope, rope_ramp_offset): each inv_freq_i is multiplied by
///   m_i = low_scale + s_i (1 - low_scale),  s_i = clamp(slope * inv_freq_i + offset, 0, 1),
/// so high frequencies (s = 1) keep theirs and low ones (s = 0) are divided by 1 / low_scale. Llama 3's
/// factor, low_freq_factor (lo), high_freq_factor (hi) and original_max_position_embeddings give
/// low_scale = 1 / factor, slope = original / (2 pi (hi - lo)), offset = -lo / (hi - lo): s_i is Hugging
/// Face's `smooth` where the wavelength 2 pi / inv_freq_i lies between original / hi and original / lo,
/// and crosses 0 and 1 exactly at those bounds. The default (low_scale 1) is no scaling.
struct rope_ramp {
  float low_scale = 1.0f, slope = 0.0f, offset = 0.0f;
  constexpr bool on() const { return low_scale != 1.0f; }
  /// m_i for a frequency, in f32 as the kernels compute it (shaders/common/rope.glsl).
  float multiplier(float inv_freq) const {
    if (!on()) return 1.0f;
    const float s = std::fmin(std::fmax(slope * inv_freq + offset, 0.0f), 1.0f);
    return low_scale + s * (1.0f - low_scale);
  }
};

/// The ramp that a table of per-frequency divisors stands for (GGUF's rope_freqs.weight: inv_freq_i is
/// divided by factors[i], i < n_rot / 2, as llama.cpp's converter writes Llama 3's scaling), or nullopt
/// where the table is not such a ramp (each factor reproduced within 1e-5, relative). A table of ones is
/// the default ramp. Frequencies as the kernels take them: theta^(-2i / n_rot).
inline std::optional<rope_ramp> rope_ramp_fit(std::span<const float> factors, double theta, std::int64_t n_rot) {
  const std::size_t n = factors.size();
  if (n == 0 || n_rot <= 0 || static_cast<std::size_t>(n_rot) != 2 * n || !(theta > 1.0)) return std::nullopt;
  std::vector<double> inv(n), m(n);
  double low = 1.0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!(factors[i] >= 1.0f - 1e-6f) || !std::isfinite(factors[i])) return std::nullopt;  // divisors >= 1
    inv[i] = std::pow(theta, -static_cast<double>(2 * i) / static_cast<double>(n_rot));
    m[i] = 1.0 / static_cast<double>(factors[i]);
    low = std::min(low, m[i]);
  }
  constexpr double tol = 1e-5;
  rope_ramp r{};
  if (low < 1.0 - tol) {
    // Full (m = 1), scaled (m = low) and ramp points; s = (m - low) / (1 - low) is linear in inv on the ramp.
    double inv_lo = -1.0, inv_hi = -1.0;  // the highest scaled frequency, the lowest full one
    std::vector<std::pair<double, double>> ramp;
    for (std::size_t i = 0; i < n; ++i) {
      if (std::abs(m[i] - 1.0) <= tol) inv_hi = inv_hi < 0.0 ? inv[i] : std::min(inv_hi, inv[i]);
      else if (std::abs(m[i] - low) <= tol * low) inv_lo = std::max(inv_lo, inv[i]);
      else ramp.emplace_back(inv[i], (m[i] - low) / (1.0 - low));
    }
    double a = 0.0, b = 0.0;
    if (ramp.size() >= 2) {  // least squares through the ramp's points
      double sx = 0, sy = 0, sxx = 0, sxy = 0;
      for (auto [x, y] : ramp) sx += x, sy += y, sxx += x * x, sxy += x * y;
      const double k = static_cast<double>(ramp.size()), den = k * sxx - sx * sx;
      if (!(den > 0.0)) return std::nullopt;
      a = (k * sxy - sx * sy) / den;
      b = (sy - a * sx) / k;
    } else {
      if (inv_lo < 0.0) return std::nullopt;  // no frequency fully scaled: low is not the scale
      const double hi = inv_hi < 0.0 ? 2.0 * inv[0] + 1.0 : inv_hi;
      if (ramp.empty()) {  // a step between the last scaled and the first full frequency
        if (!(hi > inv_lo)) return std::nullopt;
        a = 1.0 / (hi - inv_lo);
        b = -a * inv_lo;
      } else {  // through the one ramp point, steep enough to reach 0 and 1 by its neighbours
        const auto [x, y] = ramp.front();
        if (!(x > inv_lo && hi > x)) return std::nullopt;
        a = std::max(y / (x - inv_lo), (1.0 - y) / (hi - x));
        b = y - a * x;
      }
    }
    if (!(std::abs(a) < 1e30 && std::abs(b) < 1e30)) return std::nullopt;  // f32 holds them
    r = {static_cast<float>(low), static_cast<float>(a), static_cast<float>(b)};
    if (!r.on()) return std::nullopt;
  }
  for (std::size_t i = 0; i < n; ++i) {
    const double got = r.multiplier(static_cast<float>(inv[i]));
    if (!(std::abs(got - m[i]) <= tol * m[i])) return std::nullopt;
  }
  return r;
}

/// A task's (or a graph node's) ramp: its rope_low_scale / rope_ramp_slope / rope_ramp_offset params;
/// none: no scaling.
template <class Params>
constexpr rope_ramp rope_ramp_of(const Params& p) {
  return {static_cast<float>(p.get_real(ir::param_key::rope_low_scale, 1.0)),
          static_cast<float>(p.get_real(ir::param_key::rope_ramp_slope, 0.0)),
          static_cast<float>(p.get_real(ir::param_key::rope_ramp_offset, 0.0))};
}
/// Writes the ramp's params into a task's (or a graph node's); nothing where it is off.
template <class Params>
constexpr void set_rope_ramp(Params& p, const rope_ramp& r) {
  if (!r.on()) return;
  p.set_real(ir::param_key::rope_low_scale, r.low_scale);
  p.set_real(ir::param_key::rope_ramp_slope, r.slope);
  p.set_real(ir::param_key::rope_ramp_offset, r.offset);
}

/// x [T, n*head_dim], pos [T] -> y [T, n*head_dim]. For i < n_rot/2, theta_i = pos * theta^(-2i/n_rot),
/// (a, b) -> (a cos - b sin, a sin + b cos); dims >= n_rot pass through. `ramp` scales the frequencies.
inline void rope(std::span<const float> x, std::span<const std::int32_t> pos, std::span<float> y,
                 std::int64_t head_dim, float theta, std::int64_t rope_style, std::int64_t n_rot,
                 const rope_ramp& ramp = {}) {
  constexpr const char* op = "ROPE";
  const auto hd = detail::positive_extent(head_dim, op, "head_dim");
  detail::require(n_rot > 0 && n_rot % 2 == 0 && static_cast<std::uint64_t>(n_rot) <= hd, op,
                  detail::message("n_rot must be even and in (0, head_dim], got ", n_rot));
  detail::require(rope_style == rope_rotate_half || rope_style == rope_interleaved, op,
                  detail::message("rope_style must be 0 (rotate-half) or 1 (interleaved), got ", rope_style));
  detail::require(!pos.empty(), op, "pos must have one entry per token");
  detail::require(ramp.low_scale > 0.0f && ramp.low_scale <= 1.0f, op,
                  detail::message("rope_low_scale must be in (0, 1], got ", ramp.low_scale));
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
        float inv_freq = 1.0f / std::pow(theta, static_cast<float>(2 * i) / static_cast<float>(n_rot));
        inv_freq *= ramp.multiplier(inv_freq);
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
