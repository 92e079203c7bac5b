// GGUF / ggml block formats on the CPU: dequantize_row (blocks -> float) and quantize_row (float -> blocks)
// for F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, the K-quants Q2_K..Q6_K and the non-linear IQ4_NL and
// IQ4_XS, bit-exact with ggml's dequantizers.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "octo/detail/element_convert.hpp"
#include "octo/error.hpp"
#include "octo/ir/enums.hpp"

namespace octo::detail {

// f16 / bf16 conversions (exact decode, round-to-nearest-even encode) come from element_convert.hpp.

// ---- little-endian field access (blocks are byte arrays; no alignment assumed) ----------------------

inline std::uint16_t qb_load_u16(const std::uint8_t* p) { return std::uint16_t(p[0] | (p[1] << 8)); }
inline void qb_store_u16(std::uint8_t* p, std::uint16_t v) {
  p[0] = std::uint8_t(v & 0xff);
  p[1] = std::uint8_t(v >> 8);
}
inline float qb_load_f16(const std::uint8_t* p) { return f16_to_f32(qb_load_u16(p)); }
/// Stores f as f16 and returns the value actually stored, so quantizers work with the decoder's scale.
inline float qb_store_f16(std::uint8_t* p, float f) {
  const std::uint16_t h = f32_to_f16(f);
  qb_store_u16(p, h);
  return f16_to_f32(h);
}

// ---- K-quant 6-bit scale packing (shared by Q4_K and Q5_K) ------------------------------------------
// 8 scales and 8 mins of 6 bits in 12 bytes: bytes 0..3 hold scales 0..3 (low 6 bits) plus the top two
// bits of scales 4..7; bytes 4..7 the same for mins; bytes 8..11 the low nibbles of scales/mins 4..7.

inline void k4_get_scale_min(int j, const std::uint8_t* q, int& sc, int& m) {
  if (j < 4) {
    sc = q[j] & 63;
    m = q[j + 4] & 63;
  } else {
    sc = (q[j + 4] & 0xf) | ((q[j - 4] >> 6) << 4);
    m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

inline void k4_set_scales_mins(const int* sc, const int* m, std::uint8_t* q) {
  for (int j = 0; j < 4; ++j) {
    q[j] = std::uint8_t((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    q[j + 4] = std::uint8_t((m[j] & 63) | ((m[j + 4] >> 4) << 6));
    q[j + 8] = std::uint8_t((sc[j + 4] & 0xf) | ((m[j + 4] & 0xf) << 4));
  }
}

// Q3_K: 16 signed 6-bit scales (stored +32) in 12 bytes: low nibbles of scales 0..7 in bytes 0..7 low,
// of scales 8..15 in bytes 0..7 high; the top two bits of scale i in byte 8 + i%4 at bit 2*(i/4).
inline int k3_get_scale(int i, const std::uint8_t* s) {
  const int lo = i < 8 ? (s[i] & 0xf) : (s[i - 8] >> 4);
  const int hi = (s[8 + (i & 3)] >> (2 * (i >> 2))) & 3;
  return (lo | (hi << 4)) - 32;
}

inline void k3_set_scales(const int* scale_plus_32, std::uint8_t* s) {
  std::memset(s, 0, 12);
  for (int i = 0; i < 16; ++i) {
    const int v = scale_plus_32[i] & 63;
    if (i < 8) s[i] = std::uint8_t(s[i] | (v & 0xf));
    else s[i - 8] = std::uint8_t(s[i - 8] | ((v & 0xf) << 4));
    s[8 + (i & 3)] = std::uint8_t(s[8 + (i & 3)] | ((v >> 4) << (2 * (i >> 2))));
  }
}

// ---- dequantization of one block --------------------------------------------------------------------
// The float operation order follows ggml's dequantize_row_* so results are bit-identical to it.

inline void dequant_block_q8_0(const std::uint8_t* b, float* y) {
  const float d = qb_load_f16(b);
  for (int j = 0; j < 32; ++j) y[j] = float(std::int8_t(b[2 + j])) * d;
}

inline void dequant_block_q4_0(const std::uint8_t* b, float* y) {
  const float d = qb_load_f16(b);
  const std::uint8_t* qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = float((qs[j] & 0xf) - 8) * d;
    y[j + 16] = float((qs[j] >> 4) - 8) * d;
  }
}

inline void dequant_block_q4_1(const std::uint8_t* b, float* y) {
  const float d = qb_load_f16(b);
  const float m = qb_load_f16(b + 2);
  const std::uint8_t* qs = b + 4;
  for (int j = 0; j < 16; ++j) {
    y[j] = float(qs[j] & 0xf) * d + m;
    y[j + 16] = float(qs[j] >> 4) * d + m;
  }
}

inline std::uint32_t qb_load_u32(const std::uint8_t* p) {
  return std::uint32_t(p[0]) | (std::uint32_t(p[1]) << 8) | (std::uint32_t(p[2]) << 16) |
         (std::uint32_t(p[3]) << 24);
}

inline void dequant_block_q5_0(const std::uint8_t* b, float* y) {
  const float d = qb_load_f16(b);
  const std::uint32_t qh = qb_load_u32(b + 2);
  const std::uint8_t* qs = b + 6;
  for (int j = 0; j < 16; ++j) {
    const int h0 = int((qh >> j) & 1u) << 4;
    const int h1 = int((qh >> (j + 16)) & 1u) << 4;
    y[j] = float(((qs[j] & 0xf) | h0) - 16) * d;
    y[j + 16] = float(((qs[j] >> 4) | h1) - 16) * d;
  }
}

inline void dequant_block_q5_1(const std::uint8_t* b, float* y) {
  const float d = qb_load_f16(b);
  const float m = qb_load_f16(b + 2);
  const std::uint32_t qh = qb_load_u32(b + 4);
  const std::uint8_t* qs = b + 8;
  for (int j = 0; j < 16; ++j) {
    const int h0 = int((qh >> j) & 1u) << 4;
    const int h1 = int((qh >> (j + 16)) & 1u) << 4;
    y[j] = float((qs[j] & 0xf) | h0) * d + m;
    y[j + 16] = float((qs[j] >> 4) | h1) * d + m;
  }
}

// block_q2_K: scales[16] (low nibble scale, high nibble min), qs[64], f16 d, f16 dmin.
inline void dequant_block_q2_k(const std::uint8_t* b, float* y) {
  const std::uint8_t* scales = b;
  const std::uint8_t* q = b + 16;
  const float d = qb_load_f16(b + 80);
  const float dmin = qb_load_f16(b + 82);
  int is = 0;
  for (int n = 0; n < 256; n += 128) {
    int shift = 0;
    for (int j = 0; j < 4; ++j) {
      for (int half = 0; half < 2; ++half) {
        const int sc = scales[is++];
        const float dl = d * float(sc & 0xf);
        const float ml = dmin * float(sc >> 4);
        for (int l = 0; l < 16; ++l) *y++ = dl * float((q[l + 16 * half] >> shift) & 3) - ml;
      }
      shift += 2;
    }
    q += 32;
  }
}

// block_q3_K: hmask[32], qs[64], scales[12], f16 d.
inline void dequant_block_q3_k(const std::uint8_t* b, float* y) {
  const std::uint8_t* hm = b;
  const std::uint8_t* q = b + 32;
  const std::uint8_t* scales = b + 96;
  const float d_all = qb_load_f16(b + 108);
  int is = 0;
  unsigned m = 1;
  for (int n = 0; n < 256; n += 128) {
    int shift = 0;
    for (int j = 0; j < 4; ++j) {
      for (int half = 0; half < 2; ++half) {
        const float dl = d_all * float(k3_get_scale(is++, scales));
        for (int l = 16 * half; l < 16 * half + 16; ++l)
          *y++ = dl * float(((q[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4));
      }
      shift += 2;
      m <<= 1;
    }
    q += 32;
  }
}

// block_q4_K: f16 d, f16 dmin, scales[12], qs[128].
inline void dequant_block_q4_k(const std::uint8_t* b, float* y) {
  const float d = qb_load_f16(b);
  const float dmin = qb_load_f16(b + 2);
  const std::uint8_t* scales = b + 4;
  const std::uint8_t* q = b + 16;
  int is = 0;
  for (int j = 0; j < 256; j += 64) {
    int sc, m;
    k4_get_scale_min(is, scales, sc, m);
    const float d1 = d * float(sc), m1 = dmin * float(m);
    k4_get_scale_min(is + 1, scales, sc, m);
    const float d2 = d * float(sc), m2 = dmin * float(m);
    for (int l = 0; l < 32; ++l) *y++ = d1 * float(q[l] & 0xf) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * float(q[l] >> 4) - m2;
    q += 32;
    is += 2;
  }
}

// block_q5_K: f16 d, f16 dmin, scales[12], qh[32], qs[128].
inline void dequant_block_q5_k(const std::uint8_t* b, float* y) {
  const float d = qb_load_f16(b);
  const float dmin = qb_load_f16(b + 2);
  const std::uint8_t* scales = b + 4;
  const std::uint8_t* qh = b + 16;
  const std::uint8_t* ql = b + 48;
  int is = 0;
  unsigned u1 = 1, u2 = 2;
  for (int j = 0; j < 256; j += 64) {
    int sc, m;
    k4_get_scale_min(is, scales, sc, m);
    const float d1 = d * float(sc), m1 = dmin * float(m);
    k4_get_scale_min(is + 1, scales, sc, m);
    const float d2 = d * float(sc), m2 = dmin * float(m);
    for (int l = 0; l < 32; ++l) *y++ = d1 * float((ql[l] & 0xf) + ((qh[l] & u1) ? 16 : 0)) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * float((ql[l] >> 4) + ((qh[l] & u2) ? 16 : 0)) - m2;
    ql += 32;
    is += 2;
    u1 <<= 2;
    u2 <<= 2;
  }
}

// block_q6_K: ql[128], qh[64], int8 scales[16], f16 d.
inline void dequant_block_q6_k(const std::uint8_t* b, float* y) {
  const std::uint8_t* ql = b;
  const std::uint8_t* qh = b + 128;
  const std::uint8_t* sc = b + 192;
  const float d = qb_load_f16(b + 208);
  for (int n = 0; n < 256; n += 128) {
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q1 = ((ql[l] & 0xf) | (((qh[l] >> 0) & 3) << 4)) - 32;
      const int q2 = ((ql[l + 32] & 0xf) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l] = d * float(std::int8_t(sc[is + 0])) * float(q1);
      y[l + 32] = d * float(std::int8_t(sc[is + 2])) * float(q2);
      y[l + 64] = d * float(std::int8_t(sc[is + 4])) * float(q3);
      y[l + 96] = d * float(std::int8_t(sc[is + 6])) * float(q4);
    }
    y += 128;
    ql += 64;
    qh += 32;
    sc += 8;
  }
}

// ---- IQ4_NL / IQ4_XS: 4-bit indices into one fixed non-linear table (ggml's kvalues_iq4nl) ------------
// Both store 32-element runs as 16 bytes: byte j holds element j (low nibble) and element j + 16 (high).

inline constexpr std::int8_t iq4_table[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                              1,    13,   25,  38,  53,  69,  89,  113};

inline void iq4_dequant_run(float dl, const std::uint8_t* qs, float* y) {
  for (int j = 0; j < 16; ++j) {
    y[j] = dl * float(iq4_table[qs[j] & 0xf]);
    y[j + 16] = dl * float(iq4_table[qs[j] >> 4]);
  }
}

// block_iq4_nl: f16 d, qs[16] (32 elements); x = d * table[q].
inline void dequant_block_iq4_nl(const std::uint8_t* b, float* y) { iq4_dequant_run(qb_load_f16(b), b + 2, y); }

/// IQ4_XS sub-block `ib` (0..7)'s 6-bit scale: low 4 bits in scales_l[ib/2] (nibble ib%2), high 2 bits
/// in scales_h at bit 2*ib; the sub-block's step is d * (scale - 32).
inline int iq4xs_scale(const std::uint8_t* b, int ib) {
  const int lo = (b[4 + ib / 2] >> (4 * (ib % 2))) & 0xf;
  const int hi = (qb_load_u16(b + 2) >> (2 * ib)) & 3;
  return lo | (hi << 4);
}

// block_iq4_xs: f16 d, u16 scales_h, scales_l[4], qs[128] (256 elements in 8 sub-blocks of 32).
inline void dequant_block_iq4_xs(const std::uint8_t* b, float* y) {
  const float d = qb_load_f16(b);
  for (int ib = 0; ib < 8; ++ib) iq4_dequant_run(d * float(iq4xs_scale(b, ib) - 32), b + 8 + 16 * ib, y + 32 * ib);
}

inline void qb_check_row(ir::dtype t, std::int64_t n, const char* what) {
  const auto l = ir::layout(t);
  if (n < 0 || n % l.block_elems != 0)
    throw octo::error(std::string(what) + ": " + std::to_string(n) + " elements of " +
                      std::string(ir::name(t)) + " is not a whole number of " +
                      std::to_string(l.block_elems) + "-element blocks");
}

/// Decodes `n` elements of type `t` from `src` (GGUF byte layout, little endian) into `dst`.
/// `n` must be a multiple of the type's block size (ir::layout(t).block_elems).
/// @code
///   std::vector<float> row(ne0);
///   octo::detail::dequantize_row(octo::ir::dtype::q4_k, bytes, row.data(), ne0);
/// @endcode
inline void dequantize_row(ir::dtype t, const std::uint8_t* src, float* dst, std::int64_t n) {
  using ir::dtype;
  qb_check_row(t, n, "dequantize_row");
  const auto l = ir::layout(t);
  const std::int64_t nb = n / l.block_elems;
  void (*block)(const std::uint8_t*, float*) = nullptr;
  switch (t) {
    case dtype::f32:
      if (n > 0) std::memcpy(dst, src, std::size_t(n) * 4);
      return;
    case dtype::f16:
      for (std::int64_t i = 0; i < n; ++i) dst[i] = qb_load_f16(src + 2 * i);
      return;
    case dtype::bf16:
      for (std::int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(qb_load_u16(src + 2 * i));
      return;
    case dtype::q8_0: block = dequant_block_q8_0; break;
    case dtype::q4_0: block = dequant_block_q4_0; break;
    case dtype::q4_1: block = dequant_block_q4_1; break;
    case dtype::q5_0: block = dequant_block_q5_0; break;
    case dtype::q5_1: block = dequant_block_q5_1; break;
    case dtype::q2_k: block = dequant_block_q2_k; break;
    case dtype::q3_k: block = dequant_block_q3_k; break;
    case dtype::q4_k: block = dequant_block_q4_k; break;
    case dtype::q5_k: block = dequant_block_q5_k; break;
    case dtype::q6_k: block = dequant_block_q6_k; break;
    case dtype::iq4_nl: block = dequant_block_iq4_nl; break;
    case dtype::iq4_xs: block = dequant_block_iq4_xs; break;
    default:
      throw octo::error("dequantize_row: element type " + std::string(ir::name(t)) +
                        " is not a weight format");
  }
  for (std::int64_t i = 0; i < nb; ++i) block(src + i * l.block_bytes, dst + i * l.block_elems);
}

// ---- quantization of one block ----------------------------------------------------------------------
// Simple round-to-nearest quantizers (not ggml's error-minimising searches): each block's scales come
// from its min/max, and quants are rounded against the scale as the decoder will see it (after f16 and
// 6-bit rounding), so decoding gives the nearest representable value of the chosen grid.

inline int qb_round_clamp(float v, int lo, int hi) {
  if (!(v == v)) return lo;  // NaN input: any code is as good; keep it defined
  const float r = std::nearbyint(std::clamp(v, float(lo), float(hi)));
  return int(r);
}

/// Signed value of largest magnitude (first one on ties), as ggml's Q4_0/Q5_0 use.
inline float qb_signed_absmax(const float* x, int n) {
  float amax = 0.0f, max = 0.0f;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  return max;
}

inline void quant_block_q8_0(const float* x, std::uint8_t* b) {
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = qb_store_f16(b, amax / 127.0f);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < 32; ++j) b[2 + j] = std::uint8_t(std::int8_t(qb_round_clamp(x[j] * id, -127, 127)));
}

inline void quant_block_q4_0(const float* x, std::uint8_t* b) {
  const float d = qb_store_f16(b, qb_signed_absmax(x, 32) / -8.0f);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < 16; ++j) {
    const int q0 = qb_round_clamp(x[j] * id + 8.0f, 0, 15);
    const int q1 = qb_round_clamp(x[j + 16] * id + 8.0f, 0, 15);
    b[2 + j] = std::uint8_t(q0 | (q1 << 4));
  }
}

inline void quant_block_q4_1(const float* x, std::uint8_t* b) {
  float mn = x[0], mx = x[0];
  for (int j = 1; j < 32; ++j) mn = std::min(mn, x[j]), mx = std::max(mx, x[j]);
  const float d = qb_store_f16(b, (mx - mn) / 15.0f);
  const float m = qb_store_f16(b + 2, mn);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < 16; ++j) {
    const int q0 = qb_round_clamp((x[j] - m) * id, 0, 15);
    const int q1 = qb_round_clamp((x[j + 16] - m) * id, 0, 15);
    b[4 + j] = std::uint8_t(q0 | (q1 << 4));
  }
}

inline void quant_block_q5_0(const float* x, std::uint8_t* b) {
  const float d = qb_store_f16(b, qb_signed_absmax(x, 32) / -16.0f);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  std::uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    const int q0 = qb_round_clamp(x[j] * id + 16.0f, 0, 31);
    const int q1 = qb_round_clamp(x[j + 16] * id + 16.0f, 0, 31);
    b[6 + j] = std::uint8_t((q0 & 0xf) | ((q1 & 0xf) << 4));
    qh |= std::uint32_t(q0 >> 4) << j;
    qh |= std::uint32_t(q1 >> 4) << (j + 16);
  }
  for (int k = 0; k < 4; ++k) b[2 + k] = std::uint8_t(qh >> (8 * k));
}

inline void quant_block_q5_1(const float* x, std::uint8_t* b) {
  float mn = x[0], mx = x[0];
  for (int j = 1; j < 32; ++j) mn = std::min(mn, x[j]), mx = std::max(mx, x[j]);
  const float d = qb_store_f16(b, (mx - mn) / 31.0f);
  const float m = qb_store_f16(b + 2, mn);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  std::uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    const int q0 = qb_round_clamp((x[j] - m) * id, 0, 31);
    const int q1 = qb_round_clamp((x[j + 16] - m) * id, 0, 31);
    b[8 + j] = std::uint8_t((q0 & 0xf) | ((q1 & 0xf) << 4));
    qh |= std::uint32_t(q0 >> 4) << j;
    qh |= std::uint32_t(q1 >> 4) << (j + 16);
  }
  for (int k = 0; k < 4; ++k) b[4 + k] = std::uint8_t(qh >> (8 * k));
}

/// Asymmetric K-quant sub-block scales: for each of `nsub` sub-blocks of `len` values, the step
/// (max - min) / levels and the offset -min, with min clamped to <= 0 as ggml's K formats require
/// (they store a non-negative min that is subtracted).
inline void qb_sub_scale_min(const float* x, int nsub, int len, int levels, float* scale, float* minv) {
  for (int s = 0; s < nsub; ++s) {
    float mn = 0.0f, mx = 0.0f;
    for (int l = 0; l < len; ++l) {
      const float v = x[s * len + l];
      mn = std::min(mn, v);
      mx = std::max(mx, v);
    }
    scale[s] = (mx - mn) / float(levels);
    minv[s] = -mn;
  }
}

/// Quantizes non-negative `vals` to integers 0..qmax against a super-scale stored as f16 at `dst`;
/// `codes` receive the integers, the return is the decoded super-scale.
inline float qb_super_scale(const float* vals, int n, int qmax, std::uint8_t* dst, int* codes) {
  float vmax = 0.0f;
  for (int i = 0; i < n; ++i) vmax = std::max(vmax, vals[i]);
  const float d = qb_store_f16(dst, vmax / float(qmax));
  for (int i = 0; i < n; ++i) codes[i] = d > 0.0f ? qb_round_clamp(vals[i] / d, 0, qmax) : 0;
  return d;
}

inline void quant_block_q2_k(const float* x, std::uint8_t* b) {
  float scale[16], minv[16];
  int sc[16], mq[16];
  qb_sub_scale_min(x, 16, 16, 3, scale, minv);
  const float d = qb_super_scale(scale, 16, 15, b + 80, sc);
  const float dmin = qb_super_scale(minv, 16, 15, b + 82, mq);
  for (int s = 0; s < 16; ++s) b[s] = std::uint8_t(sc[s] | (mq[s] << 4));
  std::uint8_t* qs = b + 16;
  std::memset(qs, 0, 64);
  for (int i = 0; i < 256; ++i) {
    const int s = i / 16;
    const float dl = d * float(sc[s]), ml = dmin * float(mq[s]);
    const int q = dl > 0.0f ? qb_round_clamp((x[i] + ml) / dl, 0, 3) : 0;
    // Element 128n + 32j + l sits in qs[32n + l] at bits 2j.
    const int n = i / 128, j = (i % 128) / 32, l = i % 32;
    qs[32 * n + l] = std::uint8_t(qs[32 * n + l] | (q << (2 * j)));
  }
}

inline void quant_block_q3_k(const float* x, std::uint8_t* b) {
  // Symmetric: each 16-value sub-block gets a signed scale so that its largest-magnitude value maps to
  // -4, the end of the asymmetric range -4..3 that has the extra step.
  float scale[16];
  float amax = 0.0f;
  for (int s = 0; s < 16; ++s) {
    scale[s] = qb_signed_absmax(x + 16 * s, 16) / -4.0f;
    amax = std::max(amax, std::fabs(scale[s]));
  }
  const float d = qb_store_f16(b + 108, amax / 31.0f);
  int sc[16], stored[16];
  for (int s = 0; s < 16; ++s) {
    sc[s] = d > 0.0f ? qb_round_clamp(scale[s] / d, -32, 31) : 0;
    stored[s] = sc[s] + 32;
  }
  k3_set_scales(stored, b + 96);
  std::uint8_t* hm = b;
  std::uint8_t* qs = b + 32;
  std::memset(hm, 0, 32);
  std::memset(qs, 0, 64);
  for (int i = 0; i < 256; ++i) {
    const float dl = d * float(sc[i / 16]);
    const int q = (dl != 0.0f ? qb_round_clamp(x[i] / dl, -4, 3) : 0) + 4;  // 0..7
    const int n = i / 128, j = (i % 128) / 32, l = i % 32;
    qs[32 * n + l] = std::uint8_t(qs[32 * n + l] | ((q & 3) << (2 * j)));
    if (q & 4) hm[l] = std::uint8_t(hm[l] | (1u << (4 * n + j)));
  }
}

inline void quant_block_q4_k(const float* x, std::uint8_t* b) {
  float scale[8], minv[8];
  int sc[8], mq[8];
  qb_sub_scale_min(x, 8, 32, 15, scale, minv);
  const float d = qb_super_scale(scale, 8, 63, b, sc);
  const float dmin = qb_super_scale(minv, 8, 63, b + 2, mq);
  k4_set_scales_mins(sc, mq, b + 4);
  std::uint8_t* qs = b + 16;
  std::memset(qs, 0, 128);
  for (int i = 0; i < 256; ++i) {
    const int s = i / 32;
    const float dl = d * float(sc[s]), ml = dmin * float(mq[s]);
    const int q = dl > 0.0f ? qb_round_clamp((x[i] + ml) / dl, 0, 15) : 0;
    // Sub-blocks 2c and 2c+1 share qs[32c..32c+31]: low nibbles, then high nibbles.
    const int c = s / 2, l = i % 32;
    qs[32 * c + l] = std::uint8_t(qs[32 * c + l] | (q << (4 * (s & 1))));
  }
}

inline void quant_block_q5_k(const float* x, std::uint8_t* b) {
  float scale[8], minv[8];
  int sc[8], mq[8];
  qb_sub_scale_min(x, 8, 32, 31, scale, minv);
  const float d = qb_super_scale(scale, 8, 63, b, sc);
  const float dmin = qb_super_scale(minv, 8, 63, b + 2, mq);
  k4_set_scales_mins(sc, mq, b + 4);
  std::uint8_t* qh = b + 16;
  std::uint8_t* qs = b + 48;
  std::memset(qh, 0, 32);
  std::memset(qs, 0, 128);
  for (int i = 0; i < 256; ++i) {
    const int s = i / 32;
    const float dl = d * float(sc[s]), ml = dmin * float(mq[s]);
    const int q = dl > 0.0f ? qb_round_clamp((x[i] + ml) / dl, 0, 31) : 0;
    const int c = s / 2, l = i % 32;
    qs[32 * c + l] = std::uint8_t(qs[32 * c + l] | ((q & 0xf) << (4 * (s & 1))));
    if (q & 16) qh[l] = std::uint8_t(qh[l] | (1u << s));
  }
}

inline void quant_block_q6_k(const float* x, std::uint8_t* b) {
  float scale[16];
  float amax = 0.0f;
  for (int s = 0; s < 16; ++s) {
    scale[s] = qb_signed_absmax(x + 16 * s, 16) / -32.0f;
    amax = std::max(amax, std::fabs(scale[s]));
  }
  const float d = qb_store_f16(b + 208, amax / 127.0f);
  int sc[16];
  for (int s = 0; s < 16; ++s) {
    sc[s] = d > 0.0f ? qb_round_clamp(scale[s] / d, -128, 127) : 0;
    b[192 + s] = std::uint8_t(std::int8_t(sc[s]));
  }
  std::uint8_t* ql = b;
  std::uint8_t* qh = b + 128;
  std::memset(ql, 0, 128);
  std::memset(qh, 0, 64);
  for (int i = 0; i < 256; ++i) {
    const float dl = d * float(sc[i / 16]);
    const int q = (dl != 0.0f ? qb_round_clamp(x[i] / dl, -32, 31) : 0) + 32;  // 0..63
    // Element 128n + 32k + l: low nibble in ql[64n + l + 32(k&1)] (high half of the byte for k>=2),
    // top two bits in qh[32n + l] at bits 2k.
    const int n = i / 128, k = (i % 128) / 32, l = i % 32;
    std::uint8_t& lo = ql[64 * n + l + 32 * (k & 1)];
    lo = std::uint8_t(lo | ((q & 0xf) << (4 * (k >> 1))));
    qh[32 * n + l] = std::uint8_t(qh[32 * n + l] | ((q >> 4) << (2 * k)));
  }
}

// IQ4_NL / IQ4_XS. The table is fixed, so quality comes from the scale alone; round-to-nearest against
// the largest value's scale wastes the table's uneven spacing. Each 32-element run instead tries a few
// candidate scales: its largest-magnitude value mapped onto each of the table's outer entries (-127,
// -104, 113, 89: either sign, full or slightly shrunk range), each refined once by least squares for the
// indices it chose (d = sum x*t / sum t*t). The candidate with the smallest squared error after rounding
// to what the format stores (f16, or IQ4_XS's 6-bit sub-block scale) wins.

/// The nearest table entry's index for v in [-128, 128) by half-unit buckets: every midpoint between
/// neighbouring entries (-115.5, -93.5, -74, ...) is a multiple of 0.5, so all of a bucket [b/2 - 128,
/// b/2 - 127.5) lies on one side of each of them (a value exactly on a midpoint goes up). A lookup instead
/// of a search keeps the quantizer's inner loop short and branch-free: it runs a dozen times per run.
inline constexpr auto iq4_bucket_index = [] {
  std::array<std::uint8_t, 512> lut{};
  for (int b = 0; b < 512; ++b) {
    const int v2 = b - 256;  // twice the bucket's lower end
    int n = 0;
    for (int k = 0; k < 15; ++k) n += v2 >= iq4_table[k] + iq4_table[k + 1] ? 1 : 0;  // v >= midpoint k
    lut[std::size_t(b)] = std::uint8_t(n);
  }
  return lut;
}();

/// Squared error of 32 values against step `dl`, with the nearest indices written to `q`.
inline float iq4_run_error(const float* x, float dl, std::uint8_t* q) {
  const float inv = dl != 0.0f ? 1.0f / dl : 0.0f;
  float err = 0.0f;
  for (int j = 0; j < 32; ++j) {
    float b = (x[j] * inv + 128.0f) * 2.0f;
    b = b > 0.0f ? b : 0.0f;  // NaN too: bucket 0 (plain compares, not fmax/fmin: those are libm calls)
    b = b < 511.0f ? b : 511.0f;
    q[j] = iq4_bucket_index[static_cast<unsigned>(static_cast<int>(b))];
    const float e = x[j] - dl * float(iq4_table[q[j]]);
    err += e * e;
  }
  return err;
}

/// The step for a 32-value run: the best of the candidate scales, each refined by least squares. `store`
/// maps a wanted step to the step the format can hold (f16 rounding, a 6-bit grid); `q` gets the indices.
template <class Store>
float iq4_search_step(const float* x, Store store, std::uint8_t* q) {
  const float m = qb_signed_absmax(x, 32);
  std::uint8_t cand[32];
  float best = store(0.0f);
  float best_err = iq4_run_error(x, best, q);
  if (m == 0.0f || !(m == m)) return best;
  const auto consider = [&](float dl, float err) {
    if (err < best_err) {
      best_err = err;
      best = dl;
      std::memcpy(q, cand, 32);
    }
  };
  for (const float anchor : {-127.0f, -104.0f, 113.0f, 89.0f}) {
    for (const float shrink : {1.0f, 0.9f}) {
      const float trial = store(m / anchor * shrink);
      if (trial == 0.0f) continue;
      consider(trial, iq4_run_error(x, trial, cand));
      float xt = 0.0f, tt = 0.0f;  // least-squares step for these indices (tt > 0: no entry is 0)
      for (int j = 0; j < 32; ++j) {
        const float t = float(iq4_table[cand[j]]);
        xt += x[j] * t;
        tt += t * t;
      }
      const float refined = store(xt / tt);
      if (refined != trial && refined != 0.0f) consider(refined, iq4_run_error(x, refined, cand));
    }
  }
  return best;
}

inline void iq4_pack_run(const std::uint8_t* q, std::uint8_t* qs) {
  for (int j = 0; j < 16; ++j) qs[j] = std::uint8_t(q[j] | (q[j + 16] << 4));
}

inline void quant_block_iq4_nl(const float* x, std::uint8_t* b) {
  std::uint8_t q[32];
  const float d = iq4_search_step(x, [](float v) { return f16_to_f32(f32_to_f16(v)); }, q);
  qb_store_f16(b, d);
  iq4_pack_run(q, b + 2);
}

inline void quant_block_iq4_xs(const float* x, std::uint8_t* b) {
  // First the best unconstrained step of each sub-block; then the super-block's f16 d so the largest
  // step in magnitude becomes the end of the 6-bit range (-32); then each sub-block searches again with
  // its step restricted to that grid (d * (ls - 32), ls in 0..63).
  std::uint8_t q[32];
  float step[8];
  float amax = 0.0f, m = 0.0f;
  for (int ib = 0; ib < 8; ++ib) {
    step[ib] = iq4_search_step(x + 32 * ib, [](float v) { return v; }, q);
    if (std::fabs(step[ib]) > amax) amax = std::fabs(step[ib]), m = step[ib];
  }
  const float d = qb_store_f16(b, m / -32.0f);
  std::uint16_t scales_h = 0;
  std::memset(b + 4, 0, 4);
  for (int ib = 0; ib < 8; ++ib) {
    const auto grid = [d](float v) { return d != 0.0f ? d * float(qb_round_clamp(v / d, -32, 31)) : 0.0f; };
    const float dl = iq4_search_step(x + 32 * ib, grid, q);
    const int ls = (d != 0.0f ? qb_round_clamp(dl / d, -32, 31) : 0) + 32;
    b[4 + ib / 2] = std::uint8_t(b[4 + ib / 2] | ((ls & 0xf) << (4 * (ib % 2))));
    scales_h = std::uint16_t(scales_h | ((ls >> 4) << (2 * ib)));
    iq4_pack_run(q, b + 8 + 16 * ib);
  }
  qb_store_u16(b + 2, scales_h);
}

/// Encodes `n` floats into type `t` (n a multiple of the block size). F16/BF16 round to nearest even.
inline void quantize_row(ir::dtype t, const float* src, std::uint8_t* dst, std::int64_t n) {
  using ir::dtype;
  qb_check_row(t, n, "quantize_row");
  const auto l = ir::layout(t);
  const std::int64_t nb = n / l.block_elems;
  void (*block)(const float*, std::uint8_t*) = nullptr;
  switch (t) {
    case dtype::f32:
      if (n > 0) std::memcpy(dst, src, std::size_t(n) * 4);
      return;
    case dtype::f16:
      for (std::int64_t i = 0; i < n; ++i) qb_store_u16(dst + 2 * i, f32_to_f16(src[i]));
      return;
    case dtype::bf16:
      for (std::int64_t i = 0; i < n; ++i) qb_store_u16(dst + 2 * i, f32_to_bf16(src[i]));
      return;
    case dtype::q8_0: block = quant_block_q8_0; break;
    case dtype::q4_0: block = quant_block_q4_0; break;
    case dtype::q4_1: block = quant_block_q4_1; break;
    case dtype::q5_0: block = quant_block_q5_0; break;
    case dtype::q5_1: block = quant_block_q5_1; break;
    case dtype::q2_k: block = quant_block_q2_k; break;
    case dtype::q3_k: block = quant_block_q3_k; break;
    case dtype::q4_k: block = quant_block_q4_k; break;
    case dtype::q5_k: block = quant_block_q5_k; break;
    case dtype::q6_k: block = quant_block_q6_k; break;
    case dtype::iq4_nl: block = quant_block_iq4_nl; break;
    case dtype::iq4_xs: block = quant_block_iq4_xs; break;
    default:
      throw octo::error("quantize_row: element type " + std::string(ir::name(t)) +
                        " is not a weight format");
  }
  for (std::int64_t i = 0; i < nb; ++i) block(src + i * l.block_elems, dst + i * l.block_bytes);
}

}  // namespace octo::detail
