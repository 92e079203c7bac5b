// octo::gemv / octo::gemm: y[R,N] = x[R,K] @ W[N,K]^T (+ bias[N]). Lower to GEMV_TILE / GEMM_TILE tasks,
// tiled by schedule_config ("gemv"/"N_tile", "gemm"/"M_tile", "gemm"/"N_tile").
#pragma once

#include "octo/graph/op_support.hpp"

namespace octo {
namespace detail {

template <class X, class W>
struct gemv_k_matches {
  // a member, not a base: the failure note then names this trait and its extents
  static constexpr bool value = may_equal(X::static_extent(X::rank() - 1), W::static_extent(1));
};
template <class W, class B>
struct bias_matches_n {
  // a member, not a base: the failure note then names this trait and its extents
  static constexpr bool value = may_equal(W::static_extent(0), B::static_extent(0));
};
/// A block-quantized W needs K to be a whole number of blocks (32 or 256 elements).
template <class WD, class W>
struct k_fits_blocks {
  // a member, not a base: the failure note then names this trait and its extents
  static constexpr bool value = WD::is_dynamic || W::static_extent(1) == dyn ||
                                          W::static_extent(1) % ir::layout(WD::code).block_elems == 0;
};

// The compile-time rules, spelled per op so the message names it.
#define OCTO_MATMUL_STATIC_CHECKS(OP)                                                                        \
  static_assert(XE::rank() == 2, "octo::" OP ": x must be rank 2 [rows, K]");                               \
  static_assert(WE::rank() == 2, "octo::" OP ": W must be rank 2 [N, K]");                                  \
  static_assert(detail::is_float_dtype<XD>::value, "octo::" OP ": x must be a float activation");           \
  static_assert(detail::is_weight_dtype<WD>::value, "octo::" OP ": W must be a float or block-quantized weight"); \
  static_assert(detail::gemv_k_matches<XE, WE>::value, "octo::" OP ": K mismatch: x is [rows, K] and W is [N, K]"); \
  static_assert(detail::k_fits_blocks<WD, WE>::value,                                                       \
                "octo::" OP ": K is not a multiple of W's quantization block (32, or 256 for K-quants)")

template <class XD, class XE, class WD, class WE>
constexpr void check_matmul_values(const char* op, const tensor<XD, XE>& x, const tensor<WD, WE>& w) {
  check_float("octo::gemv/gemm: x must be a float activation", x.dtype());
  check_weight("octo::gemv/gemm: W must be a float or block-quantized weight", w.dtype());
  if (x.extent(1) != w.extent(1)) shape_error(op, x.ext, w.ext);
  if (w.extent(1) % ir::layout(w.dtype()).block_elems != 0)
    shape_error("octo::gemv/gemm: K is not a multiple of W's quantization block", w.ext);
}

template <class XD, class XE, class WD, class WE>
constexpr auto matmul(ir::opcode op, const tensor<XD, XE>& x, const tensor<WD, WE>& w, const std::int32_t* bias) {
  const char* what = op == ir::opcode::gemv_tile ? "octo::gemv: K mismatch: x is [rows, K] and W is [N, K]"
                                                 : "octo::gemm: K mismatch: x is [rows, K] and W is [N, K]";
  check_matmul_values(what, x, w);
  using result_extents = extents<XE::static_extent(0), WE::static_extent(0)>;
  const auto e = result_extents::from_values({x.extent(0), w.extent(0)});
  detail::op_params p;
  p.set(ir::param_key::K, w.extent(1));
  graph* g = owner_of("octo::gemv/gemm: operands from different graphs", x, w);
  if (bias) return make_op<f32>(g, op, {x.node, w.node, *bias}, p, ir::dtype::f32, e);
  return make_op<f32>(g, op, {x.node, w.node}, p, ir::dtype::f32, e);
}

template <class WE, class BD, class BE>
constexpr std::int32_t check_bias(const char* op, const tensor<BD, BE>& b, std::int64_t n, graph* g) {
  static_assert(BE::rank() == 1, "octo::gemv/gemm: bias must be rank 1 [N]");
  static_assert(bias_matches_n<WE, BE>::value, "octo::gemv/gemm: bias length differs from W's N");
  static_assert(is_float_dtype<BD>::value, "octo::gemv/gemm: bias must be float");
  check_float("octo::gemv/gemm: bias must be float", b.dtype());
  if (b.extent(0) != n) shape_error(op, b.ext);
  if (b.owner != g) graph_error("octo::gemv/gemm: operands from different graphs");
  return b.node;
}

}  // namespace detail

/// y[R,N] = x[R,K] @ W[N,K]^T, one token row or a few (decode). W is any float or block-quantized dtype.
/// @code
///   auto q = octo::gemv(x, wq);   // x: [1, 64] f32, wq: [128, 64] f16  ->  [1, 128] f32
/// @endcode
template <class XD, class XE, class WD, class WE>
constexpr auto gemv(const tensor<XD, XE>& x, const tensor<WD, WE>& w) {
  OCTO_MATMUL_STATIC_CHECKS("gemv");
  return detail::matmul(ir::opcode::gemv_tile, x, w, nullptr);
}
/// gemv with a bias[N] added (Qwen2's q/k/v projections).
template <class XD, class XE, class WD, class WE, class BD, class BE>
constexpr auto gemv(const tensor<XD, XE>& x, const tensor<WD, WE>& w, const tensor<BD, BE>& bias) {
  OCTO_MATMUL_STATIC_CHECKS("gemv");
  const auto b = detail::check_bias<WE>("octo::gemv: bias length differs from W's N", bias, w.extent(0), x.owner);
  return detail::matmul(ir::opcode::gemv_tile, x, w, &b);
}

/// y[M,N] = x[M,K] @ W[N,K]^T for many rows (prefill), tiled over rows and columns.
template <class XD, class XE, class WD, class WE>
constexpr auto gemm(const tensor<XD, XE>& x, const tensor<WD, WE>& w) {
  OCTO_MATMUL_STATIC_CHECKS("gemm");
  return detail::matmul(ir::opcode::gemm_tile, x, w, nullptr);
}
template <class XD, class XE, class WD, class WE, class BD, class BE>
constexpr auto gemm(const tensor<XD, XE>& x, const tensor<WD, WE>& w, const tensor<BD, BE>& bias) {
  OCTO_MATMUL_STATIC_CHECKS("gemm");
  const auto b = detail::check_bias<WE>("octo::gemm: bias length differs from W's N", bias, w.extent(0), x.owner);
  return detail::matmul(ir::opcode::gemm_tile, x, w, &b);
}

}  // namespace octo
