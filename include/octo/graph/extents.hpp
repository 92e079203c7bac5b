// Tensor extents that mix compile-time and run-time sizes (like std::extents / CuTe integers):
// `octo::extents<1, 64>{}` is fully static, `octo::extents<octo::dyn, 64>{T}` has one run-time extent.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "octo/error.hpp"

namespace octo {

/// The marker of an extent known only at run time (std::dynamic_extent's role).
inline constexpr std::int64_t dyn = -1;

namespace detail {
/// Raised while building a graph: a compile error in constant evaluation (the note names the call and
/// its message), an octo::error at run time.
[[noreturn]] inline void graph_error(const char* what) { throw octo::error(what); }
}  // namespace detail

/// Extents of a tensor, one per dimension; each is either a compile-time value or `dyn`.
/// All values are also stored, so `extent(i)` is one API for both kinds.
/// @code
///   octo::extents<1, 64> a;              // static [1, 64]
///   octo::extents<octo::dyn, 64> b{7};   // [7, 64], the 7 known at run time
///   octo::dextents<2> c{7, 64};          // all dynamic
/// @endcode
template <std::int64_t... E>
struct extents {
  static_assert(((E == dyn || E > 0) && ...), "octo::extents: a static extent must be positive (or octo::dyn)");
  static_assert(sizeof...(E) <= 4, "octo::extents: rank above 4 (the ABI's cap)");

  static constexpr std::size_t rank() { return sizeof...(E); }
  static constexpr std::size_t rank_dynamic() { return ((E == dyn ? 1u : 0u) + ... + 0u); }
  static constexpr std::array<std::int64_t, sizeof...(E)> static_values{E...};
  static constexpr std::int64_t static_extent(std::size_t i) { return static_values[i]; }
  static constexpr bool is_static() { return rank_dynamic() == 0; }

  std::array<std::int64_t, sizeof...(E)> values{E...};

  /// Static extents need no values. A default-constructed dynamic extent is unset (dyn) and is
  /// rejected where a graph takes it; it exists so handles can be declared before assignment.
  constexpr extents() = default;

  /// One value per dynamic extent, in order.
  template <class... I>
    requires(sizeof...(I) == rank_dynamic() && rank_dynamic() > 0 && (std::is_integral_v<I> && ...))
  constexpr extents(I... dynamic_values) {
    std::array<std::int64_t, sizeof...(I)> d{static_cast<std::int64_t>(dynamic_values)...};
    std::size_t k = 0;
    for (std::size_t i = 0; i < rank(); ++i)
      if (static_values[i] == dyn) {
        if (d[k] <= 0) detail::graph_error("octo::extents: a dynamic extent must be positive");
        values[i] = d[k++];
      }
  }

  /// All extents (static ones must agree); used to carry a result shape between ops.
  static constexpr extents from_values(const std::array<std::int64_t, sizeof...(E)>& all) {
    extents e;
    for (std::size_t i = 0; i < rank(); ++i) {
      if (all[i] <= 0) detail::graph_error("octo::extents: extents must be positive");
      if (static_values[i] != dyn && static_values[i] != all[i])
        detail::graph_error("octo::extents: a value disagrees with its static extent");
      e.values[i] = all[i];
    }
    return e;
  }

  constexpr std::int64_t extent(std::size_t i) const { return values[i]; }
  constexpr std::int64_t numel() const {
    std::int64_t n = 1;
    for (auto v : values) n *= v;
    return n;
  }
  /// Every extent is known (no default-constructed dynamic one).
  constexpr bool is_set() const {
    for (auto v : values)
      if (v <= 0) return false;
    return true;
  }
  friend constexpr bool operator==(const extents&, const extents&) = default;
};

namespace detail {
template <std::size_t R, class Seq = std::make_index_sequence<R>>
struct dextents_impl;
template <std::size_t R, std::size_t... I>
struct dextents_impl<R, std::index_sequence<I...>> {
  using type = extents<(static_cast<void>(I), dyn)...>;
};

template <class T>
struct is_extents : std::false_type {};
template <std::int64_t... E>
struct is_extents<extents<E...>> : std::true_type {};
}  // namespace detail

/// Rank-R extents, all dynamic.
template <std::size_t R>
using dextents = typename detail::dextents_impl<R>::type;

template <class T>
concept extents_type = detail::is_extents<T>::value;

}  // namespace octo
