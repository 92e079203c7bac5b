#version 460
// The homeostasis regulator (seeds/000), one workgroup: observes an instance's outbox (L2 norm, max |x|,
// NaN / Inf) into its metrics record and the outbox's telemetry words; in regulate mode it also sets
// the next instance's control.scale_factor so that an exploding (> 2x target) or vanishing (< 1e-6 x
// target) activation arrives at the target norm.
#include "common/vm_common.glsl"

layout(push_constant) uniform push_t {
  f32_buf x;        // the outbox; words n..n+3 receive the telemetry
  f32_buf metrics;  // 8 floats per instance
  f32_buf control;  // 4 floats per instance
  uint n;
  uint instance;
  uint n_instances;
  uint regulate;
  float target_norm;
} pc;

shared float s_sum[1024];
shared float s_max[1024];
shared uint s_flags[1024];

void main() {
  uint t = gl_LocalInvocationID.x;
  float sum = 0.0, mx = 0.0;
  uint flags = 0u;
  for (uint i = t; i < pc.n; i += gl_WorkGroupSize.x) {
    float v = pc.x.d[i];
    if (isnan(v)) flags |= 2u;
    else if (isinf(v)) flags |= 4u;
    else {
      sum += v * v;
      mx = max(mx, abs(v));
    }
  }
  s_sum[t] = sum;
  s_max[t] = mx;
  s_flags[t] = flags;
  barrier();
  for (uint s = gl_WorkGroupSize.x / 2; s > 0; s >>= 1) {
    if (t < s) {
      s_sum[t] += s_sum[t + s];
      s_max[t] = max(s_max[t], s_max[t + s]);
      s_flags[t] |= s_flags[t + s];
    }
    barrier();
  }
  if (t != 0) return;
  float norm = sqrt(s_sum[0]);
  uint f = s_flags[0];
  float target = pc.target_norm;
  bool explode = target > 0.0 && norm > 2.0 * target;
  bool vanish = target > 0.0 && norm < 1e-6 * target;
  if (explode || vanish || f != 0u) f |= 1u;  // bit 0: anomaly
  uint m = pc.instance * 8u;
  pc.metrics.d[m + 0u] = norm;
  pc.metrics.d[m + 1u] = s_max[0];
  pc.metrics.d[m + 2u] = 0.0;  // compute_ticks: no timestamps inside one dispatch
  pc.metrics.d[m + 4u] = float(pc.instance);
  pc.metrics.d[m + 5u] = float(f);
  pc.metrics.d[m + 6u] = (f & 2u) != 0u ? 1.0 : 0.0;
  pc.metrics.d[m + 7u] = (f & 4u) != 0u ? 1.0 : 0.0;
  pc.x.d[pc.n + 0u] = norm;
  pc.x.d[pc.n + 1u] = s_max[0];
  pc.x.d[pc.n + 2u] = 0.0;
  pc.x.d[pc.n + 3u] = float(f);
  if (pc.regulate != 0u && pc.instance + 1u < pc.n_instances) {
    float scale = 1.0;
    if ((f & 6u) == 0u && (explode || (vanish && norm > 0.0))) scale = target / norm;
    pc.control.d[(pc.instance + 1u) * 4u] = scale;
  }
}
