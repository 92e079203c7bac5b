// Shape checks shared by the reference op implementations (octo::semantics): each failed check
// is one octo::error naming the opcode, so a bad shape is a clear message and never out-of-bounds access.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "octo/error.hpp"

namespace octo::detail {

/// Concatenates text and numbers by appending, never `"literal" + std::string&&` (which g++ 12 at -O3
/// flags with a false -Wstringop-overflow inside string::insert).
template <class... Parts>
std::string message(const Parts&... parts) {
  std::string s;
  auto add = [&s](const auto& p) {
    using P = std::remove_cvref_t<decltype(p)>;
    if constexpr (std::is_arithmetic_v<P>)
      s += std::to_string(p);
    else
      s += std::string_view(p);
  };
  (add(parts), ...);
  return s;
}

/// Throws octo::error("OP: what") unless `ok`.
inline void require(bool ok, std::string_view op, std::string_view what) {
  if (!ok) throw octo::error(message(op, ": ", what));
}

/// A positive extent as a size_t, or an error naming `what`.
inline std::size_t positive_extent(std::int64_t v, std::string_view op, std::string_view what) {
  require(v > 0, op, message(what, " must be positive, got ", v));
  return static_cast<std::size_t>(v);
}

/// `total / part`, requiring that `part` divides `total` exactly.
inline std::size_t exact_rows(std::size_t total, std::size_t part, std::string_view op, std::string_view what) {
  require(part > 0 && total % part == 0, op,
          message(what, ": ", total, " elements is not a multiple of ", part));
  return total / part;
}

}  // namespace octo::detail
