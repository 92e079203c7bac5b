#version 450
// GEMM_TILE / GEMV_TILE / GEMV_ADD over many rows (prefill), register-blocked SIMT kernel:
// y[row0+m, n_off+n] = (r[row0+m, n_off+n] +) x[row0+m] . W[n_off+n] (+ bias). A (16*TM) x (16*TN) output tile per workgroup
// of 256 invocations, each holding TM x TN sums (TM, TN = 4 or 8: spec constants 1 and 2, chosen by
// src/vulkan/kernels/gemm.cpp). Per step of 16 along K the x tile (16-byte loads) and the W tile
// (dequantized once per tile by WUNIT, one 8-element unit per invocation) are staged in shared memory
// as f32; the next step's global loads are issued into registers before this step's arithmetic, so
// memory latency overlaps the FMAs. Each weight byte is read once per 16*TM rows.
// Needs K % 16 == 0, 16-byte-aligned x rows (K % 4 == 0) and WUNIT's own alignment (see weights.glsl).
#include "common/weights.glsl"

layout(local_size_x = 256) in;
layout(constant_id = 1) const uint TM = 8u;
layout(constant_id = 2) const uint TN = 8u;
// The fused epilogue (spec constant 5; src/vulkan/kernels/gemm.cpp): 0 plain, 1 RMSNORM_GEMV's norm,
// 2 GEMV_ADD's residual, 3 RMSNORM_SWIGLU's SiLU.mul (its norm ahead, in x), 4 the norm and SiLU.mul,
// 5 RMSNORM_GEMV_ROPE's / RMSNORM_GEMV_KV's RoPE and cache write (the norm ahead), 6 the norm and those
// (common/gemm_rope_kv.glsl).
// A constant, not a test of the push fields, so the plain GEMM compiles without the norm's registers
// and code: as a run-time test it cost every GEMM 7-10% on the H200
// (benchmarks/results/2026-11-28-h200-prefill-fusion, call3).
// SWIGLU: gate and up rows interleaved in the tile's columns, as in gemm_coop.comp (column 2 o + s:
// row n_off + o of the gate weight, s = 0, or of the up weight in pc.residual, s = 1); an invocation's
// 4 consecutive columns are two outputs' pairs.
layout(constant_id = 5) const uint EPI = 0u;
const bool NORM = EPI == 1u || EPI == 4u || EPI == 6u, RESID = EPI == 2u, SWIGLU = EPI == 3u || EPI == 4u;
// X16 (spec constant 6; tests only: OCTO_GEMM_X16=1, src/vulkan/kernels/gemm.cpp): x arrives as f16 rows
// of K halves (rounded once by rows_f16_f32, as gemm_coop's X16 reads them), widened to f32 as loaded.
layout(constant_id = 6) const bool X16 = false;
layout(buffer_reference, std430, buffer_reference_align = 8) buffer x16_buf { uvec2 d[]; };  // 4 halves

layout(push_constant) uniform params {
  uvec2 x, w, bias, y, globals;
  uint K, rows, row0, n_tile, n_off, ldy, w_row_bytes, has_bias, bias_dtype;
  uvec2 residual;  // GEMV_ADD's r (laid out as y), added to every output (EPI 2); the SWIGLU's up weight (3, 4); positions (5, 6)
  // RMSNORM_GEMV's norm weight (EPI 1): x is multiplied by it as it is staged, each row's sum of
  // squares of x is kept beside, and a row's sums are multiplied by its 1 / sqrt(ss / K + eps) in the
  // epilogue (before the bias), as gemv.comp's norm does.
  uvec2 norm_w;
  uint norm_dtype;
  float eps;
  uint rope, style, kv_pos;  // EPI 5, 6: common/gemm_rope_kv.glsl
  float log2_theta;
} pc;
#include "common/gemm_rope_kv.glsl"

const uint BK = 16u;
const uint BM = 16u * TM, BN = 16u * TN;
const uint XV = BM / 64u;           // x vec4 loads per invocation per step (BM * 4 / 256)
const uint WU = (BN + 127u) / 128u;  // W units per invocation per step (BN * 2 / 256, rounded up)
// [k][row / 4] as vec4 (4 consecutive rows), one vec4 of padding per k row against bank conflicts.
shared vec4 xs[BK][BM / 4u + 1u];
shared vec4 ws[BK][BN / 4u + 1u];
// The norm's sums (each loader's sum of squares, then each row's 1 / RMS) reuse the x tiles once the
// K loop is done: arrays of their own cost a workgroup per multiprocessor where the tiles already
// fill the shared memory (the H200 ran every GEMM 10-45% slower, plain ones too;
// benchmarks/results/2026-11-28-h200-prefill-fusion, call2).
// Floats 0 .. 4 BM - 1: the loaders' sums (4 loaders a row); 4 BM .. 5 BM - 1: the rows' 1 / RMS.
const uint XSW = 4u * (BM / 4u + 1u);  // floats per row of xs
void put_norm(uint i, float v) { xs[i / XSW][(i % XSW) >> 2][i & 3u] = v; }
float norm_at(uint i) { return xs[i / XSW][(i % XSW) >> 2][i & 3u]; }

// Tile column n's weight and its row's first byte (SWIGLU: gate and up rows interleaved; ROPE_KV: rotation
// pairs in a thread's columns).
uvec2 w_of(uint n) { return SWIGLU && (n & 1u) != 0u ? pc.residual : pc.w; }
uint w_row_byte(uint n) { return (pc.n_off + (SWIGLU ? n >> 1 : ROPE_KV ? rope_kv_col(n) : n)) * pc.w_row_bytes; }

void main() {
  uint tid = gl_LocalInvocationID.x;
  uint tx = tid % 16u, ty = tid / 16u;
  uint n0 = octo_group_linear() * BN;
  uint m0 = gl_WorkGroupID.y * BM;
  if (n0 >= pc.n_tile || m0 >= pc.rows) return;

  v4_buf xb = v4_buf(pc.x);
  uint kq = pc.K >> 2;  // x row length in vec4

  // Loader roles. x: load p covers row (tid / 4 + 64 p), k quad tid % 4 of the step.
  // W: unit p covers column (tid / 2 + 128 p), unit tid % 2 of the step.
  uint xr = tid / 4u, xq = tid % 4u;
  uint wc = tid / 2u, wu = tid % 2u;

  vec4 xv[XV];
  float wv[WU][8];
  // The norm: the norm weight's elements of this invocation's k quad, fetched with x (the quad is the
  // same for every p) so no load waits between the products and the next step's staging.
  vec4 gv = vec4(1.0);

  // Issue the global loads of the step starting at k0 into registers.
#define LOAD_STEP(k0)                                                                    \
  if (NORM) gv = load_norm4(pc.norm_w, (k0) + 4u * xq, pc.norm_dtype);                   \
  [[unroll]] for (uint p = 0u; p < XV; ++p) {                                            \
    uint r = m0 + xr + 64u * p;                                                          \
    uint xi = (pc.row0 + r) * kq + ((k0) >> 2) + xq;                                     \
    if (X16) {                                                                           \
      uvec2 h = r < pc.rows ? x16_buf(pc.x).d[xi] : uvec2(0u);                           \
      xv[p] = vec4(unpackHalf2x16(h.x), unpackHalf2x16(h.y));                            \
    } else {                                                                             \
      xv[p] = r < pc.rows ? xb.d[xi] : vec4(0.0);                                        \
    }                                                                                    \
  }                                                                                      \
  [[unroll]] for (uint p = 0u; p < WU; ++p) {                                            \
    uint c = wc + 128u * p;                                                              \
    if (c < BN) {                                                                        \
      uint n = min(n0 + c, pc.n_tile - 1u);                                              \
      WUNIT(w_of(n), w_row_byte(n), ((k0) >> 3) + wu, wv[p]);                           \
    }                                                                                    \
  }

  vec4 acc[TM * TN / 4u];
  [[unroll]] for (uint i = 0u; i < TM * TN / 4u; ++i) acc[i] = vec4(0.0);
  float ss[XV];
  [[unroll]] for (uint p = 0u; p < XV; ++p) ss[p] = 0.0;

  LOAD_STEP(0u)
  for (uint k0 = 0u; k0 < pc.K; k0 += BK) {
    [[unroll]] for (uint p = 0u; p < XV; ++p) {
      uint r = xr + 64u * p;
      vec4 v = xv[p];
      if (NORM) {
        ss[p] += dot(v, v);
        v *= gv;
      }
      xs[4u * xq + 0u][r >> 2][r & 3u] = v.x;
      xs[4u * xq + 1u][r >> 2][r & 3u] = v.y;
      xs[4u * xq + 2u][r >> 2][r & 3u] = v.z;
      xs[4u * xq + 3u][r >> 2][r & 3u] = v.w;
    }
    [[unroll]] for (uint p = 0u; p < WU; ++p) {
      uint c = wc + 128u * p;
      if (c < BN) {
        [[unroll]] for (uint i = 0u; i < 8u; ++i) ws[8u * wu + i][c >> 2][c & 3u] = wv[p][i];
      }
    }
    barrier();
    if (k0 + BK < pc.K) {
      LOAD_STEP(k0 + BK)
    }
    [[unroll]] for (uint k = 0u; k < BK; ++k) {
      vec4 a[TM / 4u], b[TN / 4u];
      [[unroll]] for (uint h = 0u; h < TM / 4u; ++h) a[h] = xs[k][ty + 16u * h];
      [[unroll]] for (uint g = 0u; g < TN / 4u; ++g) b[g] = ws[k][tx + 16u * g];
      [[unroll]] for (uint h = 0u; h < TM / 4u; ++h)
        [[unroll]] for (uint i = 0u; i < 4u; ++i)
          [[unroll]] for (uint g = 0u; g < TN / 4u; ++g) acc[(4u * h + i) * (TN / 4u) + g] += a[h][i] * b[g];
    }
    barrier();
  }
#undef LOAD_STEP
  if (NORM) {  // loaders 4 r .. 4 r + 3 hold row r's sums of squares
    [[unroll]] for (uint p = 0u; p < XV; ++p) put_norm(4u * (xr + 64u * p) + xq, ss[p]);
    barrier();
    for (uint r = tid; r < BM; r += 256u)
      put_norm(4u * BM + r, 1.0 / sqrt((norm_at(4u * r) + norm_at(4u * r + 1u) + norm_at(4u * r + 2u) + norm_at(4u * r + 3u)) / float(pc.K) + pc.eps));
    barrier();
  }

  // Thread (tx, ty) holds rows 4 (ty + 16 h) + i and columns 4 (tx + 16 g) + j: a subgroup's stores of
  // one (h, i, g) cover 64 consecutive columns.
  f32_buf yb = f32_buf(pc.y);
  [[unroll]] for (uint h = 0u; h < TM / 4u; ++h)
    [[unroll]] for (uint i = 0u; i < 4u; ++i) {
      uint m = m0 + 4u * (ty + 16u * h) + i;
      if (m >= pc.rows) continue;
      uint yrow = (pc.row0 + m) * pc.ldy + pc.n_off;
      if (SWIGLU) {  // columns 4 (tx + 16 g) .. + 3: outputs half of that and one more (n_tile is even)
        [[unroll]] for (uint g = 0u; g < TN / 4u; ++g)
          [[unroll]] for (uint q = 0u; q < 2u; ++q) {
            uint n = n0 + 4u * (tx + 16u * g) + 2u * q;
            if (n >= pc.n_tile) continue;
            float gt = acc[(4u * h + i) * (TN / 4u) + g][2u * q], up = acc[(4u * h + i) * (TN / 4u) + g][2u * q + 1u];
            if (NORM) {
              gt *= norm_at(4u * BM + 4u * (ty + 16u * h) + i);
              up *= norm_at(4u * BM + 4u * (ty + 16u * h) + i);
            }
            yb.d[yrow + (n >> 1)] = gt / (1.0 + exp(-gt)) * up;
          }
        continue;
      }
      if (ROPE_KV) {  // columns 4 (tx + 16 g) .. + 3: two rotation pairs (n_tile % 4 == 0)
        [[unroll]] for (uint g = 0u; g < TN / 4u; ++g) {
          uint nb = n0 + 4u * (tx + 16u * g);
          if (nb >= pc.n_tile) continue;
          vec4 v = acc[(4u * h + i) * (TN / 4u) + g];
          if (NORM) v *= norm_at(4u * BM + 4u * (ty + 16u * h) + i);
          rope_kv_store(pc.row0 + m, nb, v);
        }
        continue;
      }
      [[unroll]] for (uint g = 0u; g < TN / 4u; ++g)
        [[unroll]] for (uint j = 0u; j < 4u; ++j) {
          uint n = n0 + 4u * (tx + 16u * g) + j;
          if (n >= pc.n_tile) continue;
          float s = acc[(4u * h + i) * (TN / 4u) + g][j];
          if (NORM) s *= norm_at(4u * BM + 4u * (ty + 16u * h) + i);
          if (pc.has_bias != 0u) s += load_elem(pc.bias, pc.n_off + n, pc.bias_dtype);
          if (RESID) s = f32_buf(pc.residual).d[yrow + n] + s;
          yb.d[yrow + n] = s;
        }
    }
}
