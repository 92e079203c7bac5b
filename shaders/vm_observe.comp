#version 460
// The activation observer (vulkan_vm layer statistics, docs/vulkan.md "Layer statistics"): after a
// program's last task, one workgroup per observed layer reads that layer's output (its residual stream,
// every row of the pass) and writes its statistics into the ring slot of the pass's position:
//   {RMS of the finite values, max |x| of the finite values, count of NaN / Inf, count of values}.
// The table holds one record per layer: {address lo, address hi, values, layer index}. Deterministic (a
// fixed reduction tree, no float atomics), so a rerun of the same pass writes the same bits.
#extension GL_EXT_buffer_reference_uvec2 : require
#include "common/vm_common.glsl"

layout(push_constant) uniform push_t {
  u32_buf table;    // 4 words per record
  u32_buf ring;     // [slots][records][4] words
  globals_buf globals;
  uint records;
  uint slots;
} pc;

shared float s_sum[1024];
shared float s_max[1024];
shared uint s_bad[1024];

void main() {
  uint r = gl_WorkGroupID.x;
  if (r >= pc.records) return;
  uint t = gl_LocalInvocationID.x;
  uvec2 a = uvec2(pc.table.d[4u * r], pc.table.d[4u * r + 1u]);
  uint n = pc.table.d[4u * r + 2u];
  f32_buf x = f32_buf(a);
  float sum = 0.0, mx = 0.0;
  uint bad = 0u;
  for (uint i = t; i < n; i += gl_WorkGroupSize.x) {
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
  barrier();
  for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1u) {
    if (t < s) {
      s_sum[t] += s_sum[t + s];
      s_max[t] = max(s_max[t], s_max[t + s]);
      s_bad[t] += s_bad[t + s];
    }
    barrier();
  }
  if (t != 0u) return;
  uint finite = n - s_bad[0];
  uint o = ((pc.globals.pos % pc.slots) * pc.records + r) * 4u;
  pc.ring.d[o + 0u] = floatBitsToUint(finite > 0u ? sqrt(s_sum[0] / float(finite)) : 0.0);
  pc.ring.d[o + 1u] = floatBitsToUint(s_max[0]);
  pc.ring.d[o + 2u] = s_bad[0];
  pc.ring.d[o + 3u] = n;
}
