// octo::rmsnorm, octo::head_rmsnorm (Qwen3's per-head q/k norm) and octo::layernorm: row-wise
// normalisations over the last extent, lowered to RMSNORM / LAYERNORM tasks.
#pragma once

#include "octo/graph/op_support.hpp"

namespace octo {
namespace detail {
template <class X, class W>
struct norm_width_matches {
  // a member, not a base: the failure note then names this trait and its extents
  static constexpr bool value = may_equal(last_static<X>(), W::static_extent(0));
};
template <class X, class W>
struct head_width_divides {
  // a member, not a base: the failure note then names this trait and its extents
  static constexpr bool value = last_static<X>() == dyn || W::static_extent(0) == dyn ||
                         last_static<X>() % W::static_extent(0) == 0;
};

template <class XD, class XE, class WD, class WE>
constexpr auto norm_node(ir::opcode op, const tensor<XD, XE>& x, const tensor<WD, WE>& w, double eps,
                         std::int64_t hidden, std::initializer_list<std::int32_t> inputs) {
  check_float("octo::rmsnorm: x and w must be float", x.dtype());
  check_float("octo::rmsnorm: x and w must be float", w.dtype());
  if (!(eps > 0.0)) graph_error("octo::rmsnorm: eps must be positive");
  detail::op_params p;
  p.set_real(ir::param_key::eps, eps);
  p.set(ir::param_key::hidden, hidden);
  return make_op<f32>(owner_of("octo::rmsnorm: operands from different graphs", x, w), op, inputs, p,
                      ir::dtype::f32, x.ext);
}
}  // namespace detail

/// y = x * rsqrt(mean(x^2) + eps) * w over the last extent H; x is [H] or [rows, H], w is [H].
/// @code
///   auto h = octo::rmsnorm(x, w, 1e-6f);   // x: [1, 64], w: [64]
/// @endcode
template <class XD, class XE, class WD, class WE>
constexpr auto rmsnorm(const tensor<XD, XE>& x, const tensor<WD, WE>& w, double eps) {
  static_assert(XE::rank() == 1 || XE::rank() == 2, "octo::rmsnorm: x must be [H] or [rows, H]");
  static_assert(WE::rank() == 1, "octo::rmsnorm: w must be rank 1 [H]");
  static_assert(detail::is_float_dtype<XD>::value && detail::is_float_dtype<WD>::value,
                "octo::rmsnorm: x and w must be float (a norm weight is never block-quantized)");
  static_assert(detail::norm_width_matches<XE, WE>::value, "octo::rmsnorm: x's last extent differs from w's length");
  if (x.extent(XE::rank() - 1) != w.extent(0))
    detail::shape_error("octo::rmsnorm: x's last extent differs from w's length", x.ext, w.ext);
  return detail::norm_node(ir::opcode::rmsnorm, x, w, eps, w.extent(0), {x.node, w.node});
}

/// rmsnorm of `count` rows of x [rows, H] from row `first` on: y is [count, H] (a prefill's final norm of
/// the last prompt row, so that only the rows read go through the LM head). One RMSNORM task with m_off.
/// @code
///   auto last = octo::rmsnorm_rows(x, w, 1e-6, T - 1, 1);   // x: [T, 64]  ->  [1, 64]
/// @endcode
template <class XD, class XE, class WD, class WE>
constexpr auto rmsnorm_rows(const tensor<XD, XE>& x, const tensor<WD, WE>& w, double eps, std::int64_t first,
                            std::int64_t count) {
  static_assert(XE::rank() == 2, "octo::rmsnorm_rows: x must be [rows, H]");
  static_assert(WE::rank() == 1, "octo::rmsnorm_rows: w must be rank 1 [H]");
  static_assert(detail::is_float_dtype<XD>::value && detail::is_float_dtype<WD>::value,
                "octo::rmsnorm_rows: x and w must be float (a norm weight is never block-quantized)");
  static_assert(detail::norm_width_matches<XE, WE>::value, "octo::rmsnorm_rows: x's last extent differs from w's length");
  if (x.extent(1) != w.extent(0))
    detail::shape_error("octo::rmsnorm_rows: x's last extent differs from w's length", x.ext, w.ext);
  if (first < 0 || count <= 0 || first + count > x.extent(0))
    detail::graph_error("octo::rmsnorm_rows: rows [first, first + count) must lie within x's rows");
  detail::check_float("octo::rmsnorm_rows: x and w must be float", x.dtype());
  detail::check_float("octo::rmsnorm_rows: x and w must be float", w.dtype());
  if (!(eps > 0.0)) detail::graph_error("octo::rmsnorm_rows: eps must be positive");
  detail::op_params p;
  p.set_real(ir::param_key::eps, eps);
  p.set(ir::param_key::hidden, w.extent(0));
  if (first != 0) p.set(ir::param_key::m_off, first);
  return detail::make_op<f32>(detail::owner_of("octo::rmsnorm_rows: operands from different graphs", x, w),
                              ir::opcode::rmsnorm, {x.node, w.node}, p, ir::dtype::f32,
                              dextents<2>{count, w.extent(0)});
}

/// RMSNorm of each head: x is [rows, n*hd], w is [hd]; normalises every hd-wide slice (Qwen3 q/k norm).
template <class XD, class XE, class WD, class WE>
constexpr auto head_rmsnorm(const tensor<XD, XE>& x, const tensor<WD, WE>& w, double eps) {
  static_assert(XE::rank() == 2, "octo::head_rmsnorm: x must be [rows, heads*head_dim]");
  static_assert(WE::rank() == 1, "octo::head_rmsnorm: w must be rank 1 [head_dim]");
  static_assert(detail::is_float_dtype<XD>::value && detail::is_float_dtype<WD>::value,
                "octo::head_rmsnorm: x and w must be float");
  static_assert(detail::head_width_divides<XE, WE>::value,
                "octo::head_rmsnorm: x's width is not a multiple of w's length (head_dim)");
  if (x.extent(1) % w.extent(0) != 0)
    detail::shape_error("octo::head_rmsnorm: x's width is not a multiple of w's length (head_dim)", x.ext, w.ext);
  return detail::norm_node(ir::opcode::rmsnorm, x, w, eps, w.extent(0), {x.node, w.node});
}

/// LayerNorm with weight and bias over the last extent (biased variance).
template <class XD, class XE, class WD, class WE, class BD, class BE>
constexpr auto layernorm(const tensor<XD, XE>& x, const tensor<WD, WE>& w, const tensor<BD, BE>& b, double eps) {
  static_assert(XE::rank() == 1 || XE::rank() == 2, "octo::layernorm: x must be [H] or [rows, H]");
  static_assert(WE::rank() == 1 && BE::rank() == 1, "octo::layernorm: w and b must be rank 1 [H]");
  static_assert(detail::norm_width_matches<XE, WE>::value && detail::norm_width_matches<XE, BE>::value,
                "octo::layernorm: x's last extent differs from w's or b's length");
  if (x.extent(XE::rank() - 1) != w.extent(0) || w.extent(0) != b.extent(0))
    detail::shape_error("octo::layernorm: x's last extent differs from w's or b's length", x.ext, w.ext, b.ext);
  if (b.owner != x.owner) detail::graph_error("octo::layernorm: operands from different graphs");
  return detail::norm_node(ir::opcode::layernorm, x, w, eps, w.extent(0), {x.node, w.node, b.node});
}

}  // namespace octo
