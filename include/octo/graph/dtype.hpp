// Element-type tags for typed tensors (`octo::f32`, `octo::f16`, `octo::q4_k`, ...) and the dtype classes
// the ops check against. `octo::any_dtype` is the run-time dtype, checked when the graph is built.
#pragma once

#include <type_traits>

#include "octo/ir/enums.hpp"

namespace octo {

/// A dtype known at compile time. Each tag is its own struct so diagnostics print `octo::f16`.
template <ir::dtype D>
struct dtype_tag {
  static constexpr ir::dtype code = D;
  static constexpr bool is_dynamic = false;
};

struct f32 : dtype_tag<ir::dtype::f32> {};
struct f16 : dtype_tag<ir::dtype::f16> {};
struct bf16 : dtype_tag<ir::dtype::bf16> {};
struct f8e4m3 : dtype_tag<ir::dtype::f8e4m3> {};
struct f8e5m2 : dtype_tag<ir::dtype::f8e5m2> {};
struct i32 : dtype_tag<ir::dtype::i32> {};
struct i8 : dtype_tag<ir::dtype::i8> {};
struct i4 : dtype_tag<ir::dtype::i4> {};
struct u8 : dtype_tag<ir::dtype::u8> {};
struct q8_0 : dtype_tag<ir::dtype::q8_0> {};
struct q4_0 : dtype_tag<ir::dtype::q4_0> {};
struct q4_1 : dtype_tag<ir::dtype::q4_1> {};
struct q5_0 : dtype_tag<ir::dtype::q5_0> {};
struct q5_1 : dtype_tag<ir::dtype::q5_1> {};
struct q2_k : dtype_tag<ir::dtype::q2_k> {};
struct q3_k : dtype_tag<ir::dtype::q3_k> {};
struct q4_k : dtype_tag<ir::dtype::q4_k> {};
struct q5_k : dtype_tag<ir::dtype::q5_k> {};
struct q6_k : dtype_tag<ir::dtype::q6_k> {};
struct iq4_nl : dtype_tag<ir::dtype::iq4_nl> {};
struct iq4_xs : dtype_tag<ir::dtype::iq4_xs> {};

/// The dtype of a tensor whose element type is a run-time value (e.g. read from a GGUF file).
struct any_dtype {
  static constexpr bool is_dynamic = true;
  static constexpr ir::dtype code = ir::dtype::f32;  // unused: every check on it is a run-time check
};

template <class T>
concept dtype_type = requires {
  { T::is_dynamic } -> std::convertible_to<bool>;
};

namespace detail {
// Named traits, so a failed static_assert's note reads `octo::detail::is_float_dtype<octo::q4_k>::value`.
template <class D>
struct is_float_dtype {
  // a member, not a base: the failure note then names this trait and its extents
  static constexpr bool value = D::is_dynamic || ir::is_float(D::code);
};
template <class D>
struct is_index_dtype {
  // a member, not a base: the failure note then names this trait and its extents
  static constexpr bool value = D::is_dynamic || D::code == ir::dtype::i32;
};
/// Weights: float or block-quantized (dequantized inside the kernel).
template <class D>
struct is_weight_dtype {
  // a member, not a base: the failure note then names this trait and its extents
  static constexpr bool value = D::is_dynamic || ir::is_float(D::code) || ir::is_block_quantized(D::code);
};

constexpr bool is_weight_code(ir::dtype d) { return ir::is_float(d) || ir::is_block_quantized(d); }
}  // namespace detail

}  // namespace octo
