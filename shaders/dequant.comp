#version 450
// DEQUANT: y[i] = (q[i] - zero[g]) * scale[g], g = i / group; q is I8 or I4 (two signed nibbles per
// byte, element 2k in the low nibble).
#include "common/octo.glsl"
layout(local_size_x_id = 0) in;

layout(push_constant) uniform params {
  uvec2 q, scales, zero, y;
  uint n, group, qdtype, has_zero, scale_dtype, zero_dtype;
} pc;

void main() {
  uint stride = gl_NumWorkGroups.x * gl_NumWorkGroups.z * gl_WorkGroupSize.x;
  u32_buf q = u32_buf(pc.q);
  for (uint i = octo_group_linear() * gl_WorkGroupSize.x + gl_LocalInvocationID.x; i < pc.n; i += stride) {
    float v;
    if (pc.qdtype == DT_I4)
      v = float(bitfieldExtract(int(load_u8(q, i >> 1)), int(i & 1u) * 4, 4));
    else
      v = float(load_i8(q, i));
    uint g = i / pc.group;
    if (pc.has_zero != 0u) v -= load_elem(pc.zero, g, pc.zero_dtype);
    f32_buf(pc.y).d[i] = v * load_elem(pc.scales, g, pc.scale_dtype);
  }
}
