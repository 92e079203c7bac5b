// Shape checks shared by the reference op implementations (octo::ops::reference): each failed check
// is one octo::error naming the opcode, so a bad shape is a clear message and never out-of-bounds access.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "octo/error.hpp"

namespace octo::detail {

/// Throws octo::error("OP: what") unless `ok`.
inline void require(bool ok, std::string_view op, std::string_view what) {
  if (!ok) throw octo::error(std::string(op) + ": " + std::string(what));
}

/// A positive extent as a size_t, or an error naming `what`.
inline std::size_t positive_extent(std::int64_t v, std::string_view op, std::string_view what) {
  require(v > 0, op, std::string(what) + " must be positive, got " + std::to_string(v));
  return static_cast<std::size_t>(v);
}

/// `total / part`, requiring that `part` divides `total` exactly.
inline std::size_t exact_rows(std::size_t total, std::size_t part, std::string_view op, std::string_view what) {
  require(part > 0 && total % part == 0, op,
          std::string(what) + ": " + std::to_string(total) + " elements is not a multiple of " + std::to_string(part));
  return total / part;
}

}  // namespace octo::detail
