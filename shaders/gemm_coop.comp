#version 450
// GEMM_TILE / GEMV_TILE over many rows (prefill) on tensor cores through GL_NV_cooperative_matrix:
// y[row0+m, n_off+n] = x[row0+m] . W[n_off+n] (+ bias), f16 products summed in f32.
// Four subgroups of 32 in a 2 x 2 layout; each owns FM x FN fragments of 16 x 8 (spec constants 1, 2),
// so the workgroup tile is (32 FM) x (16 FN). Per step of BK (32 or 64) along K, x (f32, 16-byte loads) and W
// (dequantized once per tile by WUNIT) are staged in shared memory as f16; the next step's global loads
// are issued into registers before this step's matrix products. Results go through a per-subgroup
// 16 x 8 f32 staging area so edge tiles, bias and the output's row stride keep GEMM_TILE's semantics.
// Precision: with OCTO_COOP_SPLIT (the planner's default) each factor is split into f16 high and low
// parts, v = hi + lo, and three products hi.hi + lo.hi + hi.lo keep about 22 bits of every input, close
// to an f32 kernel; without it (gemm_coopf_*: activations and dequantized weights rounded to f16, as
// llama.cpp does) the products cost a third but carry f16's 11 bits. Inputs beyond f16's range
// (|v| > 65504) saturate to +-65504 in gemm_coopf and become infinite in the split kernel.
// gemm_coopf is the planner's default where the VM's precision is `fast` (the default, docs/precision.md);
// gemm_coop runs on request (OCTO_GEMM_KERNEL=coop). Both only where the device reports VK_NV_cooperative_matrix and a subgroup size of 32 (16x8x16 f16 -> f32 is the shape
// NVIDIA exposes since Turing).
// Needs K % BK == 0, 16-byte-aligned x rows and WUNIT's own alignment (see weights.glsl).
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#include "common/weights.glsl"

layout(local_size_x = 128) in;
layout(constant_id = 1) const uint FM = 2u;
layout(constant_id = 2) const uint FN = 4u;
layout(constant_id = 3) const uint BK = 32u;  // K per step: 32, or 64 (half the barriers; K % 64 == 0)

layout(push_constant) uniform params {
  uvec2 x, w, bias, y, globals;
  uint K, rows, row0, n_tile, n_off, ldy, w_row_bytes, has_bias, bias_dtype;
} pc;

const uint SK = BK + 8u;  // shared row stride in halves: 16 bytes of padding keeps consecutive rows on distinct banks
const uint BM = 32u * FM, BN = 16u * FN;
const uint XQ = BK / 4u;   // x quads a row per step
const uint WR = BK / 8u;   // W units (8 weights) a row per step
const uint XV = BM * XQ / 128u;  // x vec4 loads per invocation per step
const uint WU = BN * WR / 128u;  // W units per invocation per step
shared float16_t as_[BM * SK];  // x tile, row-major [m][k]
shared float16_t bs_[BN * SK];  // W tile, [n][k]: B = W^T read column-major
#ifdef OCTO_COOP_SPLIT
shared float16_t al_[BM * SK];  // low parts
shared float16_t bl_[BN * SK];
// hi keeps the top 11 significant bits by masking (exact in f16 for |v| >= 2^-14); lo = v - hi is
// exact in f32. Masking rather than v - float(float16_t(v)): a driver may fold that round trip to v.
#define PUT(arr, lo, o, v)                                                \
  {                                                                       \
    float hi_ = uintBitsToFloat(floatBitsToUint(v) & 0xffffe000u);        \
    arr[o] = float16_t(hi_);                                              \
    lo[o] = float16_t((v) - hi_);                                         \
  }
#else
// Saturating: a finite input beyond f16's range becomes +-65504, not infinity (docs/precision.md).
#define PUT(arr, lo, o, v) arr[o] = float16_t(clamp((v), -65504.0, 65504.0));
#endif
shared float cs[4u * 128u];     // one 16 x 8 f32 fragment per subgroup, for the epilogue

void main() {
  uint tid = gl_LocalInvocationID.x;
  uint sg = tid / 32u, lane = tid % 32u;
  uint wm = sg % 2u, wn = sg / 2u;
  uint n0 = octo_group_linear() * BN;
  uint m0 = gl_WorkGroupID.y * BM;
  if (n0 >= pc.n_tile || m0 >= pc.rows) return;

  v4_buf xb = v4_buf(pc.x);
  uint kq = pc.K >> 2;
  // x: load p covers row tid / XQ + (128 / XQ) p, k quad tid % XQ. W: unit p covers column
  // tid / WR + (128 / WR) p, unit tid % WR.
  uint xr = tid / XQ, xq = tid % XQ;
  uint wc = tid / WR, wu = tid % WR;

  vec4 xv[XV];
  float wv[WU][8];
#define LOAD_STEP(k0)                                                              \
  [[unroll]] for (uint p = 0u; p < XV; ++p) {                                      \
    uint r = m0 + xr + (128u / XQ) * p;                                            \
    xv[p] = r < pc.rows ? xb.d[(pc.row0 + r) * kq + ((k0) >> 2) + xq] : vec4(0.0); \
  }                                                                                \
  [[unroll]] for (uint p = 0u; p < WU; ++p) {                                      \
    uint n = min(n0 + wc + (128u / WR) * p, pc.n_tile - 1u);                       \
    WUNIT(pc.w, (pc.n_off + n) * pc.w_row_bytes, ((k0) >> 3) + wu, wv[p]);         \
  }

  fcoopmatNV<32, gl_ScopeSubgroup, 16, 8> acc[FM * FN];
  [[unroll]] for (uint i = 0u; i < FM * FN; ++i) acc[i] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 8>(0.0);

  LOAD_STEP(0u)
  for (uint k0 = 0u; k0 < pc.K; k0 += BK) {
    [[unroll]] for (uint p = 0u; p < XV; ++p) {
      uint o = (xr + (128u / XQ) * p) * SK + 4u * xq;
      PUT(as_, al_, o + 0u, xv[p].x)
      PUT(as_, al_, o + 1u, xv[p].y)
      PUT(as_, al_, o + 2u, xv[p].z)
      PUT(as_, al_, o + 3u, xv[p].w)
    }
    [[unroll]] for (uint p = 0u; p < WU; ++p) {
      uint o = (wc + (128u / WR) * p) * SK + 8u * wu;
      [[unroll]] for (uint i = 0u; i < 8u; ++i) PUT(bs_, bl_, o + i, wv[p][i])
    }
    barrier();
    if (k0 + BK < pc.K) {
      LOAD_STEP(k0 + BK)
    }
    [[unroll]] for (uint kk = 0u; kk < BK; kk += 16u) {
      fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a[FM];
      [[unroll]] for (uint i = 0u; i < FM; ++i)
        coopMatLoadNV(a[i], as_, (wm * 16u * FM + 16u * i) * SK + kk, SK, false);
#ifdef OCTO_COOP_SPLIT
      fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> alo[FM];
      [[unroll]] for (uint i = 0u; i < FM; ++i)
        coopMatLoadNV(alo[i], al_, (wm * 16u * FM + 16u * i) * SK + kk, SK, false);
#endif
      [[unroll]] for (uint j = 0u; j < FN; ++j) {
        fcoopmatNV<16, gl_ScopeSubgroup, 16, 8> b;
        coopMatLoadNV(b, bs_, (wn * 8u * FN + 8u * j) * SK + kk, SK, true);
#ifdef OCTO_COOP_SPLIT
        fcoopmatNV<16, gl_ScopeSubgroup, 16, 8> blo;
        coopMatLoadNV(blo, bl_, (wn * 8u * FN + 8u * j) * SK + kk, SK, true);
        [[unroll]] for (uint i = 0u; i < FM; ++i) {
          acc[i * FN + j] = coopMatMulAddNV(alo[i], b, acc[i * FN + j]);
          acc[i * FN + j] = coopMatMulAddNV(a[i], blo, acc[i * FN + j]);
        }
#endif
        [[unroll]] for (uint i = 0u; i < FM; ++i) acc[i * FN + j] = coopMatMulAddNV(a[i], b, acc[i * FN + j]);
      }
    }
    barrier();
  }
#undef LOAD_STEP
#undef PUT

  // Epilogue: each fragment through this subgroup's staging area; lane l writes row l / 2, columns
  // 4 (l % 2) .. + 3 of it.
  f32_buf yb = f32_buf(pc.y);
  uint fr = lane / 2u, fc = 4u * (lane % 2u);
  [[unroll]] for (uint i = 0u; i < FM; ++i)
    [[unroll]] for (uint j = 0u; j < FN; ++j) {
      coopMatStoreNV(acc[i * FN + j], cs, sg * 128u, 8u, false);
      subgroupBarrier();
      uint m = m0 + wm * 16u * FM + 16u * i + fr;
      uint nb = n0 + wn * 8u * FN + 8u * j + fc;
      if (m < pc.rows) {
        uint yrow = (pc.row0 + m) * pc.ldy + pc.n_off;
        [[unroll]] for (uint c = 0u; c < 4u; ++c) {
          uint n = nb + c;
          if (n < pc.n_tile) {
            float s = cs[sg * 128u + fr * 8u + fc + c];
            if (pc.has_bias != 0u) s += load_elem(pc.bias, pc.n_off + n, pc.bias_dtype);
            yb.d[yrow + n] = s;
          }
        }
      }
      subgroupBarrier();
    }
}
