#version 450
// SAMPLE_ARGMAX: index of each row's maximum, the lowest index on ties; NaN never wins (a row of NaNs
// gives 0). A large workgroup reads its part of the row as 16-byte units, eight loads in flight per
// invocation, so each part streams at the bandwidth one multiprocessor can draw.
// SPLIT > 1 (vocabulary rows: greedy decode's ~152k logits): SPLIT workgroups a row (gl_WorkGroupID.x,
// the row in .y), each over a contiguous part, so the row is read by as many multiprocessors at once
// (one round of loads each) instead of one streaming it alone. Each writes its part's (value, index)
// into the scratch and counts its arrival on the row's counter; the last to arrive merges the parts and
// puts the counter back to 0 for the next step (no workgroup waits on another, as decode attention's
// chunks merge). SPLIT = 1: one workgroup a row, no scratch.
#include "common/octo.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const bool VEC = false;  // v % 4 == 0 and a 16-byte aligned row start
layout(constant_id = 2) const uint SPLIT = 1u;   // workgroups a row

layout(push_constant) uniform params {
  uvec2 x, ids, scratch;  // scratch (SPLIT > 1): rows counters (rounded up to 4), then per (row, part) value, index
  uint v, rows;
} pc;

layout(buffer_reference, std430, buffer_reference_align = 4) coherent buffer scratch_u32 { uint d[]; };

const uint NONE = 0xffffffffu;
shared float best_v[gl_WorkGroupSize.x];
shared uint best_i[gl_WorkGroupSize.x];
shared bool is_last;

// Visits must come in increasing index order per invocation: strict > then keeps the lowest index.
void visit(float val, uint i, inout float bv, inout uint bi) {
  if (val == val && (bi == NONE || val > bv)) {
    bv = val;
    bi = i;
  }
}

// (ov, oi) replaces (bv, bi) where it is larger, or equal at a lower index; NONE (no value seen) never wins.
void take(float ov, uint oi, inout float bv, inout uint bi) {
  if (oi != NONE && (bi == NONE || ov > bv || (ov == bv && oi < bi))) {
    bv = ov;
    bi = oi;
  }
}

// The workgroup's best of every invocation's (bv, bi), left in best_v[0], best_i[0].
void reduce(uint tid, float bv, uint bi) {
  const uint WG = gl_WorkGroupSize.x;
  best_v[tid] = bv;
  best_i[tid] = bi;
  barrier();
  for (uint s = WG / 2u; s > 0u; s >>= 1) {
    if (tid < s) {
      float v = best_v[tid];
      uint i = best_i[tid];
      take(best_v[tid + s], best_i[tid + s], v, i);
      best_v[tid] = v;
      best_i[tid] = i;
    }
    barrier();
  }
}

void main() {
  const bool split = SPLIT > 1u;
  uint row = split ? gl_WorkGroupID.y : octo_group_linear();
  uint part = split ? gl_WorkGroupID.x : 0u;
  if (row >= pc.rows) return;
  uint tid = gl_LocalInvocationID.x;
  const uint WG = gl_WorkGroupSize.x;
  float bv = uintBitsToFloat(0xff800000u);
  uint bi = NONE;
  // This workgroup's units (16-byte or single elements): [u0, u1) of the row's n.
  uint n = VEC ? pc.v >> 2 : pc.v;
  uint per = (n + SPLIT - 1u) / SPLIT;
  uint u0 = min(part * per, n), u1 = min(u0 + per, n);
  if (VEC) {
    v4_buf x = v4_buf(pc.x);
    uint base = (row * pc.v) >> 2;
    uint i = u0 + tid;
    for (; i + 7u * WG < u1; i += 8u * WG) {
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
    for (; i < u1; i += WG) {
      vec4 a = x.d[base + i];
      visit(a.x, 4u * i, bv, bi);
      visit(a.y, 4u * i + 1u, bv, bi);
      visit(a.z, 4u * i + 2u, bv, bi);
      visit(a.w, 4u * i + 3u, bv, bi);
    }
  } else {
    f32_buf x = f32_buf(pc.x);
    for (uint i = u0 + tid; i < u1; i += WG) visit(x.d[row * pc.v + i], i, bv, bi);
  }
  reduce(tid, bv, bi);
  if (!split) {
    if (tid == 0u) i32_buf(pc.ids).d[row] = best_i[0] == NONE ? 0 : int(best_i[0]);
    return;
  }

  scratch_u32 sc = scratch_u32(pc.scratch);
  uint parts = ((pc.rows + 3u) & ~3u) + row * SPLIT * 2u;  // this row's (value, index) pairs
  if (tid == 0u) {
    sc.d[parts + 2u * part] = floatBitsToUint(best_v[0]);
    sc.d[parts + 2u * part + 1u] = best_i[0];
    // Release: the part is visible device-wide before its arrival is counted.
    memoryBarrierBuffer();
    uint prev = atomicAdd(sc.d[row], 1u);
    is_last = prev == SPLIT - 1u;
    if (is_last) atomicExchange(sc.d[row], 0u);  // every part has arrived: ready for the next step
  }
  barrier();
  if (!is_last) return;
  // Acquire: the other parts, written before their arrivals, are read after ours.
  memoryBarrierBuffer();
  bv = uintBitsToFloat(0xff800000u);
  bi = NONE;
  for (uint p = tid; p < SPLIT; p += WG) take(uintBitsToFloat(sc.d[parts + 2u * p]), sc.d[parts + 2u * p + 1u], bv, bi);
  reduce(tid, bv, bi);
  if (tid == 0u) i32_buf(pc.ids).d[row] = best_i[0] == NONE ? 0 : int(best_i[0]);
}
