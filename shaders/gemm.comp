#version 450
// GEMM_TILE / GEMV_TILE / GEMV_ADD over many rows (prefill): y[row0+m, n_off+n] = (r[row0+m, n_off+n] +)
// x[row0+m] . W[n_off+n] (+ bias).
// A 64 x 64 output tile per workgroup of 256 invocations, each computing 4 x 4; per step of 32 along K
// the x tile and the dequantized W tile (one 8-element unit per invocation, dtype fixed per variant:
// WUNIT, see shaders/variants.cmake) go through shared memory, so each weight byte is read once per 64
// rows instead of once per row. Needs K % 32 == 0 and 16-byte-aligned x.
#include "common/weights.glsl"

layout(local_size_x = 256) in;
// The fused epilogue (spec constant 5; src/vulkan/kernels/gemm.cpp): 0 plain, 1 RMSNORM_GEMV's norm,
// 2 GEMV_ADD's residual. A constant, not a test of the push fields, so the plain GEMM compiles without
// the norm's registers and code: as a run-time test it cost every GEMM 7-10% on the H200
// (benchmarks/results/2026-11-28-h200-prefill-fusion, call3).
layout(constant_id = 5) const uint EPI = 0u;
const bool NORM = EPI == 1u, RESID = EPI == 2u;

layout(push_constant) uniform params {
  uvec2 x, w, bias, y, globals;
  uint K, rows, row0, n_tile, n_off, ldy, w_row_bytes, has_bias, bias_dtype;
  uvec2 residual;  // GEMV_ADD's r (laid out as y), added to every output (EPI 2)
  // RMSNORM_GEMV's norm weight (EPI 1): x is multiplied by it as it is staged, each row's sum of
  // squares of x is kept beside, and a row's sums are multiplied by its 1 / sqrt(ss / K + eps) in the
  // epilogue (before the bias), as gemv.comp's norm does.
  uvec2 norm_w;
  uint norm_dtype;
  float eps;
  uint rope, style, kv_pos;  // the RoPE / KV epilogue's (gemm_coop.comp, gemm_reg.comp; not this kernel's)
  float log2_theta;
} pc;

const uint BM = 64u, BN = 64u, BK = 32u, PAD = 4u;
shared vec4 xs[BK][(BM + PAD) / 4u];  // xs[k][m / 4], transposed so an invocation reads 4 rows at once
shared vec4 ws[BK][(BN + PAD) / 4u];
// The norm's sums (each loader's sum of squares, then each row's 1 / RMS) reuse the x tiles once the
// K loop is done: arrays of their own cost a workgroup per multiprocessor where the tiles already
// fill the shared memory (the H200 ran every GEMM 10-45% slower, plain ones too;
// benchmarks/results/2026-11-28-h200-prefill-fusion, call2).
// Floats 0 .. 255: the loaders' sums (4 loaders a row); 256 .. 256 + BM - 1: the rows' 1 / RMS.
const uint XSW = 4u * ((BM + PAD) / 4u);  // floats per row of xs
void put_norm(uint i, float v) { xs[i / XSW][(i % XSW) >> 2][i & 3u] = v; }
float norm_at(uint i) { return xs[i / XSW][(i % XSW) >> 2][i & 3u]; }

void main() {
  uint tid = gl_LocalInvocationID.x;
  uint tx = tid % 16u, ty = tid / 16u;  // this invocation's 4 columns / 4 rows within the tile
  uint n0 = octo_group_linear() * BN;
  uint m0 = gl_WorkGroupID.y * BM;
  if (n0 >= pc.n_tile || m0 >= pc.rows) return;

  // Loader roles: W unit (column lc, unit lu of the K step); x: two vec4 (row lr, k quads lq, lq + 4).
  uint lc = tid / 4u, lu = tid % 4u;
  uint wn = min(n0 + lc, pc.n_tile - 1u);
  uint w_row = (pc.n_off + wn) * pc.w_row_bytes;
  uint lr = tid / 4u, lq = tid % 4u;
  bool x_ok = m0 + lr < pc.rows;
  uint x_base = ((pc.row0 + m0 + min(lr, pc.rows - 1u - m0)) * pc.K) >> 2;  // in vec4
  v4_buf xb = v4_buf(pc.x);

  vec4 acc[4];
  [[unroll]] for (uint i = 0u; i < 4u; ++i) acc[i] = vec4(0.0);
  float ss = 0.0;

  for (uint k0 = 0u; k0 < pc.K; k0 += BK) {
    float t[8];
    WUNIT(pc.w, w_row, (k0 >> 3) + lu, t);
    [[unroll]] for (uint i = 0u; i < 8u; ++i) ws[lu * 8u + i][lc >> 2][lc & 3u] = t[i];
    [[unroll]] for (uint h = 0u; h < 2u; ++h) {
      uint q = lq + 4u * h;  // which quad of the 32-wide K step
      vec4 v = x_ok ? xb.d[x_base + (k0 >> 2) + q] : vec4(0.0);
      if (NORM) {
        ss += dot(v, v);
        v *= load_norm4(pc.norm_w, k0 + 4u * q, pc.norm_dtype);
      }
      xs[q * 4u + 0u][lr >> 2][lr & 3u] = v.x;
      xs[q * 4u + 1u][lr >> 2][lr & 3u] = v.y;
      xs[q * 4u + 2u][lr >> 2][lr & 3u] = v.z;
      xs[q * 4u + 3u][lr >> 2][lr & 3u] = v.w;
    }
    barrier();
    [[unroll]] for (uint k = 0u; k < BK; ++k) {
      vec4 a = xs[k][ty];
      vec4 b = ws[k][tx];
      acc[0] += a.x * b;
      acc[1] += a.y * b;
      acc[2] += a.z * b;
      acc[3] += a.w * b;
    }
    barrier();
  }

  if (NORM) {  // loaders 4 lr .. 4 lr + 3 hold row lr's sums of squares
    put_norm(tid, ss);
    barrier();
    if (lq == 0u) put_norm(256u + lr, 1.0 / sqrt((norm_at(tid) + norm_at(tid + 1u) + norm_at(tid + 2u) + norm_at(tid + 3u)) / float(pc.K) + pc.eps));
    barrier();
  }
  f32_buf yb = f32_buf(pc.y);
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    uint m = m0 + ty * 4u + i;
    if (m >= pc.rows) continue;
    [[unroll]] for (uint j = 0u; j < 4u; ++j) {
      uint n = n0 + tx * 4u + j;
      if (n >= pc.n_tile) continue;
      float s = acc[i][j];
      if (NORM) s *= norm_at(256u + ty * 4u + i);
      if (pc.has_bias != 0u) s += load_elem(pc.bias, pc.n_off + n, pc.bias_dtype);
      uint o = (pc.row0 + m) * pc.ldy + pc.n_off + n;
      if (RESID) s = f32_buf(pc.residual).d[o] + s;
      yb.d[o] = s;
    }
  }
}
