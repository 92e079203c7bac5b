#version 460
// A copy of n 32-bit words (the VM's bypass of a skipped layer: its input to its output, gated by the
// layer's skip word through an indirect dispatch). Grid-stride, so any group count covers all words.
#include "common/vm_common.glsl"

layout(push_constant) uniform push_t {
  u32_buf src;
  u32_buf dst;
  uint n;
} pc;

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += stride) pc.dst.d[i] = pc.src.d[i];
}
