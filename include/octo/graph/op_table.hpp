// The typed ops as heterogeneous compile-time data (Boost.Hana): each op's name, opcode and the input
// counts it lowers with, checked against the IR's OP_REGISTRY arity. A dozen entries, never a node store.
#pragma once

#include <boost/hana/for_each.hpp>
#include <boost/hana/tuple.hpp>

#include <string_view>
#include <type_traits>

#include "octo/ir/op_registry.hpp"

namespace octo::detail {

/// One typed op: `Op` is its opcode, `Lo..Hi` the inputs its lowering gives a task.
template <ir::opcode Op, int Lo, int Hi>
struct typed_op {
  std::string_view name;
  static constexpr ir::opcode opcode = Op;
  static constexpr int min_inputs = Lo, max_inputs = Hi;
};

inline constexpr auto op_table = boost::hana::make_tuple(
    typed_op<ir::opcode::embed, 2, 2>{"octo::embed"}, typed_op<ir::opcode::rmsnorm, 2, 2>{"octo::rmsnorm"},
    typed_op<ir::opcode::rmsnorm, 2, 2>{"octo::head_rmsnorm"}, typed_op<ir::opcode::layernorm, 3, 3>{"octo::layernorm"},
    typed_op<ir::opcode::gemv_tile, 2, 3>{"octo::gemv"}, typed_op<ir::opcode::gemm_tile, 2, 3>{"octo::gemm"},
    typed_op<ir::opcode::rope, 2, 2>{"octo::rope"}, typed_op<ir::opcode::kv_append, 2, 2>{"octo::kv_append"},
    typed_op<ir::opcode::attention_tile, 3, 3>{"octo::attention"}, typed_op<ir::opcode::silu_mul, 2, 2>{"octo::silu_mul"},
    typed_op<ir::opcode::add, 2, 2>{"octo::add"}, typed_op<ir::opcode::mul, 2, 2>{"octo::mul"},
    typed_op<ir::opcode::mul, 1, 1>{"octo::scale"}, typed_op<ir::opcode::gelu, 1, 1>{"octo::gelu"},
    typed_op<ir::opcode::softmax, 1, 1>{"octo::softmax"}, typed_op<ir::opcode::sample_argmax, 1, 1>{"octo::argmax"});

/// Every typed op lowers within its opcode's registered arity.
constexpr bool op_table_matches_registry() {
  bool ok = true;
  boost::hana::for_each(op_table, [&](const auto& op) {
    using T = std::remove_cvref_t<decltype(op)>;
    const auto& spec = ir::spec(T::opcode);
    ok = ok && spec.min_inputs <= T::min_inputs && T::max_inputs <= spec.max_inputs && spec.n_outputs == 1;
  });
  return ok;
}
static_assert(op_table_matches_registry(), "octo::graph: a typed op lowers outside its opcode's arity");

}  // namespace octo::detail
