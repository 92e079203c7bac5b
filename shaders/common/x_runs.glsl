// x rounded to int8 in runs of 16 elements (docs/precision.md item 4): the arithmetic shared by the
// integer-dot GEMV loops (gemv_idot.glsl, which round each chunk's runs in registers) and
// gemv_quantize_x.comp (which rounds a whole row once, for OCTO_GEMV_X8), so both give the same runs.
#ifndef OCTO_X_RUNS_GLSL
#define OCTO_X_RUNS_GLSL

#extension GL_EXT_spirv_intrinsics : require

// OpSDot (SPV_KHR_integer_dot_product, opcode 4450) on two words of 4 packed int8,
// PackedVectorFormat4x8Bit (literal 0): Debian's glslang has no GL_EXT_integer_dot_product, so the
// instruction is declared here. Capabilities: DotProduct (6019), DotProductInput4x8BitPacked (6018).
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int octo_sdot4x8(uint a, uint b, spirv_literal int packed_format);
int sdot4(uint a, uint b) { return octo_sdot4x8(a, b, 0); }
// The sum of four sdot4s: 16 weight bytes against a run's 16 quantized x.
int sdot16(uvec4 w, uvec4 x) { return (sdot4(w.x, x.x) + sdot4(w.y, x.y)) + (sdot4(w.z, x.z) + sdot4(w.w, x.w)); }

// Four values already scaled into [-127, 127] as four int8 bytes. Adding 1.5 * 2^23 leaves
// roundEven(t) in the float's low mantissa bits (the mantissa's unit is 1 there): no float -> int
// conversion, a quarter-rate instruction.
uint pack_q4(vec4 t) {
  uvec4 u = floatBitsToUint(t + 12582912.0) & 0xFFu;
  return u.x | (u.y << 8) | (u.z << 16) | (u.w << 24);
}

// A row's runs as their writers leave them (gemv_quantize_x.comp, or the GEMV_ADD that wrote the row:
// gemv.comp ROUND) and the GEMVs read them (X8): K / 16 uvec4s of quants, then K / 16 uvec4s of the
// run's step bits, sum of quants, sum of squares of x (not times the norm weight; float bits) and 0,
// one 16-byte load. An RMSNORM-fused reader sums the squares into its row's inverse RMS, which then
// scales its finished dot products: the steps hold no inverse RMS, so a writer that sees only its own
// runs can round them.

// A quantized run of x: 16 int8, its step, and the sum of its quants (the formats' offsets and mins
// multiply sums of x).
struct xrun {
  uvec4 q;
  float step;
  int qsum;
};

// Round a run v0..v3 (16 elements): step = max|v| / 127, q = roundEven(v / step) (q = 0 for a run whose
// max is below 1e-30). max |v| is taken on the bit patterns: non-negative floats order as their bits,
// and a NaN or an infinity orders above every finite value, so it reaches the step.
xrun round_run(vec4 v0, vec4 v1, vec4 v2, vec4 v3) {
  uvec4 a = max(max(floatBitsToUint(abs(v0)), floatBitsToUint(abs(v1))), max(floatBitsToUint(abs(v2)), floatBitsToUint(abs(v3))));
  float amax = uintBitsToFloat(max(max(a.x, a.y), max(a.z, a.w)));
  float inv = amax >= 1e-30 && floatBitsToUint(amax) < 0x7F800000u ? 127.0 / amax : 0.0;
  xrun r;
  r.q = uvec4(pack_q4(v0 * inv), pack_q4(v1 * inv), pack_q4(v2 * inv), pack_q4(v3 * inv));
  r.step = amax / 127.0;
  r.qsum = sdot16(r.q, uvec4(0x01010101u));
  return r;
}

// Round run r (x's elements 16 r .. 16 r + 15, in v) of a row of K elements and store it at `dst` (the
// layout above): its sum of squares of x, then (norm) x times the norm weight at nw rounded. The one
// rounding of both writers (gemv_quantize_x.comp, gemv.comp ROUND), so their runs are the same bits.
void round_and_store_run(uvec2 dst, uint K, uint r, vec4 v[4], bool norm, uvec2 nw, uint nw_dtype) {
  float ss = 0.0;
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    ss += dot(v[i], v[i]);
    if (norm) v[i] *= load_norm4(nw, 16u * r + 4u * i, nw_dtype);
  }
  xrun q = round_run(v[0], v[1], v[2], v[3]);
  u4_buf(dst).d[r] = q.q;
  u4_buf(dst).d[(K >> 4) + r] = uvec4(floatBitsToUint(q.step), uint(q.qsum), floatBitsToUint(ss), 0u);
}

#endif
