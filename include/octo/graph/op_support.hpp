// What every typed op shares: the compile-time shape traits its static_asserts name (so a failed check
// prints the op and both extents), the run-time shape error with the shapes spelled out, and node creation.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <type_traits>

#include "octo/detail/constexpr_text.hpp"
#include "octo/error.hpp"
#include "octo/graph/dtype.hpp"
#include "octo/graph/extents.hpp"
#include "octo/graph/graph.hpp"
#include "octo/graph/tensor.hpp"

namespace octo::detail {

/// True unless both extents are static and differ: a static mismatch is a compile error, a dynamic
/// one is checked when the graph is built.
constexpr bool may_equal(std::int64_t a, std::int64_t b) { return a == dyn || b == dyn || a == b; }

template <class E>
constexpr std::int64_t last_static() {
  return E::static_extent(E::rank() - 1);
}

template <class E>
constexpr ir::text shape_text(const E& e) {
  ir::text s("[");
  for (std::size_t i = 0; i < E::rank(); ++i) {
    if (i) s += ", ";
    s += to_text(e.extent(i)).view();
  }
  s += "]";
  return s;
}

/// A shape rule broken by run-time extents. In constant evaluation this is a compile error whose
/// notes show the call and `what`; at run time an octo::error naming the op and the shapes.
template <class... E>
constexpr void shape_error(const char* what, const E&... shapes) {
  if (std::is_constant_evaluated()) graph_error(what);
  ir::text m(what);
  m += " (shapes:";
  ((m += " ", m += shape_text(shapes).view()), ...);
  m += ")";
  throw octo::error(m.str());
}

/// Every operand belongs to one graph; returns it.
template <class T0, class... T>
constexpr graph* owner_of(const char* op, const T0& t0, const T&... ts) {
  if (t0.owner == nullptr || ((ts.owner != t0.owner) || ...)) graph_error(op);
  return t0.owner;
}

/// Appends an op node producing `Result` extents `e`; returns its handle.
template <class DType, class Extents>
constexpr tensor<DType, Extents> make_op(graph* g, ir::opcode op, std::initializer_list<std::int32_t> inputs,
                                         const op_params& params, ir::dtype dt, const Extents& e,
                                         std::int32_t in_place = -1) {
  std::array<std::int64_t, ir::abi_max_rank> shape{};
  for (std::size_t i = 0; i < Extents::rank(); ++i) shape[i] = e.extent(i);
  const auto id = g->add_op(op, inputs, params, dt, shape.data(), static_cast<std::int32_t>(Extents::rank()),
                            in_place);
  return tensor<DType, Extents>{g, id, e, dt};
}

/// Run-time dtype class checks, for any_dtype operands.
constexpr void check_float(const char* what, ir::dtype d) {
  if (!ir::is_float(d)) graph_error(what);
}
constexpr void check_index(const char* what, ir::dtype d) {
  if (d != ir::dtype::i32) graph_error(what);
}
constexpr void check_weight(const char* what, ir::dtype d) {
  if (!is_weight_code(d)) graph_error(what);
}

// ---- named compile-time rules (each failure note prints these with the extents) ----------------------
template <class E, std::size_t R>
struct has_rank {
  // a member, not a base: the failure note then names this trait and its extents
  static constexpr bool value = E::rank() == R;
};
template <class A, class B>
struct same_extents {
  // a member, not a base: the failure note then names this trait and its extents
  static constexpr bool value = A::rank() == B::rank() && [] {
  for (std::size_t i = 0; i < A::rank(); ++i)
    if (!may_equal(A::static_extent(i), B::static_extent(std::min(i, B::rank() - 1)))) return false;
  return true;
}();
};

}  // namespace octo::detail
