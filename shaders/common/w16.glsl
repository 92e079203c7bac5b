// A weight unit (8 elements) as the tensor-core GEMM multiplies it: f16, saturated. Shared by
// gemm_coop.comp (the `coopf` kernel, which converts as it stages a tile) and weights_f16.comp (which
// converts a whole weight tile once into scratch for gemm_coopf_f16), so both give the same bits.
// Needs GL_EXT_shader_explicit_arithmetic_types_float16, weights.glsl and WUNIT (the dtype's loader).
#ifndef OCTO_W16_GLSL
#define OCTO_W16_GLSL

// Saturating: a finite input beyond f16's range becomes +-65504, not infinity (docs/precision.md).
uint pack_sat(float a, float b) { return packFloat2x16(f16vec2(clamp(vec2(a, b), -65504.0, 65504.0))); }

// Q8_0 unit u (8 quants of block u / 4) dequantized in f16 pairs: a byte b of q + 128 under the f16
// exponent of 1024 (bits 0x6400 | b) is 1152 + q exactly, so (that - 1152) * d is q * d rounded once
// to f16, the value the float path rounds to, at a quarter of its instructions; then saturated.
uint q8_pair(uint lo_hi) { return lo_hi | 0x64006400u; }
uint q8_scale(uint bytes2, float16_t d) {
  f16vec2 v = (unpackFloat2x16(q8_pair(bytes2)) - f16vec2(1152.0)) * d;
  return packFloat2x16(clamp(v, f16vec2(-65504.0), f16vec2(65504.0)));
}
uvec4 w16_q8_0(uvec2 addr, uint row_byte, uint u) {
  u32_buf b = u32_buf(addr);
  uint base = row_byte + (u >> 2) * 34u;
  float16_t d = unpackFloat2x16(load_u16(b, base)).x;
  uvec2 q = load8_even(b, base + 2u + (u & 3u) * 8u) ^ uvec2(0x80808080u);  // q + 128 per byte
  return uvec4(q8_scale((q.x & 0xffu) | ((q.x & 0xff00u) << 8), d), q8_scale(((q.x >> 16) & 0xffu) | ((q.x >> 8) & 0xff0000u), d),
               q8_scale((q.y & 0xffu) | ((q.y & 0xff00u) << 8), d), q8_scale(((q.y >> 16) & 0xffu) | ((q.y >> 8) & 0xff0000u), d));
}

// Unit u of the weight row at row_byte, as gemm_coopf stages it: F16 as stored, Q8_0 through
// w16_q8_0, every other dtype dequantized to floats by WUNIT and rounded to f16 with saturation.
uvec4 w16_unit(uvec2 addr, uint row_byte, uint u) {
#if defined(W_RAW)
  return u4_buf(addr).d[(row_byte >> 4) + u];
#elif defined(W16_Q8_0)
  return w16_q8_0(addr, row_byte, u);
#else
  float v[8];
  WUNIT(addr, row_byte, u, v);
  return uvec4(pack_sat(v[0], v[1]), pack_sat(v[2], v[3]), pack_sat(v[4], v[5]), pack_sat(v[6], v[7]));
#endif
}

#endif
