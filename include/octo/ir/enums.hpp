// The IR's enumerations with their canonical numeric codes (docs/ir.md §1.1), their names for JSON, and
// element sizes. Codes are never renumbered; new values are appended.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "octo/ir/opcode_table.hpp"

namespace octo::ir {

/// Element types. Codes 0..9 are the IR's own (docs/ir.md §1.1); 10.. are appended for GGUF block-quantized weights,
/// which the VM keeps quantized and dequantizes inside its kernels.
enum class dtype : std::uint8_t {
  f32 = 0, f16 = 1, bf16 = 2, f8e4m3 = 3, f8e5m2 = 4, i32 = 5, i8 = 6,
  i4 = 7,  // packed 4-bit, two per byte, low nibble first
  u8 = 8, boolean = 9,
  q8_0 = 10, q4_0 = 11, q4_1 = 12, q5_0 = 13, q5_1 = 14,
  q2_k = 15, q3_k = 16, q4_k = 17, q5_k = 18, q6_k = 19,
  iq4_nl = 20, iq4_xs = 21,  // 4-bit indices into a fixed non-linear table (ggml's kvalues_iq4nl)
};
inline constexpr int dtype_count = 22;

enum class mem_space : std::uint8_t { hbm = 0, global_scratch = 1, smem = 2, reg = 3 };
inline constexpr int mem_space_count = 4;

enum class buffer_kind : std::uint8_t {
  weight = 0, activation = 1, kv_cache = 2, io_input = 3, io_output = 4, constant = 5,
};
inline constexpr int buffer_kind_count = 6;

/// The opcodes (docs/ir.md §7), one per row of OCTO_OPCODE_TABLE (opcode_table.hpp).
enum class opcode : std::uint8_t {
#define OCTO_OPCODE_ENUMERATOR(id, code, ...) id = code,
  OCTO_OPCODE_TABLE(OCTO_OPCODE_ENUMERATOR)
#undef OCTO_OPCODE_ENUMERATOR
};
#define OCTO_OPCODE_ONE(...) +1
inline constexpr int opcode_count = 0 OCTO_OPCODE_TABLE(OCTO_OPCODE_ONE);
#undef OCTO_OPCODE_ONE

/// Read-only kinds never need a producer edge to be read (docs/ir.md §1.1, _READONLY_KINDS).
constexpr bool is_read_only(buffer_kind k) {
  return k == buffer_kind::weight || k == buffer_kind::constant || k == buffer_kind::io_input;
}

// ---- names (JSON encodes enums by name) -------------------------------------------------------

inline constexpr std::array<std::string_view, dtype_count> dtype_names{
    "F32", "F16", "BF16", "F8E4M3", "F8E5M2", "I32", "I8", "I4", "U8", "BOOL",
    "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K",
    "IQ4_NL", "IQ4_XS"};
inline constexpr std::array<std::string_view, mem_space_count> mem_space_names{
    "HBM", "GLOBAL_SCRATCH", "SMEM", "REGISTER"};
inline constexpr std::array<std::string_view, buffer_kind_count> buffer_kind_names{
    "WEIGHT", "ACTIVATION", "KV_CACHE", "IO_INPUT", "IO_OUTPUT", "CONST"};
inline constexpr std::array<std::string_view, opcode_count> opcode_names{
#define OCTO_OPCODE_NAME(id, code, name, ...) name,
    OCTO_OPCODE_TABLE(OCTO_OPCODE_NAME)
#undef OCTO_OPCODE_NAME
};

namespace detail {
template <class E, std::size_t N>
constexpr std::string_view enum_name(E e, const std::array<std::string_view, N>& names) {
  auto i = static_cast<std::size_t>(e);
  return i < N ? names[i] : std::string_view{"?"};
}
template <class E, std::size_t N>
constexpr std::optional<E> enum_parse(std::string_view s, const std::array<std::string_view, N>& names) {
  for (std::size_t i = 0; i < N; ++i)
    if (names[i] == s) return static_cast<E>(i);
  return std::nullopt;
}
}  // namespace detail

constexpr std::string_view name(dtype e) { return detail::enum_name(e, dtype_names); }
constexpr std::string_view name(mem_space e) { return detail::enum_name(e, mem_space_names); }
constexpr std::string_view name(buffer_kind e) { return detail::enum_name(e, buffer_kind_names); }
constexpr std::string_view name(opcode e) { return detail::enum_name(e, opcode_names); }

template <class E> constexpr std::optional<E> parse(std::string_view s);
template <> constexpr std::optional<dtype> parse<dtype>(std::string_view s) {
  return detail::enum_parse<dtype>(s, dtype_names);
}
template <> constexpr std::optional<mem_space> parse<mem_space>(std::string_view s) {
  return detail::enum_parse<mem_space>(s, mem_space_names);
}
template <> constexpr std::optional<buffer_kind> parse<buffer_kind>(std::string_view s) {
  return detail::enum_parse<buffer_kind>(s, buffer_kind_names);
}
template <> constexpr std::optional<opcode> parse<opcode>(std::string_view s) {
  return detail::enum_parse<opcode>(s, opcode_names);
}

// ---- element sizes -------------------------------------------------------------------------------

/// Block layout of a dtype: `block_elems` elements occupy `block_bytes` bytes. Plain types have
/// block_elems == 1 except I4, whose two elements share one byte.
struct dtype_layout {
  int block_elems;
  int block_bytes;
};

constexpr dtype_layout layout(dtype t) {
  switch (t) {
    case dtype::f32: case dtype::i32: return {1, 4};
    case dtype::f16: case dtype::bf16: return {1, 2};
    case dtype::f8e4m3: case dtype::f8e5m2: case dtype::i8: case dtype::u8: case dtype::boolean:
      return {1, 1};
    case dtype::i4: return {2, 1};
    // GGUF block formats (ggml-common.h layouts).
    case dtype::q8_0: return {32, 34};
    case dtype::q4_0: return {32, 18};
    case dtype::q4_1: return {32, 20};
    case dtype::q5_0: return {32, 22};
    case dtype::q5_1: return {32, 24};
    case dtype::q2_k: return {256, 84};
    case dtype::q3_k: return {256, 110};
    case dtype::q4_k: return {256, 144};
    case dtype::q5_k: return {256, 176};
    case dtype::q6_k: return {256, 210};
    case dtype::iq4_nl: return {32, 18};
    case dtype::iq4_xs: return {256, 136};
  }
  return {1, 0};
}

/// Bits per element (fractional for block formats is rounded down; use nbytes for sizes).
constexpr int bits(dtype t) {
  auto l = layout(t);
  return l.block_bytes * 8 / l.block_elems;
}

/// Bytes for `count` elements: ceil for sub-byte packed and block types (docs/ir.md §1.1).
constexpr std::int64_t nbytes(dtype t, std::int64_t count) {
  auto l = layout(t);
  return (count + l.block_elems - 1) / l.block_elems * l.block_bytes;
}

constexpr bool is_block_quantized(dtype t) { return static_cast<int>(t) >= static_cast<int>(dtype::q8_0); }
constexpr bool is_float(dtype t) {
  return t == dtype::f32 || t == dtype::f16 || t == dtype::bf16 || t == dtype::f8e4m3 || t == dtype::f8e5m2;
}

}  // namespace octo::ir
