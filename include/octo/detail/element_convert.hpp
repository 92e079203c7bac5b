// Exact element conversions between the IR's plain dtypes and float: f16 / bf16 / fp8 with
// round-to-nearest-even, packed I4 nibbles, integers. The reference VM reads every buffer through these.
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>

#include "octo/error.hpp"
#include "octo/ir/enums.hpp"

namespace octo::detail {

// ---- f16 ----------------------------------------------------------------------------------------

/// float -> IEEE binary16 bits, round to nearest even; overflow gives inf, NaN stays a quiet NaN.
constexpr std::uint16_t f32_to_f16(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t exp = (x >> 23) & 0xffu;
  std::uint32_t man = x & 0x7fffffu;
  if (exp == 0xffu) return static_cast<std::uint16_t>(man == 0 ? (sign | 0x7c00u) : (sign | 0x7e00u | (man >> 13)));
  const int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 31) return static_cast<std::uint16_t>(sign | 0x7c00u);
  if (e <= 0) {
    // Result is subnormal (or zero): the f16 mantissa is value / 2^-24.
    if (e < -10) return static_cast<std::uint16_t>(sign);
    man |= 0x800000u;
    const int shift = 14 - e;  // 14..24
    std::uint32_t h = man >> shift;
    const std::uint32_t rem = man & ((1u << shift) - 1u);
    const std::uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (h & 1u))) ++h;  // may carry into the smallest normal: correct
    return static_cast<std::uint16_t>(sign | h);
  }
  std::uint32_t h = sign | (static_cast<std::uint32_t>(e) << 10) | (man >> 13);
  const std::uint32_t rem = man & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry rolls into the exponent, up to inf
  return static_cast<std::uint16_t>(h);
}

/// IEEE binary16 bits -> float (exact).
constexpr float f16_to_f32(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t man = h & 0x3ffu;
  if (exp == 0) {
    const float v = static_cast<float>(man) * 5.9604644775390625e-8f;  // man * 2^-24, exact
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (man << 13));
  return std::bit_cast<float>(sign | ((exp - 15 + 127) << 23) | (man << 13));
}

// ---- bf16 ---------------------------------------------------------------------------------------

/// float -> bfloat16 bits, round to nearest even; NaN stays a quiet NaN.
constexpr std::uint16_t f32_to_bf16(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);
  const std::uint32_t rounded = x + 0x7fffu + ((x >> 16) & 1u);
  return static_cast<std::uint16_t>(rounded >> 16);
}

constexpr float bf16_to_f32(std::uint16_t b) { return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16); }

// ---- fp8 (OCP E4M3FN: no inf, NaN = S.1111.111; E5M2: IEEE-like) -------------------------------

constexpr float f8_to_f32(std::uint8_t v, ir::dtype t) {
  const bool e4m3 = t == ir::dtype::f8e4m3;
  const int man_bits = e4m3 ? 3 : 2;
  const int bias = e4m3 ? 7 : 15;
  const int exp = (v & 0x7f) >> man_bits;
  const int man = v & ((1 << man_bits) - 1);
  const bool neg = (v & 0x80) != 0;
  float r = 0.0f;
  if (e4m3 && exp == 15 && man == 7) return std::numeric_limits<float>::quiet_NaN();
  if (!e4m3 && exp == 31) {
    if (man != 0) return std::numeric_limits<float>::quiet_NaN();
    r = std::numeric_limits<float>::infinity();
  } else {
    // value = (exp ? 1.man : 0.man) * 2^(max(exp,1) - bias); build it with exact multiplications.
    float scale = 1.0f;
    int p = (exp == 0 ? 1 : exp) - bias - man_bits;
    for (; p > 0; --p) scale *= 2.0f;
    for (; p < 0; ++p) scale *= 0.5f;
    r = static_cast<float>((exp == 0 ? 0 : (1 << man_bits)) + man) * scale;
  }
  return neg ? -r : r;
}

/// float -> fp8 by searching the code table for the nearest value (ties to the even code), which is
/// obviously right and fast enough for a reference. E4M3FN saturates to ±448; E5M2 overflows to inf.
constexpr std::uint8_t f32_to_f8(float f, ir::dtype t) {
  const bool e4m3 = t == ir::dtype::f8e4m3;
  if (f != f) return e4m3 ? 0x7f : 0x7e;
  const std::uint8_t sign = std::bit_cast<std::uint32_t>(f) >> 31 ? 0x80 : 0x00;
  const double a = f < 0 ? -static_cast<double>(f) : static_cast<double>(f);
  if (!e4m3 && a >= 61440.0) return static_cast<std::uint8_t>(sign | 0x7c);  // >= max + half ulp
  const int n_finite = e4m3 ? 0x7f : 0x7c;  // positive finite codes are 0 .. n_finite-1, increasing
  int best = 0;
  double best_d = a;
  for (int c = 1; c < n_finite; ++c) {
    const double d = static_cast<double>(f8_to_f32(static_cast<std::uint8_t>(c), t)) - a;
    const double ad = d < 0 ? -d : d;
    if (ad < best_d || (ad == best_d && (c & 1) == 0)) {
      best = c;
      best_d = ad;
    }
  }
  return static_cast<std::uint8_t>(sign | best);
}

// ---- I4 -----------------------------------------------------------------------------------------

/// Element `index` of a packed signed-I4 array (element 2k in the low nibble of byte k), -8..7.
constexpr int i4_get(const std::byte* data, std::int64_t index) {
  const auto b = static_cast<unsigned>(data[index / 2]);
  const unsigned nib = (index % 2 == 0) ? (b & 0xfu) : (b >> 4);
  return static_cast<int>(nib) - ((nib & 0x8u) ? 16 : 0);
}

/// Stores `v` (already clamped to -8..7) as element `index` of a packed I4 array.
constexpr void i4_set(std::byte* data, std::int64_t index, int v) {
  const auto nib = static_cast<unsigned>(v) & 0xfu;
  auto b = static_cast<unsigned>(data[index / 2]);
  b = (index % 2 == 0) ? ((b & 0xf0u) | nib) : ((b & 0x0fu) | (nib << 4));
  data[index / 2] = static_cast<std::byte>(b);
}

// ---- whole arrays -------------------------------------------------------------------------------

/// Float -> integer for integer buffers: round half to even, saturate to [lo, hi], NaN -> 0.
inline std::int64_t to_integer(float v, std::int64_t lo, std::int64_t hi) {
  if (v != v) return 0;
  const double r = std::nearbyint(static_cast<double>(v));
  if (r <= static_cast<double>(lo)) return lo;
  if (r >= static_cast<double>(hi)) return hi;
  return static_cast<std::int64_t>(r);
}

/// Element `i` of an array of dtype `t` (not block-quantized) as float.
inline float load_element(ir::dtype t, const std::byte* p, std::int64_t i) {
  auto u8 = [&](std::int64_t k) { return static_cast<std::uint8_t>(p[k]); };
  auto u16 = [&](std::int64_t k) {
    return static_cast<std::uint16_t>(u8(2 * k) | (u8(2 * k + 1) << 8));  // little-endian, as on every GPU
  };
  auto u32 = [&](std::int64_t k) {
    return static_cast<std::uint32_t>(u8(4 * k)) | (static_cast<std::uint32_t>(u8(4 * k + 1)) << 8) |
           (static_cast<std::uint32_t>(u8(4 * k + 2)) << 16) | (static_cast<std::uint32_t>(u8(4 * k + 3)) << 24);
  };
  switch (t) {
    case ir::dtype::f32: return std::bit_cast<float>(u32(i));
    case ir::dtype::f16: return f16_to_f32(u16(i));
    case ir::dtype::bf16: return bf16_to_f32(u16(i));
    case ir::dtype::f8e4m3: case ir::dtype::f8e5m2: return f8_to_f32(u8(i), t);
    case ir::dtype::i32: return static_cast<float>(std::bit_cast<std::int32_t>(u32(i)));
    case ir::dtype::i8: return static_cast<float>(static_cast<std::int8_t>(u8(i)));
    case ir::dtype::i4: return static_cast<float>(i4_get(p, i));
    case ir::dtype::u8: return static_cast<float>(u8(i));
    case ir::dtype::boolean: return u8(i) != 0 ? 1.0f : 0.0f;
    default: break;
  }
  std::string what("element_convert: dtype ");
  what += ir::name(t);
  what += " is block-quantized and has no per-element load";
  throw octo::error(what);
}

/// Stores `v` as element `i` of an array of dtype `t` (not block-quantized).
inline void store_element(ir::dtype t, std::byte* p, std::int64_t i, float v) {
  auto put = [&](std::int64_t byte_off, std::uint32_t bits, int n) {
    for (int k = 0; k < n; ++k) p[byte_off + k] = static_cast<std::byte>((bits >> (8 * k)) & 0xffu);
  };
  switch (t) {
    case ir::dtype::f32: put(4 * i, std::bit_cast<std::uint32_t>(v), 4); return;
    case ir::dtype::f16: put(2 * i, f32_to_f16(v), 2); return;
    case ir::dtype::bf16: put(2 * i, f32_to_bf16(v), 2); return;
    case ir::dtype::f8e4m3: case ir::dtype::f8e5m2: put(i, f32_to_f8(v, t), 1); return;
    case ir::dtype::i32:
      put(4 * i, static_cast<std::uint32_t>(static_cast<std::int32_t>(to_integer(v, INT32_MIN, INT32_MAX))), 4);
      return;
    case ir::dtype::i8: put(i, static_cast<std::uint8_t>(static_cast<std::int8_t>(to_integer(v, -128, 127))), 1); return;
    case ir::dtype::i4: i4_set(p, i, static_cast<int>(to_integer(v, -8, 7))); return;
    case ir::dtype::u8: put(i, static_cast<std::uint32_t>(to_integer(v, 0, 255)), 1); return;
    case ir::dtype::boolean: put(i, v != 0.0f ? 1u : 0u, 1); return;
    default: break;
  }
  std::string what("element_convert: cannot store into block-quantized dtype ");
  what += ir::name(t);
  throw octo::error(what);
}

/// Converts `dst.size()` elements of dtype `t` at `src` to float.
inline void to_f32(ir::dtype t, std::span<const std::byte> src, std::span<float> dst) {
  const auto n = static_cast<std::int64_t>(dst.size());
  if (static_cast<std::int64_t>(src.size()) < ir::nbytes(t, n))
    throw octo::error("element_convert: source holds fewer bytes than the elements asked for");
  for (std::int64_t i = 0; i < n; ++i) dst[static_cast<std::size_t>(i)] = load_element(t, src.data(), i);
}

/// Converts `src` to dtype `t` into `dst` (which must hold nbytes(t, src.size()) bytes).
inline void from_f32(ir::dtype t, std::span<const float> src, std::span<std::byte> dst) {
  const auto n = static_cast<std::int64_t>(src.size());
  if (static_cast<std::int64_t>(dst.size()) < ir::nbytes(t, n))
    throw octo::error("element_convert: destination holds fewer bytes than the elements given");
  for (std::int64_t i = 0; i < n; ++i) store_element(t, dst.data(), i, src[static_cast<std::size_t>(i)]);
}

}  // namespace octo::detail
