#version 460
// The activation observer (vulkan_vm layer statistics, docs/vulkan.md "Layer statistics"): after a
// program's last task, it reads each observed layer's output (its residual stream, every row of the
// pass) and writes its statistics into the ring slot of the pass's position:
//   {RMS of the finite values, max |x| of the finite values, count of NaN / Inf, count of values}.
// The table holds one record per layer: {address lo, address hi, values, layer index}. Workgroup
// (p, r) reduces chunk p of CHUNKS (gl_NumWorkGroups.x) of record r's values into partials[r][p]; the
// last of a record's workgroups to arrive (a counter per record, put back to 0 for the next run) sums
// the partials in chunk order. One workgroup per layer read 29 MB alone at a 7B prefill of 2048 rows,
// about 1 ms a layer, which a chain of one program per layer (streaming) paid in series. Deterministic
// (a fixed reduction tree, no float atomics), so a rerun of the same pass writes the same bits. With one
// chunk (a decode step's rows) the workgroup writes the ring itself: no partials, no counter.
#extension GL_EXT_buffer_reference_uvec2 : require
#include "common/vm_common.glsl"

// Written by one workgroup, read by another after the arrival counter: coherent.
layout(buffer_reference, std430, buffer_reference_align = 4) coherent buffer observe_u32 { uint d[]; };

layout(push_constant) uniform push_t {
  u32_buf table;         // 4 words per record
  u32_buf ring;          // [slots][records][4] words
  globals_buf globals;
  observe_u32 partials;  // [records][chunks][3] words (sum of squares, max |x|, non-finite), then a counter per record
  uint records;
  uint slots;
} pc;

shared float s_sum[1024];
shared float s_max[1024];
shared uint s_bad[1024];
shared bool s_last;

// The workgroup's three sums into s_*[0] (every invocation has put its own at s_*[t]).
void reduce(uint t) {
  barrier();
  for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1u) {
    if (t < s) {
      s_sum[t] += s_sum[t + s];
      s_max[t] = max(s_max[t], s_max[t + s]);
      s_bad[t] += s_bad[t + s];
    }
    barrier();
  }
}

// Record r's figures into the ring slot of the pass's position.
void write_ring(uint r, uint n, float sum, float mx, uint bad) {
  uint finite = n - bad;
  uint o = ((pc.globals.pos % pc.slots) * pc.records + r) * 4u;
  pc.ring.d[o + 0u] = floatBitsToUint(finite > 0u ? sqrt(sum / float(finite)) : 0.0);
  pc.ring.d[o + 1u] = floatBitsToUint(mx);
  pc.ring.d[o + 2u] = bad;
  pc.ring.d[o + 3u] = n;
}

void main() {
  uint p = gl_WorkGroupID.x, r = gl_WorkGroupID.y;
  uint chunks = gl_NumWorkGroups.x;
  if (r >= pc.records) return;
  uint t = gl_LocalInvocationID.x;
  uvec2 a = uvec2(pc.table.d[4u * r], pc.table.d[4u * r + 1u]);
  uint n = pc.table.d[4u * r + 2u];
  f32_buf x = f32_buf(a);
  uint per = (n + chunks - 1u) / chunks;
  uint begin = min(n, p * per), end = min(n, begin + per);
  float sum = 0.0, mx = 0.0;
  uint bad = 0u;
  for (uint i = begin + t; i < end; i += gl_WorkGroupSize.x) {
    float v = x.d[i];
    if (isnan(v) || isinf(v)) {
      ++bad;
    } else {
      sum += v * v;
      mx = max(mx, abs(v));
    }
  }
  s_sum[t] = sum;
  s_max[t] = mx;
  s_bad[t] = bad;
  reduce(t);
  if (chunks == 1u) {
    if (t == 0u) write_ring(r, n, s_sum[0], s_max[0], s_bad[0]);
    return;
  }
  uint counter = pc.records * chunks * 3u + r;
  if (t == 0u) {
    uint o = (r * chunks + p) * 3u;
    pc.partials.d[o + 0u] = floatBitsToUint(s_sum[0]);
    pc.partials.d[o + 1u] = floatBitsToUint(s_max[0]);
    pc.partials.d[o + 2u] = s_bad[0];
    // Release: the partials are visible device-wide before the arrival is counted.
    memoryBarrierBuffer();
    uint prev = atomicAdd(pc.partials.d[counter], 1u);
    s_last = prev == chunks - 1u;
    if (s_last) atomicExchange(pc.partials.d[counter], 0u);  // every chunk has arrived: ready for the next run
  }
  barrier();
  if (!s_last) return;
  // Acquire: the other chunks' partials, written before their arrivals, are read after this.
  memoryBarrierBuffer();
  sum = 0.0;
  mx = 0.0;
  bad = 0u;
  for (uint q = t; q < chunks; q += gl_WorkGroupSize.x) {
    uint o = (r * chunks + q) * 3u;
    sum += uintBitsToFloat(pc.partials.d[o + 0u]);
    mx = max(mx, uintBitsToFloat(pc.partials.d[o + 1u]));
    bad += pc.partials.d[o + 2u];
  }
  s_sum[t] = sum;
  s_max[t] = mx;
  s_bad[t] = bad;
  reduce(t);
  if (t == 0u) write_ring(r, n, s_sum[0], s_max[0], s_bad[0]);
}
