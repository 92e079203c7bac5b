// COPY (opcode 1): y = x, a page-to-page move; any dtype conversion happens when the VM stores y.
// Reference semantics (docs/opcodes.md) for the CPU reference VM.
#pragma once

#include <span>

#include "octo/detail/reference_checks.hpp"

namespace octo::semantics {

/// y = x (same number of elements).
inline void copy(std::span<const float> x, std::span<float> y) {
  detail::require(x.size() == y.size(), "COPY", "input and output element counts differ");
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = x[i];
}

}  // namespace octo::semantics
