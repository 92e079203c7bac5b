// Decode GEMV over block-quantized weights (included by gemv.comp when GEMV_BLOCK names a format):
// a "chunk" is the piece of one block that one invocation handles (whole 16-byte runs of quants and
// the scales they need). For every chunk the invocation loads its x elements once per x row and uses
// them for all NR weight rows of the workgroup; each format's inner loop is written for its layout, so
// 6-bit scales are decoded once per 32-element sub-block and nothing switches on the dtype per element.
//
// Why the bit tricks: int -> float conversion runs at a quarter of the FMA rate on current GPUs, which
// would cap a 4-bit GEMV far below the memory bound. b4() instead ORs each small integer into the
// mantissa of a float whose exponent makes the mantissa's unit 1 (2^23 + q or 2^15 + q) and subtracts
// that power of two, which is exact: one logic op and one add per element, no conversion.
//
// Expects from the includer: NR, RB, XS, SSQ_IN_LOOP and ssq[RB], pc (x, K), wsrc(n) (the weight tensor of row n: the fused
// SwiGLU GEMV reads two), xnorm(e) (the RMSNORM weight's elements e..e+3, or ones), the private arrays
// acc[NR*RB], wrow[NR] (byte offset of each weight row in its tensor) and xrow[RB] (vec4 index of each x row), and the x tile (xsh, XROW, XPAD,
// xk0) when XS.
#ifndef OCTO_GEMV_CHUNKS_GLSL
#define OCTO_GEMV_CHUNKS_GLSL

// Bytes 0..3 of t, each masked by m (at most 8 low bits), as exact floats minus `off`.
vec4 b4(uint t, uint m, float off) {
  uint h = t >> 16;
  vec4 f = vec4(uintBitsToFloat((t & m) | 0x4B000000u), uintBitsToFloat((t & (m << 8)) | 0x47000000u),
                uintBitsToFloat((h & m) | 0x4B000000u), uintBitsToFloat((h & (m << 8)) | 0x47000000u));
  return f - vec4(8388608.0 + off, 32768.0 + off, 8388608.0 + off, 32768.0 + off);
}

// The 8 nibbles of w as exact floats minus `off`: lo = the low nibbles of bytes 0..3, hi = the high
// ones; b4(w, 0xF, off) and b4(w >> 4, 0xF, off) with one shift instead of three. A nibble at bit p
// (p <= 19, so it stays below the exponent) ORed under the exponent 23 - p has a mantissa unit of 1;
// the three nibbles above bit 19 are taken from w >> 16.
void nib8(uint w, float off, out vec4 lo, out vec4 hi) {
  uint h = w >> 16;
  lo = vec4(uintBitsToFloat((w & 0xFu) | 0x4B000000u), uintBitsToFloat((w & 0xF00u) | 0x47000000u),
            uintBitsToFloat((w & 0xF0000u) | 0x43000000u), uintBitsToFloat((h & 0xF00u) | 0x47000000u)) -
       vec4(8388608.0 + off, 32768.0 + off, 128.0 + off, 32768.0 + off);
  hi = vec4(uintBitsToFloat((w & 0xF0u) | 0x49000000u), uintBitsToFloat((w & 0xF000u) | 0x45000000u),
            uintBitsToFloat((h & 0xF0u) | 0x49000000u), uintBitsToFloat((h & 0xF000u) | 0x45000000u)) -
       vec4(524288.0 + off, 2048.0 + off, 524288.0 + off, 2048.0 + off);
}

// Bits 0..3 of v (v < 16) moved to bit 0 of bytes 0..3 (the four shifted copies never overlap).
uint spread4(uint v) { return (v * 0x00204081u) & 0x01010101u; }

// Q5_0 / Q5_1: word i of a block's 16 quant bytes with the fifth bits from qh, as 5-bit values in bytes:
// x = elements 4i..4i+3 (low nibbles, qh bits 4i..), y = elements 16+4i.. (high nibbles, qh bits 16+4i..).
uvec2 q5_bytes(uint w, uint qh, uint i) {
  return uvec2((w & 0x0F0F0F0Fu) | (spread4((qh >> (4u * i)) & 15u) << 4),
               ((w >> 4) & 0x0F0F0F0Fu) | (spread4((qh >> (16u + 4u * i)) & 15u) << 4));
}

// 16 bytes at an even byte offset as four little-endian words. A misaligned run reads one more word,
// which may be the 2 bytes after the block: inside the buffer's allocation, since the allocator hands
// out power-of-two ranges and these block sizes (18, 22, 34, 210 bytes) never fill one exactly.
uvec4 load16_even(u32_buf b, uint off) {
  uint w = off >> 2;
  uvec4 a = uvec4(b.d[w], b.d[w + 1u], b.d[w + 2u], b.d[w + 3u]);
  if ((off & 2u) == 0u) return a;
  uint e = b.d[w + 4u];
  return uvec4((a.x >> 16) | (a.y << 16), (a.y >> 16) | (a.z << 16), (a.z >> 16) | (a.w << 16), (a.w >> 16) | (e << 16));
}

// Elements per block of the format (the chunk loop in gemv.comp walks K in whole blocks).
#if GEMV_BLOCK == 10 || (GEMV_BLOCK >= 11 && GEMV_BLOCK <= 14) || GEMV_BLOCK == 20
const uint CBE = 32u;
#else
const uint CBE = 256u;
#endif

// Elements e..e+3 of x row r (e a multiple of 4): from the shared tile (XS) or from memory.
vec4 xload(uint r, uint e) {
  if (XS) {
    uint q = (e - xk0) >> 2;
    return xsh[r * XROW + q + (q >> XPAD)];
  }
  vec4 v = v4_buf(pc.x).d[xrow[r] + (e >> 2)];
  if (SSQ_IN_LOOP) ssq[r] += dot(v, v);  // each element of x is loaded once per workgroup
  return v * xnorm(e);
}

// ---- Q4_K / Q5_K: 8 chunks per block. Chunk c: 64-element group j = c/2, half h = c%2: the 16 quant
// bytes qs[32j + 16h ..] hold elements 64j+16h+i (low nibbles, sub-block 2j) and 64j+32+16h+i (high
// nibbles, sub-block 2j+1). The 16-byte header (d, dmin, 12 scale bytes) is one uvec4. ----
// The two 6-bit scales (mins) come out in bits 0-5 and 8-13 of s (m). They become floats without an
// int -> float conversion (a quarter-rate instruction): ORed under the exponents 23 and 15 they are
// 2^23 + v and 2^15 + v exactly, and subtracting those powers of two is exact too.
void k4_scales(uvec4 hdr, uint j, out vec2 dsc, out vec2 mn) {
  vec2 dm = unpackHalf2x16(hdr.x);
  uint sh = 8u * ((2u * j) & 3u);
  uint A = hdr.y >> sh, B = hdr.z >> sh, C = hdr.w >> sh;
  uint s, m;
  if (j < 2u) {
    s = A & 0x3F3Fu;
    m = B & 0x3F3Fu;
  } else {
    s = (C & 0x0F0Fu) | ((A >> 2) & 0x3030u);
    m = ((C >> 4) & 0x0F0Fu) | ((B >> 2) & 0x3030u);
  }
  const vec2 big = vec2(8388608.0, 32768.0);
  dsc = dm.x * (vec2(uintBitsToFloat((s & 0xFFu) | 0x4B000000u), uintBitsToFloat((s & 0xFF00u) | 0x47000000u)) - big);
  mn = dm.y * (vec2(uintBitsToFloat((m & 0xFFu) | 0x4B000000u), uintBitsToFloat((m & 0xFF00u) | 0x47000000u)) - big);
}

// Q6_K: chunk (half hh, c1 = c % 2) of the 210-byte block at byte bs: its low quant bits qa (elements
// l0 + i, and their high nibbles 64 further) and qb (32 further), its high bits qh, and its four
// scales times d. The int8 scales (bytes 0 and 2 of each word after the shift) become exact floats
// without an int -> float conversion: sign bit flipped (v + 128); byte 0 ORed under the exponent 23 and
// byte 2, moved to bits 8-15, under the exponent 15 (a mantissa unit of 1 for both); minus those powers
// of two and 128.
void q6k_read(u32_buf wb, uint bs, uint hh, uint c1, out uvec4 qa, out uvec4 qb, out uvec4 qh, out vec4 dsc) {
  uint a = bs + 64u * hh + 16u * c1;
  qa = load16_even(wb, a);
  qb = load16_even(wb, a + 32u);
  qh = load16_even(wb, bs + 128u + 32u * hh + 16u * c1);
  uvec2 s = load8_even(wb, bs + 192u + 8u * hh);
  float d = f16_to_f32(load_u16(wb, bs + 208u));
  uint sh = 8u * c1, sx = (s.x >> sh) ^ 0x00800080u, sy = (s.y >> sh) ^ 0x00800080u;
  dsc = d * (vec4(uintBitsToFloat((sx & 0xFFu) | 0x4B000000u), uintBitsToFloat(((sx >> 8) & 0xFF00u) | 0x47000000u),
                  uintBitsToFloat((sy & 0xFFu) | 0x4B000000u), uintBitsToFloat(((sy >> 8) & 0xFF00u) | 0x47000000u)) -
             vec4(8388736.0, 32896.0, 8388736.0, 32896.0));
}

// Q2_K: chunk (half hh, s = c % 2) of the 84-byte block at word w: its 16 quant bytes (four 2-bit runs)
// and the runs' scales and mins times d and dmin.
void q2k_read(u32_buf wb, uint w, uint hh, uint s, out uvec4 q, out vec4 dsc, out vec4 dmn) {
  uint qw = w + 4u + 8u * hh + 4u * s;
  q = uvec4(wb.d[qw], wb.d[qw + 1u], wb.d[qw + 2u], wb.d[qw + 3u]);
  uint s0 = wb.d[w + 2u * hh], s1 = wb.d[w + 2u * hh + 1u];  // scale bytes 8h .. 8h+7
  vec2 dm = unpackHalf2x16(wb.d[w + 20u]);
  uint sh = 8u * s;
  uvec4 sc = uvec4((s0 >> sh) & 0xFFu, (s0 >> (sh + 16u)) & 0xFFu, (s1 >> sh) & 0xFFu, (s1 >> (sh + 16u)) & 0xFFu);
  dsc = dm.x * vec4(sc & 15u);
  dmn = dm.y * vec4(sc >> 4);
}

// Q3_K: chunk (half hh, c1 = c % 2) of the 110-byte block at byte bs: its 16 low-bit bytes, its 16
// hmask bytes shifted to the half's bits, and the four runs' signed scales times d.
void q3k_read(u32_buf wb, uint bs, uint hh, uint c1, out uvec4 q, out uvec4 hm, out vec4 dsc) {
  q = load16_even(wb, bs + 32u + 32u * hh + 16u * c1);
  hm = load16_even(wb, bs + 16u * c1) >> (4u * hh);
  float d = f16_to_f32(load_u16(wb, bs + 108u));
  uint i0 = 8u * hh + c1;
  dsc = d * vec4(q3k_scale(wb, bs, i0), q3k_scale(wb, bs, i0 + 2u), q3k_scale(wb, bs, i0 + 4u), q3k_scale(wb, bs, i0 + 6u));
}

// The integer-dot loops (the `fast` precision's decode GEMVs) replace the float ones below.
#ifdef GEMV_IDOT
#include "gemv_idot.glsl"
#else

#if GEMV_BLOCK == 17 || GEMV_BLOCK == 18
const uint CPB = 8u;
void gemv_chunk(uint c) {
  uint blk = c >> 3, ci = c & 7u, j = ci >> 1, hh = ci & 1u;
  uint e0 = blk * 256u + 64u * j + 16u * hh;  // first low-nibble element; high ones at +32
#if GEMV_BLOCK == 17
  const uint BQ = 9u;  // 144-byte blocks in uvec4s
#else
  const uint BQ = 11u;  // 176 bytes
#endif
  uvec4 hdr[NR], qs[NR];
#if GEMV_BLOCK == 18
  uvec4 qh[NR];
#endif
  [[unroll]] for (uint n = 0u; n < NR; ++n) {
    u4_buf wb = u4_buf(wsrc(n));
    uint q = (wrow[n] >> 4) + blk * BQ;
    hdr[n] = wb.d[q];
#if GEMV_BLOCK == 17
    qs[n] = wb.d[q + 1u + 2u * j + hh];
#else
    qh[n] = wb.d[q + 1u + hh];
    qs[n] = wb.d[q + 3u + 2u * j + hh];
#endif
  }
  float plo[NR * RB], phi[NR * RB];
  float xlo[RB], xhi[RB];
  [[unroll]] for (uint i = 0u; i < NR * RB; ++i) { plo[i] = 0.0; phi[i] = 0.0; }
  [[unroll]] for (uint r = 0u; r < RB; ++r) { xlo[r] = 0.0; xhi[r] = 0.0; }
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    vec4 xl[RB], xh[RB];
    [[unroll]] for (uint r = 0u; r < RB; ++r) {
      xl[r] = xload(r, e0 + 4u * i);
      xh[r] = xload(r, e0 + 32u + 4u * i);
      xlo[r] += (xl[r].x + xl[r].y) + (xl[r].z + xl[r].w);
      xhi[r] += (xh[r].x + xh[r].y) + (xh[r].z + xh[r].w);
    }
    [[unroll]] for (uint n = 0u; n < NR; ++n) {
      uint w = qs[n][i];
#if GEMV_BLOCK == 17
      vec4 vl, vh;
      nib8(w, 0.0, vl, vh);
#else
      uint hb = qh[n][i] >> (2u * j);
      vec4 vl = b4((w & 0x0F0F0F0Fu) | ((hb << 4) & 0x10101010u), 0x1Fu, 0.0);
      vec4 vh = b4(((w >> 4) & 0x0F0F0F0Fu) | ((hb << 3) & 0x10101010u), 0x1Fu, 0.0);
#endif
      [[unroll]] for (uint r = 0u; r < RB; ++r) {
        plo[n * RB + r] += dot(vl, xl[r]);
        phi[n * RB + r] += dot(vh, xh[r]);
      }
    }
  }
  [[unroll]] for (uint n = 0u; n < NR; ++n) {
    vec2 dsc, mn;
    k4_scales(hdr[n], j, dsc, mn);
    [[unroll]] for (uint r = 0u; r < RB; ++r)
      acc[n * RB + r] += dsc.x * plo[n * RB + r] + dsc.y * phi[n * RB + r] - (mn.x * xlo[r] + mn.y * xhi[r]);
  }
}
#endif

// ---- Q6_K: 4 chunks per 210-byte block. Chunk c: half h = c/2, l0 = 16*(c%2): ql[64h + l0 ..] and
// ql[64h + 32 + l0 ..] (16 bytes each) and qh[32h + l0 ..] (16 bytes) give the 64 elements
// 128h + 32g + l0 + i, g = 0..3, with scales[8h + c%2 + 2g]. ----
#if GEMV_BLOCK == 19
const uint CPB = 4u;
void gemv_chunk(uint c) {
  uint blk = c >> 2, hh = (c >> 1) & 1u, c1 = c & 1u;
  uint e0 = blk * 256u + 128u * hh + 16u * c1;
  uvec4 qa[NR], qb[NR], qh[NR];
  vec4 dsc[NR];
  [[unroll]] for (uint n = 0u; n < NR; ++n)
    q6k_read(u32_buf(wsrc(n)), wrow[n] + blk * 210u, hh, c1, qa[n], qb[n], qh[n], dsc[n]);
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    vec4 x0[RB], x1[RB], x2[RB], x3[RB];
    [[unroll]] for (uint r = 0u; r < RB; ++r) {
      x0[r] = xload(r, e0 + 4u * i);
      x1[r] = xload(r, e0 + 32u + 4u * i);
      x2[r] = xload(r, e0 + 64u + 4u * i);
      x3[r] = xload(r, e0 + 96u + 4u * i);
    }
    [[unroll]] for (uint n = 0u; n < NR; ++n) {
      uint a = qa[n][i], b = qb[n][i], h = qh[n][i];
      vec4 v0 = b4((a & 0x0F0F0F0Fu) | ((h << 4) & 0x30303030u), 0x3Fu, 32.0);
      vec4 v1 = b4((b & 0x0F0F0F0Fu) | ((h << 2) & 0x30303030u), 0x3Fu, 32.0);
      vec4 v2 = b4(((a >> 4) & 0x0F0F0F0Fu) | (h & 0x30303030u), 0x3Fu, 32.0);
      vec4 v3 = b4(((b >> 4) & 0x0F0F0F0Fu) | ((h >> 2) & 0x30303030u), 0x3Fu, 32.0);
      [[unroll]] for (uint r = 0u; r < RB; ++r)
        acc[n * RB + r] += dsc[n].x * dot(v0, x0[r]) + dsc[n].y * dot(v1, x1[r]) + dsc[n].z * dot(v2, x2[r]) +
                           dsc[n].w * dot(v3, x3[r]);
    }
  }
}
#endif

// ---- Q2_K (15): 4 chunks per 84-byte block. Chunk c: half h = c/2, s = c%2: qs[32h + 16s ..] (16
// bytes) hold the 2-bit quants of elements 128h + 32j + 16s + l, j = 0..3 (bits 2j), each j its own
// sub-block with scale byte scales[8h + 2j + s] (low nibble scale, high nibble min). ----
#if GEMV_BLOCK == 15
const uint CPB = 4u;
void gemv_chunk(uint c) {
  uint blk = c >> 2, hh = (c >> 1) & 1u, s = c & 1u;
  uint e0 = blk * 256u + 128u * hh + 16u * s;
  uvec4 q[NR];
  vec4 dsc[NR], dmn[NR];
  [[unroll]] for (uint n = 0u; n < NR; ++n)
    q2k_read(u32_buf(wsrc(n)), (wrow[n] >> 2) + blk * 21u, hh, s, q[n], dsc[n], dmn[n]);  // 84-byte blocks: word aligned
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    [[unroll]] for (uint j = 0u; j < 4u; ++j) {
      vec4 xv[RB];
      float xs[RB];
      [[unroll]] for (uint r = 0u; r < RB; ++r) {
        xv[r] = xload(r, e0 + 32u * j + 4u * i);
        xs[r] = (xv[r].x + xv[r].y) + (xv[r].z + xv[r].w);
      }
      [[unroll]] for (uint n = 0u; n < NR; ++n) {
        vec4 v = b4(q[n][i] >> (2u * j), 0x3u, 0.0);
        [[unroll]] for (uint r = 0u; r < RB; ++r) acc[n * RB + r] += dsc[n][j] * dot(v, xv[r]) - dmn[n][j] * xs[r];
      }
    }
  }
}
#endif

// ---- Q3_K (16): 4 chunks per 110-byte block. Chunk c: half h = c/2, l0 = 16*(c%2): qs[32h + l0 ..]
// and hmask[l0 ..] (16 bytes each) hold elements 128h + 32j + l0 + l, j = 0..3: 2 bits at 2j, the
// high bit at hmask bit 4h + j (clear means minus 4), signed 6-bit scale 8h + 2j + c%2. ----
#if GEMV_BLOCK == 16
const uint CPB = 4u;
void gemv_chunk(uint c) {
  uint blk = c >> 2, hh = (c >> 1) & 1u, c1 = c & 1u;
  uint e0 = blk * 256u + 128u * hh + 16u * c1;
  uvec4 q[NR], hm[NR];
  vec4 dsc[NR];
  [[unroll]] for (uint n = 0u; n < NR; ++n) q3k_read(u32_buf(wsrc(n)), wrow[n] + blk * 110u, hh, c1, q[n], hm[n], dsc[n]);
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    [[unroll]] for (uint j = 0u; j < 4u; ++j) {
      vec4 xv[RB];
      [[unroll]] for (uint r = 0u; r < RB; ++r) xv[r] = xload(r, e0 + 32u * j + 4u * i);
      [[unroll]] for (uint n = 0u; n < NR; ++n) {
        // q2 + 4 * high bit - 4: the 3-bit value minus 4.
        vec4 v = b4(((q[n][i] >> (2u * j)) & 0x03030303u) | (((hm[n][i] >> j) & 0x01010101u) << 2), 0x7u, 4.0);
        [[unroll]] for (uint r = 0u; r < RB; ++r) acc[n * RB + r] += dsc[n][j] * dot(v, xv[r]);
      }
    }
  }
}
#endif

// ---- Q8_0: 2 chunks per 34-byte block (16 int8 quants each, plus the block's f16 d). ----
#if GEMV_BLOCK == 10
const uint CPB = 2u;
void gemv_chunk(uint c) {
  uint blk = c >> 1, hh = c & 1u;
  uint e0 = blk * 32u + 16u * hh;
  uvec4 q[NR];
  float d[NR];
  [[unroll]] for (uint n = 0u; n < NR; ++n) {
    u32_buf wb = u32_buf(wsrc(n));
    uint bs = wrow[n] + blk * 34u;
    d[n] = f16_to_f32(load_u16(wb, bs));
    q[n] = load16_even(wb, bs + 2u + 16u * hh) ^ uvec4(0x80808080u);  // int8 -> q + 128
  }
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    vec4 xv[RB];
    [[unroll]] for (uint r = 0u; r < RB; ++r) xv[r] = xload(r, e0 + 4u * i);
    [[unroll]] for (uint n = 0u; n < NR; ++n) {
      vec4 v = b4(q[n][i], 0xFFu, 128.0);
      [[unroll]] for (uint r = 0u; r < RB; ++r) acc[n * RB + r] += d[n] * dot(v, xv[r]);
    }
  }
}
#endif

// ---- Q4_0 (11), Q4_1 (12), Q5_0 (13), Q5_1 (14): one chunk per 32-element block: 16 quant bytes, low
// nibbles elements 0..15, high nibbles 16..31 (Q5_x: fifth bit e of qh). x = d*q' + m, where
// q' = q - 8 (Q4_0) or q - 16 (Q5_0) and m = 0, or q' = q and m from the block (Q4_1, Q5_1). ----
#if GEMV_BLOCK >= 11 && GEMV_BLOCK <= 14
const uint CPB = 1u;
void gemv_chunk(uint c) {
  uint e0 = c * 32u;
  uvec4 q[NR];
  vec2 dm[NR];
#if GEMV_BLOCK == 13 || GEMV_BLOCK == 14
  uint qh[NR];
#endif
  [[unroll]] for (uint n = 0u; n < NR; ++n) {
    u32_buf wb = u32_buf(wsrc(n));
#if GEMV_BLOCK == 11
    uint bs = wrow[n] + c * 18u;
    dm[n] = vec2(f16_to_f32(load_u16(wb, bs)), 0.0);
    q[n] = load16_even(wb, bs + 2u);
#elif GEMV_BLOCK == 12
    uint w = (wrow[n] >> 2) + c * 5u;
    dm[n] = unpackHalf2x16(wb.d[w]);
    q[n] = uvec4(wb.d[w + 1u], wb.d[w + 2u], wb.d[w + 3u], wb.d[w + 4u]);
#elif GEMV_BLOCK == 13
    uint bs = wrow[n] + c * 22u;
    dm[n] = vec2(f16_to_f32(load_u16(wb, bs)), 0.0);
    qh[n] = load_u16(wb, bs + 2u) | (load_u16(wb, bs + 4u) << 16);
    q[n] = load16_even(wb, bs + 6u);
#else
    uint w = (wrow[n] >> 2) + c * 6u;
    dm[n] = unpackHalf2x16(wb.d[w]);
    qh[n] = wb.d[w + 1u];
    q[n] = uvec4(wb.d[w + 2u], wb.d[w + 3u], wb.d[w + 4u], wb.d[w + 5u]);
#endif
  }
#if GEMV_BLOCK == 11
  const float OFF = 8.0;
#elif GEMV_BLOCK == 13
  const float OFF = 16.0;
#else
  const float OFF = 0.0;
#endif
  float p[NR * RB];
  float xs[RB];
  [[unroll]] for (uint i = 0u; i < NR * RB; ++i) p[i] = 0.0;
  [[unroll]] for (uint r = 0u; r < RB; ++r) xs[r] = 0.0;
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    vec4 xl[RB], xh[RB];
    [[unroll]] for (uint r = 0u; r < RB; ++r) {
      xl[r] = xload(r, e0 + 4u * i);
      xh[r] = xload(r, e0 + 16u + 4u * i);
#if GEMV_BLOCK == 12 || GEMV_BLOCK == 14
      xs[r] += (xl[r].x + xl[r].y) + (xl[r].z + xl[r].w) + (xh[r].x + xh[r].y) + (xh[r].z + xh[r].w);
#endif
    }
    [[unroll]] for (uint n = 0u; n < NR; ++n) {
      uint w = q[n][i];
#if GEMV_BLOCK == 11 || GEMV_BLOCK == 12
      vec4 vl, vh;
      nib8(w, OFF, vl, vh);
#else
      uvec2 b = q5_bytes(w, qh[n], i);
      vec4 vl = b4(b.x, 0x1Fu, OFF), vh = b4(b.y, 0x1Fu, OFF);
#endif
      [[unroll]] for (uint r = 0u; r < RB; ++r) p[n * RB + r] += dot(vl, xl[r]) + dot(vh, xh[r]);
    }
  }
  [[unroll]] for (uint n = 0u; n < NR; ++n)
    [[unroll]] for (uint r = 0u; r < RB; ++r) acc[n * RB + r] += dm[n].x * p[n * RB + r] + dm[n].y * xs[r];
}
#endif

// ---- IQ4_NL (20), IQ4_XS (21): one chunk per 32-element run (IQ4_NL: a whole 18-byte block; IQ4_XS: a
// sub-block, 8 per 136-byte block): 16 index bytes, low nibbles elements 0..15, high nibbles 16..31,
// mapped through the table (iq4_values, weights.glsl) and scaled by the run's step (IQ4_NL: d; IQ4_XS:
// d * (ls - 32)). ----
#if GEMV_BLOCK == 20 || GEMV_BLOCK == 21
#if GEMV_BLOCK == 20
const uint CPB = 1u;
#else
const uint CPB = 8u;
#endif
void gemv_chunk(uint c) {
  uint e0 = c * 32u;
  uvec4 q[NR];
  float dl[NR];
  [[unroll]] for (uint n = 0u; n < NR; ++n) {
    u32_buf wb = u32_buf(wsrc(n));  // the fused SwiGLU GEMV reads gate and up rows from two tensors
#if GEMV_BLOCK == 20
    uint bs = wrow[n] + c * 18u;
    dl[n] = f16_to_f32(load_u16(wb, bs));
    q[n] = load16_even(wb, bs + 2u);
#else
    uint bs = wrow[n] + (c >> 3) * 136u, ib = c & 7u;
    dl[n] = iq4xs_step(wb, bs, ib);
    uint w = (bs + 8u + 16u * ib) >> 2;
    q[n] = uvec4(wb.d[w], wb.d[w + 1u], wb.d[w + 2u], wb.d[w + 3u]);
#endif
  }
  float p[NR * RB];
  [[unroll]] for (uint i = 0u; i < NR * RB; ++i) p[i] = 0.0;
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    vec4 xl[RB], xh[RB];
    [[unroll]] for (uint r = 0u; r < RB; ++r) {
      xl[r] = xload(r, e0 + 4u * i);
      xh[r] = xload(r, e0 + 16u + 4u * i);
    }
    [[unroll]] for (uint n = 0u; n < NR; ++n) {
      uint w = q[n][i];
      vec4 vl, vh;
      nib8(w, 0.0, vl, vh);
      vl = iq4_values(vl);
      vh = iq4_values(vh);
      [[unroll]] for (uint r = 0u; r < RB; ++r) p[n * RB + r] += dot(vl, xl[r]) + dot(vh, xh[r]);
    }
  }
  [[unroll]] for (uint n = 0u; n < NR; ++n)
    [[unroll]] for (uint r = 0u; r < RB; ++r) acc[n * RB + r] += dl[n] * p[n * RB + r];
}
#endif

#endif  // GEMV_IDOT

#endif
