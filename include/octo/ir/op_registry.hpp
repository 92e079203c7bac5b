// OP_REGISTRY: each opcode's arity and the params that make it mathematically well defined (docs/ir.md
// §7), expanded from OCTO_OPCODE_TABLE; by_opcode, which checks each layer's per-opcode table against it.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <iterator>
#include <string_view>
#include <utility>

#include "octo/ir/enums.hpp"
#include "octo/ir/param_fields.hpp"

namespace octo::ir {

inline constexpr int max_required_params = 6;

struct op_spec {
  opcode kind;
  int min_inputs;
  int max_inputs;  // capped by abi_max_inputs
  int n_outputs;
  std::array<param_key, max_required_params> required{};
  int n_required = 0;
  std::string_view note;
};

namespace detail {
template <class... K>
constexpr op_spec make_spec(opcode op, int lo, int hi, int outs, std::string_view note, K... keys) {
  op_spec s{op, lo, hi, outs, {}, 0, note};
  ((s.required[static_cast<std::size_t>(s.n_required++)] = keys), ...);
  return s;
}
}  // namespace detail

inline constexpr std::array<op_spec, opcode_count> op_registry{{
#define OCTO_OPCODE_SPEC(id, code, name, ...) detail::make_spec(opcode::id, __VA_ARGS__),
    OCTO_OPCODE_TABLE(OCTO_OPCODE_SPEC)
#undef OCTO_OPCODE_SPEC
}};

constexpr const op_spec& spec(opcode op) { return op_registry[static_cast<std::size_t>(op)]; }

static_assert([] {
  for (std::size_t i = 0; i < op_registry.size(); ++i)
    if (static_cast<std::size_t>(op_registry[i].kind) != i) return false;
  return true;
}(), "OCTO_OPCODE_TABLE: the codes must be 0, 1, 2, ... in row order (append; never renumber)");

namespace detail {
template <opcode Op, const auto& Rows>
consteval std::size_t row_index() {
  constexpr auto rows_for_op = std::ranges::count_if(Rows, [](const auto& r) { return r.op == Op; });
  // The compiler's "[with ... Op = octo::ir::opcode::<name>; ... Rows = <table>]" line names both.
  static_assert(rows_for_op == 1, "a per-opcode table (Rows) lacks the row of an opcode (Op), or has two: "
                                  "see opcode_table.hpp, 'How to add an opcode'");
  return static_cast<std::size_t>(std::ranges::find_if(Rows, [](const auto& r) { return r.op == Op; }) -
                                  std::ranges::begin(Rows));
}
}  // namespace detail

/// A layer's per-opcode table (`Rows`: a constexpr array of rows, each with an `op` member) reordered
/// into a std::array indexed by opcode. Every opcode must have exactly one row, or the build fails
/// naming the opcode and the table: this is how the reference VM, the Vulkan planners and the graph
/// DSL are held to OCTO_OPCODE_TABLE.
/// @code
///   constexpr row rows[] = {{opcode::nop, run_nop}, {opcode::copy, run_copy}, ...};
///   constexpr auto table = ir::by_opcode<rows>();  // table[size_t(op)].run
/// @endcode
template <const auto& Rows>
consteval auto by_opcode() {
  return []<std::size_t... I>(std::index_sequence<I...>) {
    return std::array{Rows[detail::row_index<static_cast<opcode>(I), Rows>()]...};
  }(std::make_index_sequence<opcode_count>{});
}

}  // namespace octo::ir
