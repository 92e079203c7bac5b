#version 460
// The VM's own ADD (f32): y[i] = a[i] + b[i % nb] (b broadcasts over rows, docs/opcodes.md).
#include "common/vm_common.glsl"

layout(push_constant) uniform push_t {
  vm_f32 a;
  vm_f32 b;
  vm_f32 y;
  uint n;
  uint nb;
} pc;

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += stride) pc.y.v[i] = pc.a.v[i] + pc.b.v[i % pc.nb];
}
