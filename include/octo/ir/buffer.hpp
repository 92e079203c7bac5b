// Buffer: a named tensor of the program (weights, activations, KV cache, IO, constants), docs/ir.md §1.2.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "octo/ir/enums.hpp"
#include "octo/ir/small_vector.hpp"
#include "octo/ir/text.hpp"
#include "octo/ir/version.hpp"

namespace octo::ir {

/// Extents, inline up to the ABI's rank cap.
using shape_t = small_vector<std::int64_t, abi_max_rank>;

struct buffer {
  std::int32_t id = 0;
  text name;
  buffer_kind kind = buffer_kind::activation;
  ir::dtype dtype = ir::dtype::f32;
  shape_t shape;
  mem_space space = mem_space::hbm;
  text source;  // dotted state-dict / GGUF key for WEIGHT and CONST; empty means none (JSON null)

  constexpr std::int64_t numel() const {
    std::int64_t n = 1;
    for (auto e : shape) n *= e;
    return n;
  }
  constexpr std::int64_t nbytes() const { return ir::nbytes(dtype, numel()); }
  /// Row-major element strides (the ABI's amk_buffer_t.stride).
  constexpr std::vector<std::int64_t> contiguous_strides() const {
    std::vector<std::int64_t> s(shape.size(), 1);
    for (std::size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
    return s;
  }
  friend constexpr bool operator==(const buffer&, const buffer&) = default;
};

}  // namespace octo::ir
