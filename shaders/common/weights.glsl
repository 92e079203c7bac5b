// Weight dequantization inside kernels: for each weight dtype, 8 consecutive elements of a row ("unit"
// u covers elements 8u..8u+7) and single elements. Rows start at `row_byte` (GGUF rows are whole blocks).
// Block layouts follow ggml-common.h (the GGUF format); no kernel ever makes a dequantized copy.
#ifndef OCTO_WEIGHTS_GLSL
#define OCTO_WEIGHTS_GLSL

#include "octo.glsl"

// ---- F32: two 16-byte loads (row_byte + 32u is 16-byte aligned when K % 8 == 0) ----
void wunit_f32(uvec2 addr, uint row_byte, uint u, out float v[8]) {
  v4_buf b = v4_buf(addr);
  uint q = (row_byte >> 4) + 2u * u;
  vec4 a = b.d[q];
  vec4 c = b.d[q + 1u];
  v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w;
  v[4] = c.x; v[5] = c.y; v[6] = c.z; v[7] = c.w;
}
float welem_f32(uvec2 addr, uint row_byte, uint k) { return uintBitsToFloat(u32_buf(addr).d[(row_byte >> 2) + k]); }

// ---- F16 / BF16: one 16-byte load ----
void wunit_f16(uvec2 addr, uint row_byte, uint u, out float v[8]) {
  uvec4 a = u4_buf(addr).d[(row_byte >> 4) + u];
  vec2 p;
  p = unpackHalf2x16(a.x); v[0] = p.x; v[1] = p.y;
  p = unpackHalf2x16(a.y); v[2] = p.x; v[3] = p.y;
  p = unpackHalf2x16(a.z); v[4] = p.x; v[5] = p.y;
  p = unpackHalf2x16(a.w); v[6] = p.x; v[7] = p.y;
}
float welem_f16(uvec2 addr, uint row_byte, uint k) { return f16_to_f32(load_u16(u32_buf(addr), row_byte + 2u * k)); }

void wunit_bf16(uvec2 addr, uint row_byte, uint u, out float v[8]) {
  uvec4 a = u4_buf(addr).d[(row_byte >> 4) + u];
  v[0] = uintBitsToFloat(a.x << 16); v[1] = uintBitsToFloat(a.x & 0xffff0000u);
  v[2] = uintBitsToFloat(a.y << 16); v[3] = uintBitsToFloat(a.y & 0xffff0000u);
  v[4] = uintBitsToFloat(a.z << 16); v[5] = uintBitsToFloat(a.z & 0xffff0000u);
  v[6] = uintBitsToFloat(a.w << 16); v[7] = uintBitsToFloat(a.w & 0xffff0000u);
}
float welem_bf16(uvec2 addr, uint row_byte, uint k) { return bf16_to_f32(load_u16(u32_buf(addr), row_byte + 2u * k)); }

// ---- Q8_0: {f16 d; int8 qs[32]} = 34 bytes; x = d * q ----
void wunit_q8_0(uvec2 addr, uint row_byte, uint u, out float v[8]) {
  u32_buf b = u32_buf(addr);
  uint base = row_byte + (u >> 2) * 34u;
  float d = f16_to_f32(load_u16(b, base));
  uvec2 q = load8_even(b, base + 2u + (u & 3u) * 8u);
  [[unroll]] for (int i = 0; i < 4; ++i) {
    v[i] = d * float(bitfieldExtract(int(q.x), 8 * i, 8));
    v[i + 4] = d * float(bitfieldExtract(int(q.y), 8 * i, 8));
  }
}
float welem_q8_0(uvec2 addr, uint row_byte, uint k) {
  u32_buf b = u32_buf(addr);
  uint base = row_byte + (k >> 5) * 34u;
  return f16_to_f32(load_u16(b, base)) * float(load_i8(b, base + 2u + (k & 31u)));
}

// ---- Q4_0: {f16 d; uint8 qs[16]} = 18 bytes; element j<16 is the low nibble of qs[j], j>=16 the
// high nibble of qs[j-16]; x = d * (q - 8) ----
void wunit_q4_0(uvec2 addr, uint row_byte, uint u, out float v[8]) {
  u32_buf b = u32_buf(addr);
  uint base = row_byte + (u >> 2) * 18u;
  float d = f16_to_f32(load_u16(b, base));
  uint sub = u & 3u;
  uvec2 q = load8_even(b, base + 2u + (sub & 1u) * 8u);
  int sh = int(sub >> 1) * 4;
  [[unroll]] for (int i = 0; i < 4; ++i) {
    v[i] = d * float(int(bitfieldExtract(q.x, 8 * i + sh, 4)) - 8);
    v[i + 4] = d * float(int(bitfieldExtract(q.y, 8 * i + sh, 4)) - 8);
  }
}
float welem_q4_0(uvec2 addr, uint row_byte, uint k) {
  u32_buf b = u32_buf(addr);
  uint base = row_byte + (k >> 5) * 18u;
  uint j = k & 31u;
  uint byte = load_u8(b, base + 2u + (j & 15u));
  return f16_to_f32(load_u16(b, base)) * float(int((byte >> ((j >> 4) * 4u)) & 15u) - 8);
}

// ---- Q4_K: {f16 d; f16 dmin; uint8 scales[12]; uint8 qs[128]} = 144 bytes per 256 elements.
// Chunk j (64 elements) uses sub-blocks 2j (low nibbles of qs[32j..]) and 2j+1 (high nibbles);
// x = d * sc * q - dmin * m, with 6-bit (sc, m) packed as ggml's get_scale_min_k4 ----
uvec2 q4k_scale_min(u32_buf b, uint base, uint s) {
  uint sc, m;
  if (s < 4u) {
    sc = load_u8(b, base + 4u + s) & 63u;
    m = load_u8(b, base + 8u + s) & 63u;
  } else {
    uint hi = load_u8(b, base + 8u + s);
    sc = (hi & 15u) | ((load_u8(b, base + s) >> 6) << 4);
    m = (hi >> 4) | ((load_u8(b, base + 4u + s) >> 6) << 4);
  }
  return uvec2(sc, m);
}
void wunit_q4_k(uvec2 addr, uint row_byte, uint u, out float v[8]) {
  u32_buf b = u32_buf(addr);
  uint base = row_byte + (u >> 5) * 144u;
  uint e0 = (u & 31u) * 8u;  // first element within the block
  uint j = e0 >> 6;
  uint half_ = (e0 >> 5) & 1u;
  uint l0 = e0 & 31u;
  vec2 dm = unpackHalf2x16(b.d[base >> 2]);
  uvec2 sm = q4k_scale_min(b, base, 2u * j + half_);
  float d = dm.x * float(sm.x);
  float mn = dm.y * float(sm.y);
  uint w = (base + 16u + 32u * j + l0) >> 2;
  uint q0 = b.d[w], q1 = b.d[w + 1u];
  int sh = int(half_) * 4;
  [[unroll]] for (int i = 0; i < 4; ++i) {
    v[i] = d * float(bitfieldExtract(q0, 8 * i + sh, 4)) - mn;
    v[i + 4] = d * float(bitfieldExtract(q1, 8 * i + sh, 4)) - mn;
  }
}
float welem_q4_k(uvec2 addr, uint row_byte, uint k) {
  u32_buf b = u32_buf(addr);
  uint base = row_byte + (k >> 8) * 144u;
  uint e = k & 255u;
  uint j = e >> 6, half_ = (e >> 5) & 1u, l = e & 31u;
  vec2 dm = unpackHalf2x16(b.d[base >> 2]);
  uvec2 sm = q4k_scale_min(b, base, 2u * j + half_);
  uint q = (load_u8(b, base + 16u + 32u * j + l) >> (4u * half_)) & 15u;
  return dm.x * float(sm.x) * float(q) - dm.y * float(sm.y);
}

// ---- Q6_K: {uint8 ql[128]; uint8 qh[64]; int8 scales[16]; f16 d} = 210 bytes per 256 elements.
// Element e: half h = e/128, quarter g = (e%128)/32, l = e%32; low 4 bits from ql[64h + l + 32(g&1)]
// (nibble g>>1), high 2 bits from qh[32h + l] >> 2g; scale scales[8h + l/16 + 2g]; x = d*sc*(q-32) ----
void wunit_q6_k(uvec2 addr, uint row_byte, uint u, out float v[8]) {
  u32_buf b = u32_buf(addr);
  uint base = row_byte + (u >> 5) * 210u;
  uint e0 = (u & 31u) * 8u;
  uint h = e0 >> 7, g = (e0 >> 5) & 3u, l0 = e0 & 31u;
  float d = f16_to_f32(load_u16(b, base + 208u)) * float(load_i8(b, base + 192u + 8u * h + (l0 >> 4) + 2u * g));
  uvec2 ql = load8_even(b, base + 64u * h + l0 + 32u * (g & 1u));
  uvec2 qh = load8_even(b, base + 128u + 32u * h + l0);
  int shl = int(g >> 1) * 4;
  int shh = int(g) * 2;
  [[unroll]] for (int i = 0; i < 4; ++i) {
    uint a = bitfieldExtract(ql.x, 8 * i + shl, 4) | (bitfieldExtract(qh.x, 8 * i + shh, 2) << 4);
    uint c = bitfieldExtract(ql.y, 8 * i + shl, 4) | (bitfieldExtract(qh.y, 8 * i + shh, 2) << 4);
    v[i] = d * float(int(a) - 32);
    v[i + 4] = d * float(int(c) - 32);
  }
}
float welem_q6_k(uvec2 addr, uint row_byte, uint k) {
  u32_buf b = u32_buf(addr);
  uint base = row_byte + (k >> 8) * 210u;
  uint e = k & 255u;
  uint h = e >> 7, g = (e >> 5) & 3u, l = e & 31u;
  float d = f16_to_f32(load_u16(b, base + 208u)) * float(load_i8(b, base + 192u + 8u * h + (l >> 4) + 2u * g));
  uint lo = (load_u8(b, base + 64u * h + l + 32u * (g & 1u)) >> (4u * (g >> 1))) & 15u;
  uint hi = (load_u8(b, base + 128u + 32u * h + l) >> (2u * g)) & 3u;
  return d * float(int(lo | (hi << 4)) - 32);
}

// ---- Q4_1: {f16 d; f16 m; uint8 qs[16]} = 20 bytes; x = d * q + m (nibbles as in Q4_0) ----
void wunit_q4_1(uvec2 addr, uint row_byte, uint u, out float v[8]) {
  u32_buf b = u32_buf(addr);
  uint base = row_byte + (u >> 2) * 20u;
  vec2 dm = unpackHalf2x16(b.d[base >> 2]);
  uint sub = u & 3u;
  uint w = (base + 4u + (sub & 1u) * 8u) >> 2;
  uvec2 q = uvec2(b.d[w], b.d[w + 1u]);
  int sh = int(sub >> 1) * 4;
  [[unroll]] for (int i = 0; i < 4; ++i) {
    v[i] = dm.x * float(bitfieldExtract(q.x, 8 * i + sh, 4)) + dm.y;
    v[i + 4] = dm.x * float(bitfieldExtract(q.y, 8 * i + sh, 4)) + dm.y;
  }
}
float welem_q4_1(uvec2 addr, uint row_byte, uint k) {
  u32_buf b = u32_buf(addr);
  uint base = row_byte + (k >> 5) * 20u;
  uint j = k & 31u;
  vec2 dm = unpackHalf2x16(b.d[base >> 2]);
  return dm.x * float((load_u8(b, base + 4u + (j & 15u)) >> ((j >> 4) * 4u)) & 15u) + dm.y;
}

// ---- Q5_0: {f16 d; uint32 qh; uint8 qs[16]} = 22 bytes; element e's fifth bit is qh bit e;
// x = d * (q - 16) ----
void wunit_q5_0(uvec2 addr, uint row_byte, uint u, out float v[8]) {
  u32_buf b = u32_buf(addr);
  uint base = row_byte + (u >> 2) * 22u;
  float d = f16_to_f32(load_u16(b, base));
  uint qh = load_u16(b, base + 2u) | (load_u16(b, base + 4u) << 16);
  uint sub = u & 3u;
  uvec2 q = load8_even(b, base + 6u + (sub & 1u) * 8u);
  int sh = int(sub >> 1) * 4;
  int e0 = int(sub) * 8;
  [[unroll]] for (int i = 0; i < 4; ++i) {
    v[i] = d * float(int(bitfieldExtract(q.x, 8 * i + sh, 4) | (bitfieldExtract(qh, e0 + i, 1) << 4)) - 16);
    v[i + 4] = d * float(int(bitfieldExtract(q.y, 8 * i + sh, 4) | (bitfieldExtract(qh, e0 + i + 4, 1) << 4)) - 16);
  }
}
float welem_q5_0(uvec2 addr, uint row_byte, uint k) {
  u32_buf b = u32_buf(addr);
  uint base = row_byte + (k >> 5) * 22u;
  uint j = k & 31u;
  uint qh = load_u16(b, base + 2u) | (load_u16(b, base + 4u) << 16);
  uint q = ((load_u8(b, base + 6u + (j & 15u)) >> ((j >> 4) * 4u)) & 15u) | (((qh >> j) & 1u) << 4);
  return f16_to_f32(load_u16(b, base)) * float(int(q) - 16);
}

// ---- Q5_1: {f16 d; f16 m; uint32 qh; uint8 qs[16]} = 24 bytes; x = d * q + m ----
void wunit_q5_1(uvec2 addr, uint row_byte, uint u, out float v[8]) {
  u32_buf b = u32_buf(addr);
  uint base = row_byte + (u >> 2) * 24u;
  vec2 dm = unpackHalf2x16(b.d[base >> 2]);
  uint qh = b.d[(base >> 2) + 1u];
  uint sub = u & 3u;
  uint w = (base + 8u + (sub & 1u) * 8u) >> 2;
  uvec2 q = uvec2(b.d[w], b.d[w + 1u]);
  int sh = int(sub >> 1) * 4;
  int e0 = int(sub) * 8;
  [[unroll]] for (int i = 0; i < 4; ++i) {
    v[i] = dm.x * float(bitfieldExtract(q.x, 8 * i + sh, 4) | (bitfieldExtract(qh, e0 + i, 1) << 4)) + dm.y;
    v[i + 4] = dm.x * float(bitfieldExtract(q.y, 8 * i + sh, 4) | (bitfieldExtract(qh, e0 + i + 4, 1) << 4)) + dm.y;
  }
}
float welem_q5_1(uvec2 addr, uint row_byte, uint k) {
  u32_buf b = u32_buf(addr);
  uint base = row_byte + (k >> 5) * 24u;
  uint j = k & 31u;
  vec2 dm = unpackHalf2x16(b.d[base >> 2]);
  uint qh = b.d[(base >> 2) + 1u];
  uint q = ((load_u8(b, base + 8u + (j & 15u)) >> ((j >> 4) * 4u)) & 15u) | (((qh >> j) & 1u) << 4);
  return dm.x * float(q) + dm.y;
}

// ---- Q2_K: {uint8 scales[16]; uint8 qs[64]; f16 d; f16 dmin} = 84 bytes per 256. Element e: h = e/128,
// j = (e%128)/32, s = (e%32)/16, l = e%16: 2 bits at qs[32h + 16s + l] >> 2j, scale byte
// scales[8h + 2j + s] (low nibble scale, high nibble min); x = d*sc*q - dmin*m ----
void wunit_q2_k(uvec2 addr, uint row_byte, uint u, out float v[8]) {
  u32_buf b = u32_buf(addr);
  uint base = row_byte + (u >> 5) * 84u;
  uint e0 = (u & 31u) * 8u;
  uint h = e0 >> 7, j = (e0 >> 5) & 3u, s = (e0 >> 4) & 1u, l0 = e0 & 15u;
  vec2 dm = unpackHalf2x16(b.d[(base + 80u) >> 2]);
  uint sc = load_u8(b, base + 8u * h + 2u * j + s);
  float dl = dm.x * float(sc & 15u), ml = dm.y * float(sc >> 4);
  uint w = (base + 16u + 32u * h + 16u * s + l0) >> 2;
  uint q0 = b.d[w], q1 = b.d[w + 1u];
  int sh = int(j) * 2;
  [[unroll]] for (int i = 0; i < 4; ++i) {
    v[i] = dl * float(bitfieldExtract(q0, 8 * i + sh, 2)) - ml;
    v[i + 4] = dl * float(bitfieldExtract(q1, 8 * i + sh, 2)) - ml;
  }
}
float welem_q2_k(uvec2 addr, uint row_byte, uint k) {
  u32_buf b = u32_buf(addr);
  uint base = row_byte + (k >> 8) * 84u;
  uint e = k & 255u;
  uint h = e >> 7, j = (e >> 5) & 3u, s = (e >> 4) & 1u, l = e & 15u;
  vec2 dm = unpackHalf2x16(b.d[(base + 80u) >> 2]);
  uint sc = load_u8(b, base + 8u * h + 2u * j + s);
  uint q = (load_u8(b, base + 16u + 32u * h + 16u * s + l) >> (2u * j)) & 3u;
  return dm.x * float(sc & 15u) * float(q) - dm.y * float(sc >> 4);
}

// ---- Q3_K: {uint8 hmask[32]; uint8 qs[64]; uint8 scales[12]; f16 d} = 110 bytes per 256. Element e:
// h = e/128, j = (e%128)/32, s = (e%32)/16, l = e%32: 2 bits at qs[32h + l] >> 2j, minus 4 unless
// hmask[l] bit 4h+j is set; 6-bit signed scale 8h + 2j + s (k3 packing); x = d * scale * q ----
int q3k_scale(u32_buf b, uint base, uint i) {
  uint lo = i < 8u ? (load_u8(b, base + 96u + i) & 15u) : (load_u8(b, base + 96u + i - 8u) >> 4);
  uint hi = (load_u8(b, base + 104u + (i & 3u)) >> (2u * (i >> 2))) & 3u;
  return int(lo | (hi << 4)) - 32;
}
void wunit_q3_k(uvec2 addr, uint row_byte, uint u, out float v[8]) {
  u32_buf b = u32_buf(addr);
  uint base = row_byte + (u >> 5) * 110u;
  uint e0 = (u & 31u) * 8u;
  uint h = e0 >> 7, j = (e0 >> 5) & 3u, s = (e0 >> 4) & 1u, l0 = e0 & 31u;
  float dl = f16_to_f32(load_u16(b, base + 108u)) * float(q3k_scale(b, base, 8u * h + 2u * j + s));
  uvec2 q = load8_even(b, base + 32u + 32u * h + l0);
  uvec2 hm = load8_even(b, base + l0);
  int sh = int(j) * 2;
  int hb = int(4u * h + j);
  [[unroll]] for (int i = 0; i < 4; ++i) {
    v[i] = dl * float(int(bitfieldExtract(q.x, 8 * i + sh, 2)) - (bitfieldExtract(hm.x, 8 * i + hb, 1) != 0u ? 0 : 4));
    v[i + 4] = dl * float(int(bitfieldExtract(q.y, 8 * i + sh, 2)) - (bitfieldExtract(hm.y, 8 * i + hb, 1) != 0u ? 0 : 4));
  }
}
float welem_q3_k(uvec2 addr, uint row_byte, uint k) {
  u32_buf b = u32_buf(addr);
  uint base = row_byte + (k >> 8) * 110u;
  uint e = k & 255u;
  uint h = e >> 7, j = (e >> 5) & 3u, s = (e >> 4) & 1u, l = e & 31u;
  float dl = f16_to_f32(load_u16(b, base + 108u)) * float(q3k_scale(b, base, 8u * h + 2u * j + s));
  int q = int((load_u8(b, base + 32u + 32u * h + l) >> (2u * j)) & 3u);
  bool hbit = ((load_u8(b, base + l) >> (4u * h + j)) & 1u) != 0u;
  return dl * float(q - (hbit ? 0 : 4));
}

// ---- Q5_K: {f16 d; f16 dmin; uint8 scales[12]; uint8 qh[32]; uint8 qs[128]} = 176 bytes per 256.
// Element e: j = e/64, s = (e/32)&1, l = e%32: nibble s of qs[32j + l], fifth bit qh[l] bit 2j+s;
// (sc, m) of sub-block 2j+s as in Q4_K; x = d*sc*q - dmin*m ----
void wunit_q5_k(uvec2 addr, uint row_byte, uint u, out float v[8]) {
  u32_buf b = u32_buf(addr);
  uint base = row_byte + (u >> 5) * 176u;
  uint e0 = (u & 31u) * 8u;
  uint j = e0 >> 6, s = (e0 >> 5) & 1u, l0 = e0 & 31u;
  vec2 dm = unpackHalf2x16(b.d[base >> 2]);
  uvec2 sm = q4k_scale_min(b, base, 2u * j + s);
  float d = dm.x * float(sm.x), mn = dm.y * float(sm.y);
  uint w = (base + 48u + 32u * j + l0) >> 2;
  uint q0 = b.d[w], q1 = b.d[w + 1u];
  uint wh = (base + 16u + l0) >> 2;
  uint h0 = b.d[wh], h1 = b.d[wh + 1u];
  int sh = int(s) * 4;
  int hb = int(2u * j + s);
  [[unroll]] for (int i = 0; i < 4; ++i) {
    v[i] = d * float(bitfieldExtract(q0, 8 * i + sh, 4) + (bitfieldExtract(h0, 8 * i + hb, 1) << 4)) - mn;
    v[i + 4] = d * float(bitfieldExtract(q1, 8 * i + sh, 4) + (bitfieldExtract(h1, 8 * i + hb, 1) << 4)) - mn;
  }
}
float welem_q5_k(uvec2 addr, uint row_byte, uint k) {
  u32_buf b = u32_buf(addr);
  uint base = row_byte + (k >> 8) * 176u;
  uint e = k & 255u;
  uint j = e >> 6, s = (e >> 5) & 1u, l = e & 31u;
  vec2 dm = unpackHalf2x16(b.d[base >> 2]);
  uvec2 sm = q4k_scale_min(b, base, 2u * j + s);
  uint q = ((load_u8(b, base + 48u + 32u * j + l) >> (4u * s)) & 15u) + (((load_u8(b, base + 16u + l) >> (2u * j + s)) & 1u) << 4);
  return dm.x * float(sm.x) * float(q) - dm.y * float(sm.y);
}

// ---- IQ4_NL / IQ4_XS: 4-bit indices into ggml's fixed non-linear table kvalues_iq4nl = {-127, -104,
// -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}. Instead of an indexed array (a local or
// constant-bank array serialises on divergent indices), the table is a degree-4 polynomial in the index
// that is within 0.48 of every entry (least squares; checked in float32 with and without fused
// multiply-add), rounded to the nearest integer by adding and subtracting 1.5 * 2^23: all full-rate
// arithmetic, exact for indices 0..15. `precise` keeps compilers from folding (p + c) - c back to p
// (Mesa does, for ops not marked exact). ----
vec4 iq4_values(vec4 n) {
  vec4 p = fma(fma(fma(fma(vec4(0.0013247202150523663), n, vec4(0.04121682420372963)), n, vec4(-1.5001835823059082)), n,
                   vec4(24.74324607849121)), n, vec4(-127.0436019897461));
  precise vec4 r = p + 12582912.0;
  precise vec4 t = r - 12582912.0;
  return t;
}
float iq4_value(uint n) { return iq4_values(vec4(float(n))).x; }

// IQ4_NL: {f16 d; uint8 qs[16]} = 18 bytes, nibbles as Q4_0; x = d * table[q].
void wunit_iq4_nl(uvec2 addr, uint row_byte, uint u, out float v[8]) {
  u32_buf b = u32_buf(addr);
  uint base = row_byte + (u >> 2) * 18u;
  float d = f16_to_f32(load_u16(b, base));
  uint sub = u & 3u;
  uvec2 q = load8_even(b, base + 2u + (sub & 1u) * 8u);
  int sh = int(sub >> 1) * 4;
  vec4 a = d * iq4_values(vec4(bitfieldExtract(q.x, sh, 4), bitfieldExtract(q.x, 8 + sh, 4), bitfieldExtract(q.x, 16 + sh, 4), bitfieldExtract(q.x, 24 + sh, 4)));
  vec4 c = d * iq4_values(vec4(bitfieldExtract(q.y, sh, 4), bitfieldExtract(q.y, 8 + sh, 4), bitfieldExtract(q.y, 16 + sh, 4), bitfieldExtract(q.y, 24 + sh, 4)));
  v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w;
  v[4] = c.x; v[5] = c.y; v[6] = c.z; v[7] = c.w;
}
float welem_iq4_nl(uvec2 addr, uint row_byte, uint k) {
  u32_buf b = u32_buf(addr);
  uint base = row_byte + (k >> 5) * 18u;
  uint j = k & 31u;
  uint byte = load_u8(b, base + 2u + (j & 15u));
  return f16_to_f32(load_u16(b, base)) * iq4_value((byte >> ((j >> 4) * 4u)) & 15u);
}

// IQ4_XS: {f16 d; uint16 scales_h; uint8 scales_l[4]; uint8 qs[128]} = 136 bytes per 256 (rows start
// 8-byte aligned). Sub-block ib = e/32 has the 6-bit scale ls = nibble ib%2 of scales_l[ib/2] | bits
// 2ib..2ib+1 of scales_h << 4 and its 16 bytes at qs[16ib] laid out as IQ4_NL's; x = d*(ls-32)*table[q].
float iq4xs_step(u32_buf b, uint base, uint ib) {
  uint w0 = b.d[base >> 2];  // d | scales_h << 16
  uint ls = ((b.d[(base >> 2) + 1u] >> (4u * ib)) & 15u) | (((w0 >> (16u + 2u * ib)) & 3u) << 4);
  return unpackHalf2x16(w0).x * float(int(ls) - 32);
}
void wunit_iq4_xs(uvec2 addr, uint row_byte, uint u, out float v[8]) {
  u32_buf b = u32_buf(addr);
  uint base = row_byte + (u >> 5) * 136u;
  uint e0 = (u & 31u) * 8u;
  uint ib = e0 >> 5, sub = (e0 >> 3) & 3u;
  float dl = iq4xs_step(b, base, ib);
  uint w = (base + 8u + 16u * ib + 8u * (sub & 1u)) >> 2;
  uvec2 q = uvec2(b.d[w], b.d[w + 1u]);
  int sh = int(sub >> 1) * 4;
  vec4 a = dl * iq4_values(vec4(bitfieldExtract(q.x, sh, 4), bitfieldExtract(q.x, 8 + sh, 4), bitfieldExtract(q.x, 16 + sh, 4), bitfieldExtract(q.x, 24 + sh, 4)));
  vec4 c = dl * iq4_values(vec4(bitfieldExtract(q.y, sh, 4), bitfieldExtract(q.y, 8 + sh, 4), bitfieldExtract(q.y, 16 + sh, 4), bitfieldExtract(q.y, 24 + sh, 4)));
  v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w;
  v[4] = c.x; v[5] = c.y; v[6] = c.z; v[7] = c.w;
}
float welem_iq4_xs(uvec2 addr, uint row_byte, uint k) {
  u32_buf b = u32_buf(addr);
  uint base = row_byte + (k >> 8) * 136u;
  uint e = k & 255u;
  uint ib = e >> 5, j = e & 31u;
  uint byte = load_u8(b, base + 8u + 16u * ib + (j & 15u));
  return iq4xs_step(b, base, ib) * iq4_value((byte >> ((j >> 4) * 4u)) & 15u);
}

// Any supported weight dtype, chosen at run time (EMBED; not the hot path).
float welem_any(uvec2 addr, uint row_byte, uint k, uint dt) {
  if (dt == 0u) return welem_f32(addr, row_byte, k);
  if (dt == 1u) return welem_f16(addr, row_byte, k);
  if (dt == 2u) return welem_bf16(addr, row_byte, k);
  if (dt == 10u) return welem_q8_0(addr, row_byte, k);
  if (dt == 11u) return welem_q4_0(addr, row_byte, k);
  if (dt == 12u) return welem_q4_1(addr, row_byte, k);
  if (dt == 13u) return welem_q5_0(addr, row_byte, k);
  if (dt == 14u) return welem_q5_1(addr, row_byte, k);
  if (dt == 15u) return welem_q2_k(addr, row_byte, k);
  if (dt == 16u) return welem_q3_k(addr, row_byte, k);
  if (dt == 17u) return welem_q4_k(addr, row_byte, k);
  if (dt == 18u) return welem_q5_k(addr, row_byte, k);
  if (dt == 19u) return welem_q6_k(addr, row_byte, k);
  if (dt == 20u) return welem_iq4_nl(addr, row_byte, k);
  if (dt == 21u) return welem_iq4_xs(addr, row_byte, k);
  return 0.0;
}

#endif
