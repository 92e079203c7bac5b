// KV_APPEND (opcode 16): writes this pass's new k or v rows into the persistent KV cache at pos.
// Reference semantics (docs/opcodes.md) for the CPU reference VM; rows outside the cache are an error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "octo/detail/quant_blocks.hpp"
#include "octo/detail/reference_checks.hpp"
#include "octo/ir/enums.hpp"

namespace octo::semantics {

/// kv_new [T, row] (f32), cache [S, row] of dtype `cache_dtype` as stored bytes (updated in place):
/// cache[pos + t] = kv_new[t], encoded as octo::detail::quantize_row does (F16/BF16 round to nearest
/// even; Q8_0 quantises each block of 32 along the row, so row must be a multiple of 32); pos + T > S
/// is an error.
inline void kv_append(std::span<const float> kv_new, std::span<std::byte> cache, ir::dtype cache_dtype,
                      std::int64_t row, std::int64_t pos) {
  constexpr const char* op = "KV_APPEND";
  const auto r = detail::positive_extent(row, op, "cache row length");
  const auto T = detail::exact_rows(kv_new.size(), r, op, "new k/v");
  detail::require(cache_dtype == ir::dtype::f32 || cache_dtype == ir::dtype::f16 || cache_dtype == ir::dtype::bf16 ||
                      cache_dtype == ir::dtype::q8_0,
                  op, detail::message("a KV cache of dtype ", ir::name(cache_dtype), " is not supported"));
  detail::require(cache_dtype != ir::dtype::q8_0 || r % 32 == 0, op,
                  detail::message("a Q8_0 cache needs its row length (", r, ") to be a multiple of 32"));
  const auto row_bytes = static_cast<std::size_t>(ir::nbytes(cache_dtype, static_cast<std::int64_t>(r)));
  detail::require(cache.size() % row_bytes == 0, op,
                  detail::message("the cache's ", cache.size(), " bytes are not whole rows of ", row_bytes, " bytes"));
  const std::size_t S = cache.size() / row_bytes;
  detail::require(pos >= 0 && static_cast<std::uint64_t>(pos) + T <= S, op,
                  detail::message("writing ", T, " rows at pos ", pos, " overflows the cache's ", S, " positions"));
  for (std::size_t t = 0; t < T; ++t)
    octo::detail::quantize_row(cache_dtype, kv_new.data() + t * r,
                               reinterpret_cast<std::uint8_t*>(cache.data()) + (static_cast<std::size_t>(pos) + t) * row_bytes,
                               static_cast<std::int64_t>(r));
}

}  // namespace octo::semantics
