// The fused decode ops (opcodes 19-29, docs/opcodes.md "Fused ops"): each is, by definition, the
// composition of the reference semantics of the plain ops it fuses, evaluated in the same order with the
// same fp32 intermediates. So the reference VM computes a fused program bit for bit as it computes the
// unfused one, and conformance checks every fused kernel against that composition.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "octo/detail/reference_checks.hpp"
#include "octo/semantics/add.hpp"
#include "octo/semantics/gemv_tile.hpp"
#include "octo/semantics/kv_append.hpp"
#include "octo/semantics/rmsnorm.hpp"
#include "octo/semantics/rope.hpp"
#include "octo/semantics/silu_mul.hpp"

namespace octo::semantics {

/// The RMSNORM prologue every fused op with a norm shares: x [R, hidden] -> h [R, hidden].
inline std::vector<float> fused_norm(std::span<const float> x, std::span<const float> norm_w, std::int64_t hidden,
                                     float eps) {
  std::vector<float> h(x.size());
  rmsnorm(x, norm_w, h, hidden, eps);
  return h;
}

/// RMSNORM_GEMV: y[:, n_off:n_off+N_tile] = RMSNORM(x, norm_w) @ W.T (+ b).
inline void rmsnorm_gemv(std::span<const float> x, std::span<const float> norm_w, std::span<const float> w,
                         std::span<const float> bias, std::span<float> y, std::int64_t hidden, float eps,
                         std::int64_t K, std::int64_t N_tile, std::int64_t n_off) {
  gemv_tile(fused_norm(x, norm_w, hidden, eps), w, bias, y, K, N_tile, n_off);
}

/// GEMV_ADD: y[:, tile] = r[:, tile] + (x @ W.T)[:, tile] (ADD of the GEMV, residual first).
inline void gemv_add(std::span<const float> x, std::span<const float> w, std::span<const float> r, std::span<float> y,
                     std::int64_t K, std::int64_t N_tile, std::int64_t n_off) {
  detail::require(r.size() == y.size(), "GEMV_ADD", "the residual must have as many elements as the output");
  std::vector<float> g(y.size());
  gemv_tile(x, w, {}, g, K, N_tile, n_off);
  const auto N = static_cast<std::size_t>(y.size() / (x.size() / static_cast<std::size_t>(K)));
  for (std::size_t i = 0; i < y.size(); ++i) {
    const auto n = static_cast<std::int64_t>(i % N);
    if (n >= n_off && n < n_off + N_tile) y[i] = r[i] + g[i];
  }
}

/// RMSNORM_SWIGLU: y[:, tile] = SILU_MUL(h @ Wg.T, h @ Wu.T)[:, tile], h = RMSNORM(x, norm_w).
inline void rmsnorm_swiglu(std::span<const float> x, std::span<const float> norm_w, std::span<const float> w_gate,
                           std::span<const float> w_up, std::span<float> y, std::int64_t hidden, float eps,
                           std::int64_t K, std::int64_t N_tile, std::int64_t n_off) {
  detail::require(w_gate.size() == w_up.size(), "RMSNORM_SWIGLU", "the gate and up weights must have one shape");
  const auto h = fused_norm(x, norm_w, hidden, eps);
  std::vector<float> g(y.size()), u(y.size()), a(y.size());
  gemv_tile(h, w_gate, {}, g, K, N_tile, n_off);
  gemv_tile(h, w_up, {}, u, K, N_tile, n_off);
  silu_mul(g, u, a);
  const auto N = static_cast<std::size_t>(y.size() / (x.size() / static_cast<std::size_t>(hidden)));
  for (std::size_t i = 0; i < y.size(); ++i) {
    const auto n = static_cast<std::int64_t>(i % N);
    if (n >= n_off && n < n_off + N_tile) y[i] = a[i];
  }
}

/// The rows every RoPE-fused op projects: GEMV (+ b) of RMSNORM(x) over all N output columns, then
/// ROPE with `pos` when n_rot > 0 (n_rot = 0: no rotation, the V projection).
struct fused_rope {
  std::int64_t head_dim = 0;
  float theta = 0.0f;
  std::int64_t style = 0;
  std::int64_t n_rot = 0;
  rope_ramp ramp{};
};
inline std::vector<float> rmsnorm_gemv_rope_rows(std::span<const float> x, std::span<const float> norm_w,
                                                 std::span<const float> w, std::span<const float> bias,
                                                 std::span<const std::int32_t> pos, std::int64_t hidden, float eps,
                                                 std::int64_t K, const fused_rope& r) {
  const auto k = detail::positive_extent(K, "RMSNORM_GEMV_ROPE", "K");
  const auto R = x.size() / k, N = w.size() / k;
  std::vector<float> y(R * N);
  gemv_tile(fused_norm(x, norm_w, hidden, eps), w, bias, y, K, static_cast<std::int64_t>(N), 0);
  if (r.n_rot == 0) return y;
  std::vector<float> out(y.size());
  rope(y, pos, out, r.head_dim, r.theta, r.style, r.n_rot, r.ramp);
  return out;
}

/// RMSNORM_GEMV_ROPE: y = ROPE(RMSNORM(x) @ W.T (+ b), pos), every column.
inline void rmsnorm_gemv_rope(std::span<const float> x, std::span<const float> norm_w, std::span<const float> w,
                              std::span<const float> bias, std::span<const std::int32_t> pos, std::span<float> y,
                              std::int64_t hidden, float eps, std::int64_t K, const fused_rope& r) {
  detail::require(r.n_rot > 0, "RMSNORM_GEMV_ROPE", "n_rot must be positive");
  const auto v = rmsnorm_gemv_rope_rows(x, norm_w, w, bias, pos, hidden, eps, K, r);
  detail::require(v.size() == y.size(), "RMSNORM_GEMV_ROPE", "output must hold rows x N elements");
  for (std::size_t i = 0; i < v.size(); ++i) y[i] = v[i];
}

/// RMSNORM_GEMV_KV: cache[pos + t] = the rows of rmsnorm_gemv_rope_rows (KV_APPEND of them, encoded in the
/// cache's dtype).
inline void rmsnorm_gemv_kv(std::span<const float> x, std::span<const float> norm_w, std::span<const float> w,
                            std::span<const float> bias, std::span<const std::int32_t> positions,
                            std::span<std::byte> cache, ir::dtype cache_dtype, std::int64_t cache_row,
                            std::int64_t hidden, float eps, std::int64_t K, const fused_rope& r, std::int64_t pos) {
  const auto v = rmsnorm_gemv_rope_rows(x, norm_w, w, bias, positions, hidden, eps, K, r);
  kv_append(v, cache, cache_dtype, cache_row, pos);
}

/// RMSNORM_ROPE: y = ROPE(RMSNORM(x, norm_w) over rows of `hidden` (a head), pos).
inline void rmsnorm_rope(std::span<const float> x, std::span<const float> norm_w, std::span<const std::int32_t> pos,
                         std::span<float> y, std::int64_t hidden, float eps, const fused_rope& r) {
  const auto h = fused_norm(x, norm_w, hidden, eps);
  rope(h, pos, y, r.head_dim, r.theta, r.style, r.n_rot, r.ramp);
}

/// RMSNORM_ROPE_KV: cache[pos + t] = row t of RMSNORM_ROPE(x, norm_w, positions).
inline void rmsnorm_rope_kv(std::span<const float> x, std::span<const float> norm_w,
                            std::span<const std::int32_t> positions, std::span<std::byte> cache,
                            ir::dtype cache_dtype, std::int64_t cache_row, std::int64_t hidden, float eps,
                            const fused_rope& r, std::int64_t pos) {
  std::vector<float> v(x.size());
  rmsnorm_rope(x, norm_w, positions, v, hidden, eps, r);
  kv_append(v, cache, cache_dtype, cache_row, pos);
}

/// RMSNORM_GEMV_NORM_ROPE: y = RMSNORM_ROPE(RMSNORM(x, norm_w) @ W.T, head_norm_w, pos): the projection's
/// rows normalized per head (hidden = head_dim, the same eps) and rotated (Qwen3's q).
inline void rmsnorm_gemv_norm_rope(std::span<const float> x, std::span<const float> norm_w, std::span<const float> w,
                                   std::span<const float> head_norm_w, std::span<const std::int32_t> pos,
                                   std::span<float> y, std::int64_t hidden, float eps, std::int64_t K,
                                   const fused_rope& r) {
  detail::require(r.n_rot > 0, "RMSNORM_GEMV_NORM_ROPE", "n_rot must be positive");
  fused_rope plain = r;
  plain.n_rot = 0;
  const auto v = rmsnorm_gemv_rope_rows(x, norm_w, w, {}, pos, hidden, eps, K, plain);
  detail::require(v.size() == y.size(), "RMSNORM_GEMV_NORM_ROPE", "output must hold rows x N elements");
  rmsnorm_rope(v, head_norm_w, pos, y, r.head_dim, eps, r);
}

/// RMSNORM_GEMV_NORM_KV: cache[pos + t] = row t of RMSNORM_GEMV_NORM_ROPE (Qwen3's k).
inline void rmsnorm_gemv_norm_kv(std::span<const float> x, std::span<const float> norm_w, std::span<const float> w,
                                 std::span<const float> head_norm_w, std::span<const std::int32_t> positions,
                                 std::span<std::byte> cache, ir::dtype cache_dtype, std::int64_t cache_row,
                                 std::int64_t hidden, float eps, std::int64_t K, const fused_rope& r, std::int64_t pos) {
  const auto k = detail::positive_extent(K, "RMSNORM_GEMV_NORM_KV", "K");
  std::vector<float> v(x.size() / k * (w.size() / k));
  rmsnorm_gemv_norm_rope(x, norm_w, w, head_norm_w, positions, v, hidden, eps, K, r);
  kv_append(v, cache, cache_dtype, cache_row, pos);
}

/// RMSNORM_GEMV_QKV: one norm's three projections. q = RMSNORM_GEMV_ROPE(x, norm_w, W_q, b_q, pos);
/// k_cache[pos + t] = row t of RMSNORM_GEMV_ROPE(x, norm_w, W_k, b_k, pos) (RMSNORM_GEMV_KV);
/// v_cache[pos + t] = row t of the unrotated GEMV(h, W_v, b_v) (RMSNORM_GEMV_KV, n_rot = 0). `bias` is
/// b_q | b_k | b_v one after another, or empty.
inline void rmsnorm_gemv_qkv(std::span<const float> x, std::span<const float> norm_w, std::span<const float> wq,
                             std::span<const float> wk, std::span<const float> wv, std::span<const float> bias,
                             std::span<const std::int32_t> positions, std::span<float> q, std::span<std::byte> k_cache,
                             ir::dtype k_dtype, std::span<std::byte> v_cache, ir::dtype v_dtype, std::int64_t kv_row,
                             std::int64_t hidden, float eps, std::int64_t K, const fused_rope& r, std::int64_t pos) {
  const auto k = static_cast<std::size_t>(detail::positive_extent(K, "RMSNORM_GEMV_QKV", "K"));
  const std::size_t nq = wq.size() / k, nk = wk.size() / k, nv = wv.size() / k;
  detail::require(bias.empty() || bias.size() == nq + nk + nv, "RMSNORM_GEMV_QKV",
                  "the bias must hold the q, k and v biases one after another");
  const auto part = [&](std::size_t off, std::size_t n) { return bias.empty() ? bias : bias.subspan(off, n); };
  rmsnorm_gemv_rope(x, norm_w, wq, part(0, nq), positions, q, hidden, eps, K, r);
  rmsnorm_gemv_kv(x, norm_w, wk, part(nq, nk), positions, k_cache, k_dtype, kv_row, hidden, eps, K, r, pos);
  fused_rope plain = r;
  plain.n_rot = 0;
  rmsnorm_gemv_kv(x, norm_w, wv, part(nq + nk, nv), {}, v_cache, v_dtype, kv_row, hidden, eps, K, plain, pos);
}

/// RMSNORM_GEMV_NORM_QKV: Qwen3's three projections of one norm. q = RMSNORM_GEMV_NORM_ROPE(x, norm_w, W_q,
/// hn_q, pos); k_cache[pos + t] = row t of RMSNORM_GEMV_NORM_ROPE(x, norm_w, W_k, hn_k, pos)
/// (RMSNORM_GEMV_NORM_KV); v_cache[pos + t] = row t of the unrotated GEMV(h, W_v) (RMSNORM_GEMV_KV, n_rot =
/// 0). `head_norm` is hn_q | hn_k, head_dim elements each.
inline void rmsnorm_gemv_norm_qkv(std::span<const float> x, std::span<const float> norm_w, std::span<const float> wq,
                                  std::span<const float> wk, std::span<const float> wv,
                                  std::span<const float> head_norm, std::span<const std::int32_t> positions,
                                  std::span<float> q, std::span<std::byte> k_cache, ir::dtype k_dtype,
                                  std::span<std::byte> v_cache, ir::dtype v_dtype, std::int64_t kv_row,
                                  std::int64_t hidden, float eps, std::int64_t K, const fused_rope& r, std::int64_t pos) {
  const auto hd = static_cast<std::size_t>(detail::positive_extent(r.head_dim, "RMSNORM_GEMV_NORM_QKV", "head_dim"));
  detail::require(head_norm.size() == 2 * hd, "RMSNORM_GEMV_NORM_QKV",
                  "hn_qk must hold the q and k head norms' head_dim weights one after another");
  rmsnorm_gemv_norm_rope(x, norm_w, wq, head_norm.subspan(0, hd), positions, q, hidden, eps, K, r);
  rmsnorm_gemv_norm_kv(x, norm_w, wk, head_norm.subspan(hd, hd), positions, k_cache, k_dtype, kv_row, hidden, eps, K,
                       r, pos);
  fused_rope plain = r;
  plain.n_rot = 0;
  rmsnorm_gemv_kv(x, norm_w, wv, {}, {}, v_cache, v_dtype, kv_row, hidden, eps, K, plain, pos);
}

}  // namespace octo::semantics
