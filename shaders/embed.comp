#version 450
// EMBED: y[t] = table[ids[t]], dequantizing the table's row in place (any weight dtype, chosen at run
// time: a gather is not the hot path). An id outside [0, V) yields a NaN row (the error the host can
// see in the output; a kernel cannot throw).
#include "common/weights.glsl"
layout(local_size_x_id = 0) in;

layout(push_constant) uniform params {
  uvec2 ids, table, y;
  uint T, hidden, vocab, row_bytes, dtype;
} pc;

void main() {
  uint total = pc.T * pc.hidden;
  uint stride = gl_NumWorkGroups.x * gl_NumWorkGroups.z * gl_WorkGroupSize.x;
  for (uint it = octo_group_linear() * gl_WorkGroupSize.x + gl_LocalInvocationID.x; it < total; it += stride) {
    uint t = it / pc.hidden, k = it % pc.hidden;
    int id = i32_buf(pc.ids).d[t];
    float v = uintBitsToFloat(0x7fc00000u);
    if (id >= 0 && uint(id) < pc.vocab) v = welem_any(pc.table, uint(id) * pc.row_bytes, k, pc.dtype);
    f32_buf(pc.y).d[it] = v;
  }
}
