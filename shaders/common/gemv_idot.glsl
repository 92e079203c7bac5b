// Decode GEMV chunk loops on packed 8-bit integer dot products (gemv.comp with GEMV_IDOT, the `fast`
// precision; the contract is docs/precision.md "Decode GEMVs on integer dot products"). Included by
// gemv_chunks.glsl in place of its float loops; the chunks (which invocation reads which 16-byte runs of
// a block) are the same, only the arithmetic changes.
//
// gemv.comp's prologue has quantized the workgroup's x row (times the RMSNORM weight, if fused) into
// shared memory, per 32-element block b:
//   xq[2b], xq[2b + 1]  elements 0..15 and 16..31 as int8, q = roundEven(x * 127 / max|x|)
//   xqd[b]              the block's step max|x| / 127 (x ~ step * q)
//   xqs[b]              the sums of the rounded x (step * q) over elements 0..15 and 16..31 (the
//                       formats' offsets and mins multiply sums of x)
// Each weight chunk then costs one OpSDot (4 products summed in int32) per 4 elements instead of
// 4 conversions and 4 FMAs, and x comes from shared memory instead of L2.
//
// Weight quants go in unsigned (nibbles, 6-bit values with their offset applied through the sums), so
// every byte fed to the signed dot is in 0..63 or, for Q8_0, the quant itself.
#ifndef OCTO_GEMV_IDOT_GLSL
#define OCTO_GEMV_IDOT_GLSL

#extension GL_EXT_spirv_intrinsics : require

// OpSDot (SPV_KHR_integer_dot_product, opcode 4450) on two words of 4 packed int8, PackedVectorFormat4x8Bit
// (literal 0): Debian's glslang has no GL_EXT_integer_dot_product, so the instruction is declared here.
// Capabilities: DotProduct (6019), DotProductInput4x8BitPacked (6018).
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int octo_sdot4x8(uint a, uint b, spirv_literal int packed_format);
int sdot4(uint a, uint b) { return octo_sdot4x8(a, b, 0); }
// The sum of four sdot4s of a uvec4 of weight bytes against 16 quantized x.
int sdot16(uvec4 w, uvec4 x) { return (sdot4(w.x, x.x) + sdot4(w.y, x.y)) + (sdot4(w.z, x.z) + sdot4(w.w, x.w)); }

#if GEMV_BLOCK == 10
// ---- Q8_0: chunk c = half hh of block blk: 16 int8 quants against x's half-block. ----
const uint CPB = 2u;
void gemv_chunk(uint c) {
  uint blk = c >> 1, hh = c & 1u;
  uvec4 xv = xq[c];
  float dx = xqd[blk];
  [[unroll]] for (uint n = 0u; n < NR; ++n) {
    u32_buf wb = u32_buf(wsrc(n));
    uint bs = wrow[n] + blk * 34u;
    float d = f16_to_f32(load_u16(wb, bs));
    uvec4 q = load16_even(wb, bs + 2u + 16u * hh);
    acc[n] += d * dx * float(sdot16(q, xv));
  }
}
#endif

#if GEMV_BLOCK == 11
// ---- Q4_0: one chunk per block: low nibbles elements 0..15, high 16..31; x = d (q - 8). ----
const uint CPB = 1u;
void gemv_chunk(uint c) {
  uvec4 xl = xq[2u * c], xh = xq[2u * c + 1u];
  float dx = xqd[c];
  vec2 s = xqs[c];
  [[unroll]] for (uint n = 0u; n < NR; ++n) {
    u32_buf wb = u32_buf(wsrc(n));
    uint bs = wrow[n] + c * 18u;
    float d = f16_to_f32(load_u16(wb, bs));
    uvec4 q = load16_even(wb, bs + 2u);
    int p = sdot16(q & 0x0F0F0F0Fu, xl) + sdot16((q >> 4) & 0x0F0F0F0Fu, xh);
    acc[n] += d * (dx * float(p) - 8.0 * (s.x + s.y));
  }
}
#endif

#if GEMV_BLOCK == 17 || GEMV_BLOCK == 18
// ---- Q4_K / Q5_K: chunk c of a block = 64-element group j, half hh: low nibbles are elements
// 64j + 16hh + i (sub-block 2j = x block 8 blk + 2j), high nibbles 32 further (sub-block 2j + 1). ----
const uint CPB = 8u;
void gemv_chunk(uint c) {
  uint blk = c >> 3, ci = c & 7u, j = ci >> 1, hh = ci & 1u;
  uint bl = blk * 8u + 2u * j;  // x block of the low nibbles; bl + 1 the high ones
  uvec4 xl = xq[2u * bl + hh], xh = xq[2u * bl + 2u + hh];
  float dxl = xqd[bl], dxh = xqd[bl + 1u];
  float sl = xqs[bl][hh], sh = xqs[bl + 1u][hh];
#if GEMV_BLOCK == 17
  const uint BQ = 9u;  // 144-byte blocks in uvec4s
#else
  const uint BQ = 11u;  // 176 bytes
#endif
  [[unroll]] for (uint n = 0u; n < NR; ++n) {
    u4_buf wb = u4_buf(wsrc(n));
    uint q = (wrow[n] >> 4) + blk * BQ;
    uvec4 hdr = wb.d[q];
#if GEMV_BLOCK == 17
    uvec4 w = wb.d[q + 1u + 2u * j + hh];
    uvec4 lo = w & 0x0F0F0F0Fu, hi = (w >> 4) & 0x0F0F0F0Fu;
#else
    uvec4 qh = wb.d[q + 1u + hh] >> (2u * j);
    uvec4 w = wb.d[q + 3u + 2u * j + hh];
    uvec4 lo = (w & 0x0F0F0F0Fu) | ((qh << 4) & 0x10101010u);
    uvec4 hi = ((w >> 4) & 0x0F0F0F0Fu) | ((qh << 3) & 0x10101010u);
#endif
    vec2 dsc, mn;
    k4_scales(hdr, j, dsc, mn);
    acc[n] += dsc.x * dxl * float(sdot16(lo, xl)) + dsc.y * dxh * float(sdot16(hi, xh)) - (mn.x * sl + mn.y * sh);
  }
}
#endif

#if GEMV_BLOCK == 19
// ---- Q6_K: chunk c = half hh, l0 = 16 (c % 2): the 16-element runs 128hh + 32g + l0 (g = 0..3, x
// block 8 blk + 4hh + g, its half c % 2), 6-bit values v in 0..63 with scale g; x = d sc (v - 32). ----
const uint CPB = 4u;
void gemv_chunk(uint c) {
  uint blk = c >> 2, hh = (c >> 1) & 1u, c1 = c & 1u;
  uint b0 = blk * 8u + 4u * hh;
  uvec4 x0 = xq[2u * b0 + c1], x1 = xq[2u * b0 + 2u + c1], x2 = xq[2u * b0 + 4u + c1], x3 = xq[2u * b0 + 6u + c1];
  vec4 dx = vec4(xqd[b0], xqd[b0 + 1u], xqd[b0 + 2u], xqd[b0 + 3u]);
  vec4 sx = vec4(xqs[b0][c1], xqs[b0 + 1u][c1], xqs[b0 + 2u][c1], xqs[b0 + 3u][c1]);
  [[unroll]] for (uint n = 0u; n < NR; ++n) {
    u32_buf wb = u32_buf(wsrc(n));
    uint bs = wrow[n] + blk * 210u;
    uint a0 = bs + 64u * hh + 16u * c1;
    uvec4 qa = load16_even(wb, a0), qb = load16_even(wb, a0 + 32u);
    uvec4 qh = load16_even(wb, bs + 128u + 32u * hh + 16u * c1);
    uvec2 s = load8_even(wb, bs + 192u + 8u * hh);
    float d = f16_to_f32(load_u16(wb, bs + 208u));
    int sh = int(8u * c1);
    vec4 dsc = d * vec4(bitfieldExtract(int(s.x), sh, 8), bitfieldExtract(int(s.x), sh + 16, 8),
                        bitfieldExtract(int(s.y), sh, 8), bitfieldExtract(int(s.y), sh + 16, 8));
    uvec4 v0 = (qa & 0x0F0F0F0Fu) | ((qh << 4) & 0x30303030u);
    uvec4 v1 = (qb & 0x0F0F0F0Fu) | ((qh << 2) & 0x30303030u);
    uvec4 v2 = ((qa >> 4) & 0x0F0F0F0Fu) | (qh & 0x30303030u);
    uvec4 v3 = ((qb >> 4) & 0x0F0F0F0Fu) | ((qh >> 2) & 0x30303030u);
    vec4 p = vec4(float(sdot16(v0, x0)), float(sdot16(v1, x1)), float(sdot16(v2, x2)), float(sdot16(v3, x3)));
    acc[n] += dot(dsc, dx * p - 32.0 * sx);
  }
}
#endif

#endif
