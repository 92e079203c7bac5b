#version 460
// Message passing between VM instances (seeds/000): the next instance's inbox R31 = this instance's
// outbox R30. The n data words are multiplied by the receiver's control.scale_factor (1 unless the
// regulator dampens); the 4 telemetry words after them travel unchanged.
#include "common/vm_common.glsl"

layout(push_constant) uniform push_t {
  f32_buf outbox;
  f32_buf inbox;
  f32_buf control;  // 4 floats per instance: scale_factor, eviction_priority, precision_mode, active
  uint n;
  uint receiver;
} pc;

void main() {
  float scale = pc.control.d[pc.receiver * 4u];
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < pc.n + 4u; i += stride)
    pc.inbox.d[i] = i < pc.n ? pc.outbox.d[i] * scale : pc.outbox.d[i];
}
