#version 450
// A grid-wide barrier inside one dispatch: every workgroup adds 1 to a counter and waits until it
// reaches groups x (round + 1), `rounds` times. Measures what one such barrier costs.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference_uvec2 : require
layout(local_size_x = 128) in;
layout(buffer_reference, std430, buffer_reference_align = 4) coherent volatile buffer words { uint d[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer fwords { float d[]; };
layout(push_constant) uniform params { uvec2 counter; uvec2 data; uint rounds; uint mode; } pc;
shared uint sh;
void main() {
  words c = words(pc.counter);
  fwords f = fwords(pc.data);
  uint n = gl_NumWorkGroups.x;
  float acc = 0.0;
  for (uint r = 0u; r < pc.rounds; ++r) {
    // some work: each invocation writes one float that the next round's readers need
    f.d[gl_WorkGroupID.x * 128u + gl_LocalInvocationID.x] = acc + float(r);
    if (pc.mode == 1u) {
      barrier();
      if (gl_LocalInvocationID.x == 0u) {
        memoryBarrierBuffer();
        atomicAdd(c.d[0], 1u);
        uint target = n * (r + 1u);
        uint k = 0u;
        while (c.d[0] < target && k < 4000000u) ++k;  // bounded
        if (k == 4000000u) atomicAdd(c.d[1], 1u);     // gave up: the timing is void
        memoryBarrierBuffer();
      }
      barrier();
    }
    acc += f.d[((gl_WorkGroupID.x + 1u) % n) * 128u + gl_LocalInvocationID.x];
  }
  f.d[n * 128u + gl_WorkGroupID.x * 128u + gl_LocalInvocationID.x] = acc;
}
