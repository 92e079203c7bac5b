#version 460
// The VM's own GEMV_TILE for f32 weights (seeds/000 success criterion 1): one workgroup per (output
// column j, row r): y[r*ldy + n_off + j] = x[r] . W[n_off + j] (+ bias[n_off + j]).
#include "common/vm_common.glsl"

layout(push_constant) uniform push_t {
  vm_f32 x;
  vm_f32 w;
  vm_f32 bias;  // ignored when has_bias == 0
  vm_f32 y;
  uint K;
  uint ldy;     // row length of y
  uint n_off;
  uint has_bias;
} pc;

shared float partial[1024];

void main() {
  uint j = gl_WorkGroupID.x, r = gl_WorkGroupID.y, t = gl_LocalInvocationID.x;
  uint col = pc.n_off + j;
  float acc = 0.0;
  for (uint k = t; k < pc.K; k += gl_WorkGroupSize.x) acc += pc.x.v[r * pc.K + k] * pc.w.v[col * pc.K + k];
  partial[t] = acc;
  barrier();
  for (uint s = gl_WorkGroupSize.x / 2; s > 0; s >>= 1) {
    if (t < s) partial[t] += partial[t + s];
    barrier();
  }
  if (t == 0) pc.y.v[r * pc.ldy + col] = partial[0] + (pc.has_bias != 0 ? pc.bias.v[col] : 0.0);
}
