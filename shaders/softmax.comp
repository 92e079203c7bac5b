#version 450
// SOFTMAX over rows of `dim`, max-subtracted: one workgroup per row.
#include "common/octo.glsl"
layout(local_size_x_id = 0) in;
#include "common/reduce.glsl"

layout(push_constant) uniform params {
  uvec2 x, y;
  uint dim, rows;
} pc;

void main() {
  uint row = octo_group_linear();
  if (row >= pc.rows) return;
  uint tid = gl_LocalInvocationID.x, WG = gl_WorkGroupSize.x;
  f32_buf x = f32_buf(pc.x);
  f32_buf y = f32_buf(pc.y);
  uint base = row * pc.dim;
  float m = uintBitsToFloat(0xff800000u);
  for (uint i = tid; i < pc.dim; i += WG) m = max(m, x.d[base + i]);
  m = wg_max(m);
  float s = 0.0;
  for (uint i = tid; i < pc.dim; i += WG) s += exp(x.d[base + i] - m);
  float inv = 1.0 / wg_sum(s);
  for (uint i = tid; i < pc.dim; i += WG) y.d[base + i] = exp(x.d[base + i] - m) * inv;
}
