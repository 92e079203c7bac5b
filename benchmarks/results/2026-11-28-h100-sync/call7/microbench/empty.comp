#version 450
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference_uvec2 : require
layout(local_size_x = 128) in;
layout(buffer_reference, std430, buffer_reference_align = 4) buffer fwords { float d[]; };
layout(push_constant) uniform params { uvec2 counter; uvec2 data; uint rounds; uint mode; } pc;
void main() {
  fwords f = fwords(pc.data);
  uint n = gl_NumWorkGroups.x;
  f.d[gl_WorkGroupID.x * 128u + gl_LocalInvocationID.x] += f.d[((gl_WorkGroupID.x + 1u) % n) * 128u + gl_LocalInvocationID.x] + float(pc.rounds);
}
