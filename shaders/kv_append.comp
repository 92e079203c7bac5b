#version 450
// KV_APPEND: cache[pos + globals.pos + t] = kv_new[t] for t < T, converting to the cache dtype (F32,
// F16, BF16 rounded to nearest even; Q8_0 quantised as octo::detail::quantize_row does: per block of 32
// along the row, d = f16(amax / 127), q = round-half-even(clamp(x / d, -127, 127))). Rows past the
// cache's end are not written (the planner rejects a static overflow).
// One invocation owns one 32-bit word of the cache, so no two invocations write the same word; a word
// shared with a slot outside the appended rows keeps that slot's half.
#include "common/octo.glsl"
layout(local_size_x_id = 0) in;

layout(push_constant) uniform params {
  uvec2 src, cache, globals;
  uint T, row, slots, pos, src_dtype, cache_dtype;
} pc;

// The 16-bit unit at halfword `h` of a Q8_0 cache, for appended elements starting at element `first_e`
// (the Q8_0 block of 17 halfwords: the f16 scale, then 16 pairs of int8 quants).
uint q8_0_half(uint h, uint first_e) {
  uint blk = h / 17u, within = h % 17u;
  uint e0 = blk * 32u - first_e;  // the block's first source element
  float amax = 0.0;
  for (uint j = 0u; j < 32u; ++j) amax = max(amax, abs(load_elem(pc.src, e0 + j, pc.src_dtype)));
  uint dbits = f32_to_f16(amax / 127.0);
  if (within == 0u) return dbits;
  float d = f16_to_f32(dbits);
  float id = d != 0.0 ? 1.0 / d : 0.0;
  uint e = e0 + 2u * (within - 1u);
  int q0 = int(roundEven(clamp(load_elem(pc.src, e, pc.src_dtype) * id, -127.0, 127.0)));
  int q1 = int(roundEven(clamp(load_elem(pc.src, e + 1u, pc.src_dtype) * id, -127.0, 127.0)));
  return (uint(q0) & 0xffu) | ((uint(q1) & 0xffu) << 8);
}

void main() {
  uint first = pc.pos + globals_buf(pc.globals).pos;
  uint t_end = first >= pc.slots ? 0u : min(pc.T, pc.slots - first);
  uint n = t_end * pc.row;
  uint stride = gl_NumWorkGroups.x * gl_NumWorkGroups.z * gl_WorkGroupSize.x;
  uint gid = octo_group_linear() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  u32_buf c = u32_buf(pc.cache);
  uint off = first * pc.row;  // element offset of the first written slot
  if (pc.cache_dtype == DT_Q8_0) {
    // Halfwords [h0, h1) of the cache are written (the planner requires row % 32 == 0: whole blocks).
    uint h0 = off / 32u * 17u, h1 = h0 + n / 32u * 17u;
    for (uint w = h0 / 2u + gid; w < (h1 + 1u) / 2u; w += stride) {
      uint old = c.d[w];
      uint lo = 2u * w >= h0 ? q8_0_half(2u * w, off) : (old & 0xffffu);
      uint hi = 2u * w + 1u < h1 ? q8_0_half(2u * w + 1u, off) : (old >> 16);
      c.d[w] = lo | (hi << 16);
    }
    return;
  }
  bool half_out = pc.cache_dtype == DT_F16 || pc.cache_dtype == DT_BF16;
  uint words = half_out ? (n + 1u) / 2u : n;
  for (uint w = gid; w < words; w += stride) {
    if (!half_out) {
      c.d[off + w] = encode_elem(load_elem(pc.src, w, pc.src_dtype), pc.cache_dtype);
    } else {
      // 16-bit cache: the planner requires an even row, so word (off + 2w) / 2 holds elements 2w, 2w+1.
      uint e0 = 2u * w;
      uint lo = encode_elem(load_elem(pc.src, e0, pc.src_dtype), pc.cache_dtype);
      uint old = c.d[(off + e0) >> 1];
      uint hi = e0 + 1u < n ? encode_elem(load_elem(pc.src, e0 + 1u, pc.src_dtype), pc.cache_dtype) : (old >> 16);
      c.d[(off + e0) >> 1] = lo | (hi << 16);
    }
  }
}
