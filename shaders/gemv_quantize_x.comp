#version 450
// One x row rounded to int8 runs of 16 elements once, before the integer-dot GEMVs that read it
// (OCTO_GEMV_X8; kernels/gemv.cpp puts this launch in the GEMV's `before`). In the GEMV's own loop every
// workgroup loads and rounds the runs its chunks need: a chain of loads, a max, a scale and packing
// ahead of its first integer dot product, which left the 7B GEMVs latency-bound (on the H200 decode ran
// 66% faster at 7B Q4_K_M with x made up in registers instead: benchmarks/results/2026-11-29-h200-xq,
// calls 4-5). Here the row is rounded by one workgroup and the GEMVs read 32 bytes a run. Where the
// GEMV_ADD that writes the row can round it in its own epilogue (gemv.comp ROUND, kernels/gemv.cpp
// rounding_for_readers) this launch and the barrier after it are not recorded.
//
// Output at `dst`: the layout of common/x_runs.glsl (quants, step and sum of quants, sum of squares a
// run). The runs are those gemv_idot.glsl rounds (the same products, maximum and rounding); with NORM
// (the GEMV is RMSNORM-fused) v = x times the norm weight, and the GEMV sums the runs' squares into its
// inverse RMS. One pass, no reduction across the workgroup: each invocation rounds whole runs.
#include "common/octo.glsl"
#include "common/x_runs.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const bool NORM = false;

layout(push_constant) uniform params {
  uvec2 x, nw, dst;
  uint K, nw_dtype;
} pc;

void main() {
  const uint WG = gl_WorkGroupSize.x;
  v4_buf xb = v4_buf(pc.x);
  for (uint r = gl_LocalInvocationID.x; r < (pc.K >> 4); r += WG) {
    vec4 v[4];
    [[unroll]] for (uint i = 0u; i < 4u; ++i) v[i] = xb.d[4u * r + i];
    round_and_store_run(pc.dst, pc.K, r, v, NORM, pc.nw, pc.nw_dtype);
  }
}
