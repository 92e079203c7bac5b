// octo::attention: grouped-query attention of q [T, n_heads*hd] over a KV window of k/v caches
// [S, n_kv_heads*hd], optionally causal. Lowers to one ATTENTION_TILE task.
#pragma once

#include "octo/graph/op_support.hpp"

namespace octo {

struct attention_params {
  std::int64_t n_heads = 0;
  std::int64_t n_kv_heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t kv_start = 0;
  std::int64_t kv_len = 0;   // keys [kv_start, kv_start + kv_len) are visible
  double scale = 0.0;        // 0 means 1/sqrt(head_dim)
  bool causal = false;
  std::int64_t q_pos = 0;    // position of the first query row (causal mask)
};

namespace detail {
constexpr double sqrt_newton(double v) {
  if (!(v > 0.0)) return 0.0;
  double x = v >= 1.0 ? v : 1.0;
  for (int i = 0; i < 200; ++i) {
    const double next = 0.5 * (x + v / x);
    if (next == x) break;
    x = next;
  }
  return x;
}
template <class K, class V>
struct kv_extents_equal {
  // a member, not a base: the failure note then names this trait and its extents
  static constexpr bool value = same_extents<K, V>::value;
};
}  // namespace detail

/// @code
///   auto o = octo::attention(q, kc, vc, {.n_heads = 14, .n_kv_heads = 2, .head_dim = 64, .kv_len = 1});
/// @endcode
template <class QD, class QE, class KD, class KE, class VD, class VE>
constexpr auto attention(const tensor<QD, QE>& q, const tensor<KD, KE>& k, const tensor<VD, VE>& v,
                         const attention_params& a) {
  static_assert(QE::rank() == 2 && KE::rank() == 2 && VE::rank() == 2,
                "octo::attention: q is [T, n_heads*head_dim], k and v are [S, n_kv_heads*head_dim]");
  static_assert(detail::is_float_dtype<QD>::value && detail::is_float_dtype<KD>::value &&
                    detail::is_float_dtype<VD>::value,
                "octo::attention: q, k and v must be float");
  static_assert(detail::kv_extents_equal<KE, VE>::value, "octo::attention: k and v must have equal extents");
  graph* g = detail::owner_of("octo::attention: operands from different graphs", q, k, v);
  if (k.extent(0) != v.extent(0) || k.extent(1) != v.extent(1))
    detail::shape_error("octo::attention: k and v must have equal extents", k.ext, v.ext);
  if (a.n_heads <= 0 || a.n_kv_heads <= 0 || a.head_dim <= 0 || a.n_heads % a.n_kv_heads != 0)
    detail::graph_error("octo::attention: n_heads must be a positive multiple of n_kv_heads, head_dim positive");
  if (q.extent(1) != a.n_heads * a.head_dim)
    detail::shape_error("octo::attention: q's width must be n_heads*head_dim", q.ext);
  if (k.extent(1) != a.n_kv_heads * a.head_dim)
    detail::shape_error("octo::attention: k's width must be n_kv_heads*head_dim", k.ext);
  if (a.kv_start < 0 || a.kv_len <= 0 || a.kv_start + a.kv_len > k.extent(0))
    detail::shape_error("octo::attention: the KV window [kv_start, kv_start+kv_len) must lie in the cache", k.ext);
  detail::op_params p;
  p.set(ir::param_key::head_dim, a.head_dim);
  p.set(ir::param_key::kv_start, a.kv_start);
  p.set(ir::param_key::kv_len, a.kv_len);
  p.set_real(ir::param_key::scale, a.scale != 0.0 ? a.scale : 1.0 / detail::sqrt_newton(static_cast<double>(a.head_dim)));
  p.set(ir::param_key::n_heads, a.n_heads);
  p.set(ir::param_key::n_kv_heads, a.n_kv_heads);
  if (a.causal) {
    p.set(ir::param_key::causal, 1);
    p.set(ir::param_key::q_pos, a.q_pos);
  }
  return detail::make_op<f32>(g, ir::opcode::attention_tile, {q.node, k.node, v.node}, p, ir::dtype::f32,
                              q.ext);
}

}  // namespace octo
