// octo::argmax: the greedy next token, index of each row's maximum (lowest index on ties) of logits
// [R, V]; lowers to SAMPLE_ARGMAX and yields i32 [R].
#pragma once

#include "octo/graph/op_support.hpp"

namespace octo {

template <class LD, class LE>
constexpr auto argmax(const tensor<LD, LE>& logits) {
  static_assert(LE::rank() == 2, "octo::argmax: logits must be [rows, vocab]");
  static_assert(detail::is_float_dtype<LD>::value, "octo::argmax: logits must be float");
  detail::check_float("octo::argmax: logits must be float", logits.dtype());
  using result_extents = extents<LE::static_extent(0)>;
  return detail::make_op<i32>(logits.owner, ir::opcode::sample_argmax, {logits.node}, detail::op_params{},
                              ir::dtype::i32, result_extents::from_values({logits.extent(0)}));
}

}  // namespace octo
