#version 460
// The VM's own COPY (f32 -> f32): y[i] = x[i]. Groups: ceil(n / local size) in x, 65535 max, grid-stride.
#include "common/vm_common.glsl"

layout(push_constant) uniform push_t {
  vm_f32 x;
  vm_f32 y;
  uint n;
} pc;

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += stride) pc.y.v[i] = pc.x.v[i];
}
