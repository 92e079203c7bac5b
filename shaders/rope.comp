#version 450
// ROPE: per head, pairs (i, i + n_rot/2) (style 0, NeoX) or (2i, 2i+1) (style 1, interleaved) rotate by
// pos[t] * theta^(-2i/n_rot); dims >= n_rot pass through. One invocation owns a whole pair (or one
// pass-through dim), so the op may run in place.
#include "common/octo.glsl"
#include "common/rope.glsl"
layout(local_size_x_id = 0) in;

layout(push_constant) uniform params {
  uvec2 x, pos, y;
  uint T, n_heads, head_dim, n_rot, style;
  float log2_theta;
} pc;

void main() {
  uint half_rot = pc.n_rot / 2u;
  uint per_head = pc.head_dim - half_rot;  // n_rot/2 pairs + (head_dim - n_rot) pass-through dims
  uint total = pc.T * pc.n_heads * per_head;
  uint stride = gl_NumWorkGroups.x * gl_NumWorkGroups.z * gl_WorkGroupSize.x;
  f32_buf x = f32_buf(pc.x);
  f32_buf y = f32_buf(pc.y);
  for (uint it = octo_group_linear() * gl_WorkGroupSize.x + gl_LocalInvocationID.x; it < total; it += stride) {
    uint j = it % per_head;
    uint th = it / per_head;  // t * n_heads + head
    uint t = th / pc.n_heads;
    uint base = th * pc.head_dim;
    if (j >= half_rot) {
      uint d = j + half_rot;
      y.d[base + d] = x.d[base + d];
      continue;
    }
    uint a = pc.style == 0u ? j : 2u * j;
    uint b = pc.style == 0u ? j + half_rot : 2u * j + 1u;
    vec2 cs = rope_cos_sin(float(i32_buf(pc.pos).d[t]), j, pc.n_rot, pc.log2_theta);
    float c = cs.x, s = cs.y;
    float va = x.d[base + a], vb = x.d[base + b];
    y.d[base + a] = va * c - vb * s;
    y.d[base + b] = va * s + vb * c;
  }
}
