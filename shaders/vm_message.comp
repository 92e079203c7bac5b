#version 460
// Message passing between VM instances (seeds/000): the next instance's inbox R31 = this instance's
// outbox R30. The n data words are multiplied by the receiver's control.scale_factor (1 unless the
// regulator dampens); the 4 telemetry words after them travel unchanged.
#include "common/vm_common.glsl"

layout(push_constant) uniform push_t {
  vm_f32 outbox;
  vm_f32 inbox;
  vm_f32 control;  // 4 floats per instance: scale_factor, eviction_priority, precision_mode, active
  uint n;
  uint receiver;
} pc;

void main() {
  float scale = pc.control.v[pc.receiver * 4u];
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < pc.n + 4u; i += stride)
    pc.inbox.v[i] = i < pc.n ? pc.outbox.v[i] * scale : pc.outbox.v[i];
}
