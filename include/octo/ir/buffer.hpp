// Buffer: a named tensor of the program (weights, activations, KV cache, IO, constants), docs/ir.md §1.2.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
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
  /// Dotted state-dict / GGUF key for WEIGHT and CONST; empty means none (JSON null). Several keys joined
  /// by '|' (lowering's composite weights, e.g. RMSNORM_GEMV_QKV's q|k|v bias): the buffer holds those
  /// tensors' elements one after another, all of one dtype (source_parts).
  text source;

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

/// The key a WEIGHT / CONST buffer's tensor is read by: its source, or its name where it has none.
constexpr std::string_view source_key(const buffer& b) { return b.source.view().empty() ? b.name.view() : b.source.view(); }

/// The tensor keys a weight's source names, in order: one, or a composite's parts (split at '|').
inline std::vector<std::string> source_parts(std::string_view source) {
  std::vector<std::string> parts;
  for (std::size_t at = 0;;) {
    const std::size_t bar = source.find('|', at);
    parts.emplace_back(source.substr(at, bar == std::string_view::npos ? std::string_view::npos : bar - at));
    if (bar == std::string_view::npos) return parts;
    at = bar + 1;
  }
}

}  // namespace octo::ir
