// octo::embed: rows of an embedding table gathered by token id; lowered to an EMBED task.
// ids are i32 [T], the table is [V, H] (any weight dtype), the result f32 [T, H].
#pragma once

#include "octo/graph/op_support.hpp"

namespace octo {

/// @code
///   auto h = octo::embed(ids, g.weight<octo::f16>("token_embd.weight", octo::extents<512, 64>{}));
/// @endcode
template <class ID, class IE, class TD, class TE>
constexpr auto embed(const tensor<ID, IE>& ids, const tensor<TD, TE>& table) {
  static_assert(IE::rank() == 1, "octo::embed: ids must be rank 1 [T]");
  static_assert(TE::rank() == 2, "octo::embed: the table must be rank 2 [vocab, hidden]");
  static_assert(detail::is_index_dtype<ID>::value, "octo::embed: ids must be i32");
  static_assert(detail::is_weight_dtype<TD>::value, "octo::embed: the table must be a float or quantized weight");
  detail::check_index("octo::embed: ids must be i32", ids.dtype());
  detail::check_weight("octo::embed: the table must be a float or quantized weight", table.dtype());
  using result_extents = extents<IE::static_extent(0), TE::static_extent(1)>;
  detail::op_params p;
  p.set(ir::param_key::hidden, table.extent(1));
  return detail::make_op<f32>(detail::owner_of("octo::embed: operands from different graphs", ids, table),
                              ir::opcode::embed, {ids.node, table.node}, p, ir::dtype::f32,
                              result_extents::from_values({ids.extent(0), table.extent(1)}));
}

}  // namespace octo
