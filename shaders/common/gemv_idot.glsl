// Decode GEMV chunk loops on packed 8-bit integer dot products (gemv.comp with GEMV_IDOT: the `fast`
// precision on devices that accelerate them; the contract is docs/precision.md "Decode GEMVs on integer
// dot products"). Included by gemv_chunks.glsl in place of its float loops for Q8_0, Q4_0, Q4_1, Q5_0,
// Q5_1, Q2_K, Q3_K, Q4_K, Q5_K and Q6_K (the IQ4 formats keep theirs: their codebook costs the same
// arithmetic either way); the chunks (which invocation reads which 16-byte runs of a block) are the
// same, only the arithmetic changes.
//
// Why: the float loops of the 4- to 6-bit formats are bound by their arithmetic, not by memory (about 4
// instructions per weight and row: each quant turned into a float, then an FMA; docs/vulkan.md). Here
// each invocation rounds the x elements its chunk needs (which it loads anyway, once per workgroup) to
// int8 per aligned 16-element run, in registers, and every weight row of the workgroup then costs one
// OpSDot per 4 quants (plus the masks that pick them out). Rounding the whole x row into shared memory
// first lost twice on the H200: git 3c031b0 (uncoalesced fill), and bb7774c (coalesced, the first
// chunk's weight loads issued before the barrier) at 0.23-0.98x of this path's GEMV bandwidth and 0.61x
// of its 7B decode (benchmarks/results/2026-11-29-h200-xq); it was removed.
//
// A run of 16 elements v (x times the RMSNORM weight when fused) becomes v^ = step * q with
// step = max|v| / 127 and q = roundEven(v * 127 / max|v|) (q = 0 for a run whose max is below 1e-30);
// the kernel then computes W v^ exactly, up to f32 rounding of the per-chunk sums. A run holding an
// infinity or a NaN gets an infinite or NaN step, so the outputs it feeds are not finite either.
#ifndef OCTO_GEMV_IDOT_GLSL
#define OCTO_GEMV_IDOT_GLSL

#include "x_runs.glsl"

// Elements e .. e+15 of x row 0 (e a multiple of 16): with X8, the run rounded before this launch
// (pc.x then points at the runs, x_runs.glsl's layout; an RMSNORM-fused GEMV sums their squares as it
// goes: a workgroup's chunks load each run once, as xload's SSQ_IN_LOOP relies on); else through xload
// (the norm weight, the sum of squares) and rounded here.
xrun xquant16(uint e) {
  if (X8) {
    xrun r;
    r.q = u4_buf(pc.x).d[e >> 4];
    // The run's step bits, sum of quants and sum of squares in one 16-byte load (x_runs.glsl).
    uvec4 m = u4_buf(pc.x).d[(pc.K >> 4) + (e >> 4)];
    r.step = uintBitsToFloat(m.x);
    r.qsum = int(m.y);
    if (NORM) ssq[0] += uintBitsToFloat(m.z);
    return r;
  }
  return round_run(xload(0u, e), xload(0u, e + 4u), xload(0u, e + 8u), xload(0u, e + 12u));
}

#if GEMV_BLOCK == 10
// ---- Q8_0: chunk c = half hh of block blk: its 16 int8 quants against one x run. ----
const uint CPB = 2u;
void gemv_chunk(uint c) {
  uint blk = c >> 1, hh = c & 1u;
  uvec4 q[NR];
  float d[NR];
  [[unroll]] for (uint n = 0u; n < NR; ++n) {
    u32_buf wb = u32_buf(wsrc(n));
    uint bs = wrow[n] + blk * 34u;
    d[n] = f16_to_f32(load_u16(wb, bs));
    q[n] = load16_even(wb, bs + 2u + 16u * hh);
  }
  xrun x = xquant16(blk * 32u + 16u * hh);
  [[unroll]] for (uint n = 0u; n < NR; ++n) acc[n] += d[n] * (x.step * float(sdot16(q[n], x.q)));
}
#endif

#if GEMV_BLOCK == 11
// ---- Q4_0: one chunk per block: low nibbles elements 0..15, high ones 16..31; w = d (q - 8). ----
const uint CPB = 1u;
void gemv_chunk(uint c) {
  uvec4 q[NR];
  float d[NR];
  [[unroll]] for (uint n = 0u; n < NR; ++n) {
    u32_buf wb = u32_buf(wsrc(n));
    uint bs = wrow[n] + c * 18u;
    d[n] = f16_to_f32(load_u16(wb, bs));
    q[n] = load16_even(wb, bs + 2u);
  }
  xrun xl = xquant16(c * 32u), xh = xquant16(c * 32u + 16u);
  [[unroll]] for (uint n = 0u; n < NR; ++n) {
    int pl = sdot16(q[n] & 0x0F0F0F0Fu, xl.q) - 8 * xl.qsum;
    int ph = sdot16((q[n] >> 4) & 0x0F0F0F0Fu, xh.q) - 8 * xh.qsum;
    acc[n] += d[n] * (xl.step * float(pl) + xh.step * float(ph));
  }
}
#endif

#if GEMV_BLOCK == 17 || GEMV_BLOCK == 18
// ---- Q4_K / Q5_K: chunk c of a block = 64-element group j, half hh: the low nibbles are elements
// 64j + 16hh + i (sub-block 2j), the high ones 32 further (sub-block 2j + 1). With HALVES = 2 a chunk is
// the whole group j (both halves): the block's 16-byte header (d, dmin, the 6-bit scales), which every
// chunk loads beside its quants, is then loaded and decoded once per 32 quant bytes instead of per 16. ----
layout(constant_id = 9) const uint HALVES = 1u;  // halves a chunk takes: 1 or 2 (the planner's rule)
const uint CPB = 8u / HALVES;
void gemv_chunk(uint c) {
  uint blk = c / CPB, ci = c % CPB;
  uint j = HALVES == 2u ? ci : ci >> 1, hh0 = HALVES == 2u ? 0u : ci & 1u;
#if GEMV_BLOCK == 17
  const uint BQ = 9u;  // 144-byte blocks in uvec4s
#else
  const uint BQ = 11u;  // 176 bytes
#endif
  uvec4 hdr[NR], lo[NR * HALVES], hi[NR * HALVES];
  [[unroll]] for (uint n = 0u; n < NR; ++n) {
    u4_buf wb = u4_buf(wsrc(n));
    uint q = (wrow[n] >> 4) + blk * BQ;
    hdr[n] = wb.d[q];
    [[unroll]] for (uint h = 0u; h < HALVES; ++h) {
      uint hh = hh0 + h;
#if GEMV_BLOCK == 17
      uvec4 w = wb.d[q + 1u + 2u * j + hh];
      lo[n * HALVES + h] = w & 0x0F0F0F0Fu;
      hi[n * HALVES + h] = (w >> 4) & 0x0F0F0F0Fu;
#else
      uvec4 qh = wb.d[q + 1u + hh] >> (2u * j);
      uvec4 w = wb.d[q + 3u + 2u * j + hh];
      lo[n * HALVES + h] = (w & 0x0F0F0F0Fu) | ((qh << 4) & 0x10101010u);
      hi[n * HALVES + h] = ((w >> 4) & 0x0F0F0F0Fu) | ((qh << 3) & 0x10101010u);
#endif
    }
  }
  xrun xl[HALVES], xh[HALVES];
  vec2 xs = vec2(0.0);  // the sums of the runs' x^, low sub-block and high
  [[unroll]] for (uint h = 0u; h < HALVES; ++h) {
    uint e0 = blk * 256u + 64u * j + 16u * (hh0 + h);
    xl[h] = xquant16(e0);
    xh[h] = xquant16(e0 + 32u);
    xs += vec2(xl[h].step * float(xl[h].qsum), xh[h].step * float(xh[h].qsum));
  }
  [[unroll]] for (uint n = 0u; n < NR; ++n) {
    vec2 dsc, mn;
    k4_scales(hdr[n], j, dsc, mn);
    vec2 p = vec2(0.0);
    [[unroll]] for (uint h = 0u; h < HALVES; ++h)
      p += vec2(xl[h].step * float(sdot16(lo[n * HALVES + h], xl[h].q)), xh[h].step * float(sdot16(hi[n * HALVES + h], xh[h].q)));
    acc[n] += dsc.x * p.x + dsc.y * p.y - (mn.x * xs.x + mn.y * xs.y);  // (HALVES = 1: the same bits as before)
  }
}
#endif

#if GEMV_BLOCK == 19
// ---- Q6_K: chunk c = half hh, l0 = 16 (c % 2): the 16-element runs 128hh + 32g + l0 (g = 0..3, scale
// 8hh + c%2 + 2g), 6-bit values v in 0..63; w = d sc (v - 32). ----
const uint CPB = 4u;
void gemv_chunk(uint c) {
  uint blk = c >> 2, hh = (c >> 1) & 1u, c1 = c & 1u;
  uint e0 = blk * 256u + 128u * hh + 16u * c1;
  uvec4 v0[NR], v1[NR], v2[NR], v3[NR];
  vec4 dsc[NR];
  [[unroll]] for (uint n = 0u; n < NR; ++n) {
    uvec4 qa, qb, qh;
    q6k_read(u32_buf(wsrc(n)), wrow[n] + blk * 210u, hh, c1, qa, qb, qh, dsc[n]);
    v0[n] = (qa & 0x0F0F0F0Fu) | ((qh << 4) & 0x30303030u);
    v1[n] = (qb & 0x0F0F0F0Fu) | ((qh << 2) & 0x30303030u);
    v2[n] = ((qa >> 4) & 0x0F0F0F0Fu) | (qh & 0x30303030u);
    v3[n] = ((qb >> 4) & 0x0F0F0F0Fu) | ((qh >> 2) & 0x30303030u);
  }
  xrun x0 = xquant16(e0), x1 = xquant16(e0 + 32u), x2 = xquant16(e0 + 64u), x3 = xquant16(e0 + 96u);
  vec4 steps = vec4(x0.step, x1.step, x2.step, x3.step);
  ivec4 off = 32 * ivec4(x0.qsum, x1.qsum, x2.qsum, x3.qsum);
  [[unroll]] for (uint n = 0u; n < NR; ++n) {
    ivec4 p = ivec4(sdot16(v0[n], x0.q), sdot16(v1[n], x1.q), sdot16(v2[n], x2.q), sdot16(v3[n], x3.q)) - off;
    acc[n] += dot(dsc[n], steps * vec4(p));
  }
}
#endif

#if GEMV_BLOCK >= 12 && GEMV_BLOCK <= 14
// ---- Q4_1 (12), Q5_0 (13), Q5_1 (14): one chunk per 32-element block, low nibbles elements 0..15,
// high ones 16..31 (Q5_x: the fifth bit of element e is bit e of qh). w = d (v - 16) (Q5_0) or
// d v + m (Q4_1, Q5_1). ----
const uint CPB = 1u;
void gemv_chunk(uint c) {
  uvec4 lo[NR], hi[NR];
  vec2 dm[NR];
  [[unroll]] for (uint n = 0u; n < NR; ++n) {
    u32_buf wb = u32_buf(wsrc(n));
    uvec4 q;
#if GEMV_BLOCK == 12
    uint w = (wrow[n] >> 2) + c * 5u;  // 20-byte blocks are word aligned
    dm[n] = unpackHalf2x16(wb.d[w]);
    q = uvec4(wb.d[w + 1u], wb.d[w + 2u], wb.d[w + 3u], wb.d[w + 4u]);
    lo[n] = q & 0x0F0F0F0Fu;
    hi[n] = (q >> 4) & 0x0F0F0F0Fu;
#else
#if GEMV_BLOCK == 13
    uint bs = wrow[n] + c * 22u;
    dm[n] = vec2(f16_to_f32(load_u16(wb, bs)), 0.0);
    uint qh = load_u16(wb, bs + 2u) | (load_u16(wb, bs + 4u) << 16);
    q = load16_even(wb, bs + 6u);
#else
    uint w = (wrow[n] >> 2) + c * 6u;  // 24-byte blocks
    dm[n] = unpackHalf2x16(wb.d[w]);
    uint qh = wb.d[w + 1u];
    q = uvec4(wb.d[w + 2u], wb.d[w + 3u], wb.d[w + 4u], wb.d[w + 5u]);
#endif
    [[unroll]] for (uint i = 0u; i < 4u; ++i) {
      uvec2 b = q5_bytes(q[i], qh, i);
      lo[n][i] = b.x;
      hi[n][i] = b.y;
    }
#endif
  }
  xrun xl = xquant16(c * 32u), xh = xquant16(c * 32u + 16u);
#if GEMV_BLOCK == 13
  [[unroll]] for (uint n = 0u; n < NR; ++n) {
    int pl = sdot16(lo[n], xl.q) - 16 * xl.qsum;
    int ph = sdot16(hi[n], xh.q) - 16 * xh.qsum;
    acc[n] += dm[n].x * (xl.step * float(pl) + xh.step * float(ph));
  }
#else
  float xs = xl.step * float(xl.qsum) + xh.step * float(xh.qsum);  // the sum of the run's x^
  [[unroll]] for (uint n = 0u; n < NR; ++n)
    acc[n] += dm[n].x * (xl.step * float(sdot16(lo[n], xl.q)) + xh.step * float(sdot16(hi[n], xh.q))) + dm[n].y * xs;
#endif
}
#endif

#if GEMV_BLOCK == 15
// ---- Q2_K: chunk c = half hh, s = c % 2: the 16 bytes qs[32hh + 16s ..] hold four runs, elements
// 128hh + 32j + 16s + l (bits 2j), each with its scale byte 8hh + 2j + s (low nibble scale, high
// nibble min): w = d sc q - dmin m. ----
const uint CPB = 4u;
void gemv_chunk(uint c) {
  uint blk = c >> 2, hh = (c >> 1) & 1u, s = c & 1u;
  uint e0 = blk * 256u + 128u * hh + 16u * s;
  uvec4 q[NR];
  vec4 dsc[NR], dmn[NR];
  [[unroll]] for (uint n = 0u; n < NR; ++n)
    q2k_read(u32_buf(wsrc(n)), (wrow[n] >> 2) + blk * 21u, hh, s, q[n], dsc[n], dmn[n]);  // 84-byte blocks: word aligned
  xrun x0 = xquant16(e0), x1 = xquant16(e0 + 32u), x2 = xquant16(e0 + 64u), x3 = xquant16(e0 + 96u);
  vec4 steps = vec4(x0.step, x1.step, x2.step, x3.step);
  vec4 sums = steps * vec4(ivec4(x0.qsum, x1.qsum, x2.qsum, x3.qsum));
  [[unroll]] for (uint n = 0u; n < NR; ++n) {
    const uvec4 m = uvec4(0x03030303u);
    ivec4 p = ivec4(sdot16(q[n] & m, x0.q), sdot16((q[n] >> 2) & m, x1.q), sdot16((q[n] >> 4) & m, x2.q),
                    sdot16((q[n] >> 6) & m, x3.q));
    acc[n] += dot(dsc[n], steps * vec4(p)) - dot(dmn[n], sums);
  }
}
#endif

#if GEMV_BLOCK == 16
// ---- Q3_K: chunk c = half hh, c1 = c % 2: the 16 bytes qs[32hh + 16c1 ..] and hmask[16c1 ..] hold
// four runs, elements 128hh + 32j + 16c1 + l: 2 bits at 2j, the high bit at hmask bit 4hh + j; the
// 3-bit value v = q2 + 4 high in 0..7, w = d sc (v - 4) with the signed 6-bit scale 8hh + 2j + c1. ----
const uint CPB = 4u;
void gemv_chunk(uint c) {
  uint blk = c >> 2, hh = (c >> 1) & 1u, c1 = c & 1u;
  uint e0 = blk * 256u + 128u * hh + 16u * c1;
  uvec4 q[NR], hm[NR];
  vec4 dsc[NR];
  [[unroll]] for (uint n = 0u; n < NR; ++n) q3k_read(u32_buf(wsrc(n)), wrow[n] + blk * 110u, hh, c1, q[n], hm[n], dsc[n]);
  xrun x0 = xquant16(e0), x1 = xquant16(e0 + 32u), x2 = xquant16(e0 + 64u), x3 = xquant16(e0 + 96u);
  vec4 steps = vec4(x0.step, x1.step, x2.step, x3.step);
  ivec4 off = 4 * ivec4(x0.qsum, x1.qsum, x2.qsum, x3.qsum);
  [[unroll]] for (uint n = 0u; n < NR; ++n) {
    const uvec4 m2 = uvec4(0x03030303u), m1 = uvec4(0x01010101u);
    ivec4 p = ivec4(sdot16((q[n] & m2) | ((hm[n] & m1) << 2), x0.q),
                    sdot16(((q[n] >> 2) & m2) | (((hm[n] >> 1) & m1) << 2), x1.q),
                    sdot16(((q[n] >> 4) & m2) | (((hm[n] >> 2) & m1) << 2), x2.q),
                    sdot16(((q[n] >> 6) & m2) | (((hm[n] >> 3) & m1) << 2), x3.q)) - off;
    acc[n] += dot(dsc[n], steps * vec4(p));
  }
}
#endif

#endif
