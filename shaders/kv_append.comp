#version 450
// KV_APPEND: cache[pos + globals.pos + t] = kv_new[t] for t < T, converting to the cache dtype (F32,
// F16, BF16). Rows past the cache's end are not written (the planner rejects a static overflow).
// One invocation owns one 32-bit word of the cache (16-bit caches need an even row length).
#include "common/octo.glsl"
layout(local_size_x_id = 0) in;

layout(push_constant) uniform params {
  uvec2 src, cache, globals;
  uint T, row, slots, pos, src_dtype, cache_dtype;
} pc;

void main() {
  uint first = pc.pos + globals_buf(pc.globals).pos;
  uint t_end = first >= pc.slots ? 0u : min(pc.T, pc.slots - first);
  bool half_out = pc.cache_dtype == DT_F16 || pc.cache_dtype == DT_BF16;
  uint n = t_end * pc.row;
  uint words = half_out ? (n + 1u) / 2u : n;
  uint stride = gl_NumWorkGroups.x * gl_NumWorkGroups.z * gl_WorkGroupSize.x;
  u32_buf c = u32_buf(pc.cache);
  uint off = first * pc.row;  // element offset of the first written slot
  for (uint w = octo_group_linear() * gl_WorkGroupSize.x + gl_LocalInvocationID.x; w < words; w += stride) {
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
