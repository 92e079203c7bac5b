// Element-wise ops: octo::add, octo::mul (b broadcasts over rows), octo::scale, octo::silu_mul,
// octo::gelu and octo::softmax (over the last extent). Each lowers to one task of its opcode.
#pragma once

#include "octo/graph/op_support.hpp"

namespace octo {
namespace detail {
/// b has a's extents, or is one row [H] broadcast over a's rows.
template <class A, class B>
struct broadcasts_to {
  // a member, not a base: the failure note then names this trait and its extents
  static constexpr bool value = (B::rank() == A::rank() && same_extents<A, B>::value) ||
                         (B::rank() == 1 && may_equal(last_static<A>(), B::static_extent(0)));
};

template <class AE, class BE, class AD, class BD>
constexpr bool runtime_broadcasts(const tensor<AD, AE>& a, const tensor<BD, BE>& b) {
  if constexpr (BE::rank() == AE::rank()) {
    for (std::size_t i = 0; i < AE::rank(); ++i)
      if (a.extent(i) != b.extent(i)) return false;
    return true;
  } else {
    return BE::rank() == 1 && b.extent(0) == a.extent(AE::rank() - 1);
  }
}

template <class AD, class AE, class... T>
constexpr auto pointwise(ir::opcode op, const char* who, op_params params, const tensor<AD, AE>& a,
                         const T&... rest) {
  check_float(who, a.dtype());
  (check_float(who, rest.dtype()), ...);
  return make_op<f32>(owner_of(who, a, rest...), op, {a.node, rest.node...}, params, ir::dtype::f32,
                      a.ext);
}
}  // namespace detail

#define OCTO_BINARY_STATIC_CHECKS(OP)                                                                   \
  static_assert(detail::is_float_dtype<AD>::value && detail::is_float_dtype<BD>::value,               \
                "octo::" OP ": operands must be float");                                               \
  static_assert(detail::broadcasts_to<AE, BE>::value,                                                  \
                "octo::" OP ": b must have a's extents, or be one row [H] broadcast over a's rows")

/// y = a + b (the residual add); b has a's extents or is a row [H] broadcast over a's rows.
template <class AD, class AE, class BD, class BE>
constexpr auto add(const tensor<AD, AE>& a, const tensor<BD, BE>& b) {
  OCTO_BINARY_STATIC_CHECKS("add");
  if (!detail::runtime_broadcasts(a, b))
    detail::shape_error("octo::add: b must have a's extents, or be one row [H] broadcast over a's rows", a.ext, b.ext);
  return detail::pointwise(ir::opcode::add, "octo::add: operands must be float tensors of one graph", {}, a, b);
}

/// y = a * b, broadcast as in add.
template <class AD, class AE, class BD, class BE>
constexpr auto mul(const tensor<AD, AE>& a, const tensor<BD, BE>& b) {
  OCTO_BINARY_STATIC_CHECKS("mul");
  if (!detail::runtime_broadcasts(a, b))
    detail::shape_error("octo::mul: b must have a's extents, or be one row [H] broadcast over a's rows", a.ext, b.ext);
  return detail::pointwise(ir::opcode::mul, "octo::mul: operands must be float tensors of one graph", {}, a, b);
}

/// y = alpha * a (MUL with one input).
template <class AD, class AE>
constexpr auto scale(const tensor<AD, AE>& a, double alpha) {
  static_assert(detail::is_float_dtype<AD>::value, "octo::scale: a must be float");
  detail::op_params p;
  p.set_real(ir::param_key::alpha, alpha);
  return detail::pointwise(ir::opcode::mul, "octo::scale: a must be a float tensor", p, a);
}

/// y = silu(gate) * up (SwiGLU); gate and up have equal extents.
template <class AD, class AE, class BD, class BE>
constexpr auto silu_mul(const tensor<AD, AE>& gate, const tensor<BD, BE>& up) {
  static_assert(detail::is_float_dtype<AD>::value && detail::is_float_dtype<BD>::value,
                "octo::silu_mul: gate and up must be float");
  static_assert(AE::rank() == BE::rank() && detail::same_extents<AE, BE>::value,
                "octo::silu_mul: gate and up must have equal extents");
  if (gate.numel() != up.numel() || !detail::runtime_broadcasts(gate, up))
    detail::shape_error("octo::silu_mul: gate and up must have equal extents", gate.ext, up.ext);
  return detail::pointwise(ir::opcode::silu_mul, "octo::silu_mul: operands must be float tensors of one graph", {},
                           gate, up);
}

/// y = 0.5 x (1 + erf(x / sqrt 2)).
template <class AD, class AE>
constexpr auto gelu(const tensor<AD, AE>& x) {
  static_assert(detail::is_float_dtype<AD>::value, "octo::gelu: x must be float");
  return detail::pointwise(ir::opcode::gelu, "octo::gelu: x must be a float tensor", {}, x);
}

/// Softmax over the last extent of each row.
template <class AD, class AE>
constexpr auto softmax(const tensor<AD, AE>& x) {
  static_assert(detail::is_float_dtype<AD>::value, "octo::softmax: x must be float");
  detail::op_params p;
  p.set(ir::param_key::dim, x.extent(AE::rank() - 1));
  return detail::pointwise(ir::opcode::softmax, "octo::softmax: x must be a float tensor", p, x);
}

}  // namespace octo
