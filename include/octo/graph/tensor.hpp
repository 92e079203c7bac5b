// tensor<DType, Extents>: a typed handle to one node of an octo::graph. A small value (graph pointer,
// node index, extents); the dtype and the static extents live in the type, so shape rules are checked
// at compile time where they are known.
#pragma once

#include <cstdint>
#include <string_view>

#include "octo/graph/dtype.hpp"
#include "octo/graph/extents.hpp"
#include "octo/ir/enums.hpp"

namespace octo {

class graph;

/// A typed handle to a graph node. Valid while its graph lives at the same address.
/// @code
///   octo::graph g;
///   auto x = g.input<octo::f32>("x", octo::extents<1, 64>{});   // tensor<f32, extents<1, 64>>
///   x.extent(1);                                              // 64
/// @endcode
template <class DType, class Extents>
struct tensor {
  using dtype_type = DType;
  using extents_type = Extents;

  graph* owner = nullptr;
  std::int32_t node = -1;
  Extents ext{};
  ir::dtype dt = ir::dtype::f32;  // equal to DType::code unless DType is any_dtype

  static constexpr std::size_t rank() { return Extents::rank(); }
  constexpr std::int64_t extent(std::size_t i) const { return ext.extent(i); }
  constexpr std::int64_t numel() const { return ext.numel(); }
  constexpr ir::dtype dtype() const { return dt; }

  /// Names the node (its buffer and tasks carry the name); returns the handle for chaining.
  constexpr tensor named(std::string_view name) const;
};

namespace detail {
template <class T>
struct is_tensor : std::false_type {};
template <class D, class E>
struct is_tensor<tensor<D, E>> : std::true_type {};
}  // namespace detail

template <class T>
concept tensor_type = detail::is_tensor<T>::value;

}  // namespace octo
