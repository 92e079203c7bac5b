#version 450
// SAMPLE_ARGMAX: index of each row's maximum, the lowest index on ties; NaN never wins (a row of NaNs
// gives 0). One workgroup per row (greedy decode has one row of ~152k logits): a large workgroup reads
// the row as 16-byte units, eight loads in flight per invocation, so the row streams at the bandwidth
// one multiprocessor can draw rather than at one load latency per element.
#include "common/octo.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const bool VEC = false;  // v % 4 == 0 and a 16-byte aligned row start

layout(push_constant) uniform params {
  uvec2 x, ids;
  uint v, rows;
} pc;

const uint NONE = 0xffffffffu;
shared float best_v[gl_WorkGroupSize.x];
shared uint best_i[gl_WorkGroupSize.x];

// Visits must come in increasing index order per invocation: strict > then keeps the lowest index.
void visit(float val, uint i, inout float bv, inout uint bi) {
  if (val == val && (bi == NONE || val > bv)) {
    bv = val;
    bi = i;
  }
}

void main() {
  uint row = octo_group_linear();
  if (row >= pc.rows) return;
  uint tid = gl_LocalInvocationID.x;
  const uint WG = gl_WorkGroupSize.x;
  float bv = uintBitsToFloat(0xff800000u);
  uint bi = NONE;
  if (VEC) {
    v4_buf x = v4_buf(pc.x);
    uint n4 = pc.v >> 2, base = (row * pc.v) >> 2;
    uint i = tid;
    for (; i + 7u * WG < n4; i += 8u * WG) {
      vec4 a[8];
      [[unroll]] for (uint k = 0u; k < 8u; ++k) a[k] = x.d[base + i + k * WG];
      [[unroll]] for (uint k = 0u; k < 8u; ++k) {
        uint e = 4u * (i + k * WG);
        visit(a[k].x, e, bv, bi);
        visit(a[k].y, e + 1u, bv, bi);
        visit(a[k].z, e + 2u, bv, bi);
        visit(a[k].w, e + 3u, bv, bi);
      }
    }
    for (; i < n4; i += WG) {
      vec4 a = x.d[base + i];
      visit(a.x, 4u * i, bv, bi);
      visit(a.y, 4u * i + 1u, bv, bi);
      visit(a.z, 4u * i + 2u, bv, bi);
      visit(a.w, 4u * i + 3u, bv, bi);
    }
  } else {
    f32_buf x = f32_buf(pc.x);
    for (uint i = tid; i < pc.v; i += WG) visit(x.d[row * pc.v + i], i, bv, bi);
  }
  best_v[tid] = bv;
  best_i[tid] = bi;
  barrier();
  for (uint s = WG / 2u; s > 0u; s >>= 1) {
    if (tid < s) {
      float ov = best_v[tid + s];
      uint oi = best_i[tid + s];
      if (oi != NONE && (best_i[tid] == NONE || ov > best_v[tid] || (ov == best_v[tid] && oi < best_i[tid]))) {
        best_v[tid] = ov;
        best_i[tid] = oi;
      }
    }
    barrier();
  }
  if (tid == 0u) i32_buf(pc.ids).d[row] = best_i[0] == NONE ? 0 : int(best_i[0]);
}
