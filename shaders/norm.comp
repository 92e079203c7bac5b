#version 450
// RMSNORM (mode 0) and LAYERNORM (mode 1, biased variance, optional bias): one workgroup per row.
#include "common/octo.glsl"
layout(local_size_x_id = 0) in;
#include "common/reduce.glsl"

layout(push_constant) uniform params {
  uvec2 x, w, b, y;
  uint hidden, rows, mode, has_b, w_dtype, b_dtype;
  float eps;
} pc;

void main() {
  uint row = octo_group_linear();
  if (row >= pc.rows) return;
  uint tid = gl_LocalInvocationID.x, WG = gl_WorkGroupSize.x;
  f32_buf x = f32_buf(pc.x);
  f32_buf y = f32_buf(pc.y);
  uint base = row * pc.hidden;
  float mean = 0.0;
  if (pc.mode == 1u) {
    float s = 0.0;
    for (uint i = tid; i < pc.hidden; i += WG) s += x.d[base + i];
    mean = wg_sum(s) / float(pc.hidden);
  }
  float ss = 0.0;
  for (uint i = tid; i < pc.hidden; i += WG) {
    float v = x.d[base + i] - mean;
    ss += v * v;
  }
  float inv = inversesqrt(wg_sum(ss) / float(pc.hidden) + pc.eps);
  for (uint i = tid; i < pc.hidden; i += WG) {
    float v = (x.d[base + i] - mean) * inv * load_elem(pc.w, i, pc.w_dtype);
    if (pc.has_b != 0u) v += load_elem(pc.b, i, pc.b_dtype);
    y.d[base + i] = v;
  }
}
