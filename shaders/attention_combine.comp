#version 450
// ATTENTION_COMBINE: merge 2..8 flash partials [T, n_heads, hd + 2] (normalised o, m, l):
// m* = max m_i, w_i = l_i exp(m_i - m*), o = sum w_i o_i / sum w_i (0 when the sum is 0).
#include "common/octo.glsl"
layout(local_size_x_id = 0) in;

layout(push_constant) uniform params {
  uvec2 parts[8];
  uvec2 o;
  uint n_parts, T, n_heads, head_dim;
} pc;

void main() {
  uint hd = pc.head_dim;
  uint total = pc.T * pc.n_heads * hd;
  uint stride = gl_NumWorkGroups.x * gl_NumWorkGroups.z * gl_WorkGroupSize.x;
  for (uint it = octo_group_linear() * gl_WorkGroupSize.x + gl_LocalInvocationID.x; it < total; it += stride) {
    uint th = it / hd, d = it % hd;
    uint base = th * (hd + 2u);
    float mstar = uintBitsToFloat(0xff800000u);
    for (uint i = 0u; i < pc.n_parts; ++i) {
      f32_buf p = f32_buf(pc.parts[i]);
      if (p.d[base + hd + 1u] > 0.0) mstar = max(mstar, p.d[base + hd]);
    }
    float num = 0.0, den = 0.0;
    for (uint i = 0u; i < pc.n_parts; ++i) {
      f32_buf p = f32_buf(pc.parts[i]);
      float li = p.d[base + hd + 1u];
      if (li > 0.0) {
        float wi = li * exp(p.d[base + hd] - mstar);
        num += wi * p.d[base + d];
        den += wi;
      }
    }
    f32_buf(pc.o).d[it] = den > 0.0 ? num / den : 0.0;
  }
}
