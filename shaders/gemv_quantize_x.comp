#version 450
// One x row rounded to int8 runs of 16 elements once, before the integer-dot GEMVs that read it
// (OCTO_GEMV_X8; kernels/gemv.cpp puts this launch in the GEMV's `before`). In the GEMV's own loop every
// workgroup loads and rounds the runs its chunks need: a chain of loads, a max, a scale and packing
// ahead of its first integer dot product, which left the 7B GEMVs latency-bound (on the H200 decode ran
// 66% faster at 7B Q4_K_M with x made up in registers instead: benchmarks/results/2026-11-29-h200-xq,
// calls 4-5). Here the row is rounded by one workgroup and the GEMVs read 24 bytes a run.
//
// Output at `dst`: K / 16 uvec4s of quants, then K / 16 pairs (step bits, sum of quants). The runs are
// those gemv_idot.glsl rounds (common/x_runs.glsl: the same products, maximum and rounding); with NORM
// (the GEMV is RMSNORM-fused) v = x times the norm weight, and the inverse RMS of x multiplies the steps,
// so the GEMV has no RMSNORM left to do.
#include "common/octo.glsl"
#include "common/x_runs.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const bool NORM = false;

layout(push_constant) uniform params {
  uvec2 x, nw, dst;
  uint K, nw_dtype;
  float eps;
} pc;

shared float red[gl_WorkGroupSize.x];

void main() {
  const uint WG = gl_WorkGroupSize.x;
  uint tid = gl_LocalInvocationID.x;
  v4_buf xb = v4_buf(pc.x);
  uint runs = pc.K >> 4;
  float inv_rms = 1.0;
  if (NORM) {
    float ss = 0.0;
    for (uint v = tid; v < (pc.K >> 2); v += WG) {
      vec4 a = xb.d[v];
      ss += dot(a, a);
    }
    red[tid] = ss;
    barrier();
    for (uint h = WG >> 1; h > 0u; h >>= 1) {  // WG is a power of two (the planner's)
      if (tid < h) red[tid] += red[tid + h];
      barrier();
    }
    inv_rms = 1.0 / sqrt(red[0] / float(pc.K) + pc.eps);
  }
  u4_buf qb = u4_buf(pc.dst);
  x8_meta_buf mb = x8_meta_buf(pc.dst);
  for (uint r = tid; r < runs; r += WG) {
    vec4 v[4];
    [[unroll]] for (uint i = 0u; i < 4u; ++i) {
      v[i] = xb.d[4u * r + i];
      if (NORM) v[i] *= load_norm4(pc.nw, 16u * r + 4u * i, pc.nw_dtype);
    }
    xrun q = round_run(v[0], v[1], v[2], v[3]);
    qb.d[r] = q.q;
    mb.d[(pc.K >> 3) + r] = uvec2(floatBitsToUint(q.step * inv_rms), uint(q.qsum));
  }
}
