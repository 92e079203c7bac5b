// DEQUANT (opcode 13): int8 or packed int4 values with per-group scales (and optional zero points) to
// float, y[i] = (q[i] - zero[g]) * scale[g], g = i / group. Reference semantics (docs/opcodes.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "octo/detail/element_convert.hpp"
#include "octo/detail/reference_checks.hpp"
#include "octo/ir/enums.hpp"

namespace octo::semantics {

/// q: y.size() elements of dtype qdtype (I8, or I4 with two signed nibbles per byte, element 2k in the
/// low nibble); scales and zero (empty = no zero point) have ceil(numel / group) entries.
inline void dequant(std::span<const std::byte> q, ir::dtype qdtype, std::span<const float> scales,
                    std::span<const float> zero, std::span<float> y, std::int64_t group) {
  constexpr const char* op = "DEQUANT";
  detail::require(qdtype == ir::dtype::i8 || qdtype == ir::dtype::i4, op,
                  detail::message("qdtype must be I8 (6) or I4 (7), got ", ir::name(qdtype)));
  const auto g = detail::positive_extent(group, op, "group");
  const auto n = y.size();
  const std::size_t n_groups = (n + g - 1) / g;
  detail::require(static_cast<std::int64_t>(q.size()) == ir::nbytes(qdtype, static_cast<std::int64_t>(n)), op,
                  "quantized input must hold exactly numel elements of qdtype");
  detail::require(scales.size() == n_groups, op,
                  detail::message("scales must have numel/group = ", n_groups, " entries"));
  detail::require(zero.empty() || zero.size() == n_groups, op, "zero points must have one entry per group");
  for (std::size_t i = 0; i < n; ++i) {
    const auto k = static_cast<std::int64_t>(i);
    const float v = qdtype == ir::dtype::i8 ? static_cast<float>(static_cast<std::int8_t>(q[i]))
                                            : static_cast<float>(detail::i4_get(q.data(), k));
    y[i] = (v - (zero.empty() ? 0.0f : zero[i / g])) * scales[i / g];
  }
}

}  // namespace octo::semantics
