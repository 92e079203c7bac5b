#version 450
// SAMPLE_ARGMAX: index of each row's maximum, the lowest index on ties; one workgroup per row.
#include "common/octo.glsl"
layout(local_size_x_id = 0) in;

layout(push_constant) uniform params {
  uvec2 x, ids;
  uint v, rows;
} pc;

shared float best_v[gl_WorkGroupSize.x];
shared uint best_i[gl_WorkGroupSize.x];

void main() {
  uint row = octo_group_linear();
  if (row >= pc.rows) return;
  uint tid = gl_LocalInvocationID.x, WG = gl_WorkGroupSize.x;
  f32_buf x = f32_buf(pc.x);
  float bv = uintBitsToFloat(0xff800000u);
  uint bi = 0xffffffffu;
  // Each invocation scans increasing indices, so a strict > keeps its lowest index on ties.
  for (uint i = tid; i < pc.v; i += WG) {
    float v = x.d[row * pc.v + i];
    if (v > bv || bi == 0xffffffffu) { bv = v; bi = i; }
  }
  best_v[tid] = bv;
  best_i[tid] = bi;
  barrier();
  for (uint s = WG / 2u; s > 0u; s >>= 1) {
    if (tid < s) {
      float ov = best_v[tid + s];
      uint oi = best_i[tid + s];
      if (oi != 0xffffffffu && (best_i[tid] == 0xffffffffu || ov > best_v[tid] || (ov == best_v[tid] && oi < best_i[tid]))) {
        best_v[tid] = ov;
        best_i[tid] = oi;
      }
    }
    barrier();
  }
  if (tid == 0u) i32_buf(pc.ids).d[row] = int(best_i[0]);
}
