#version 450
// GEMV_TILE / GEMM_TILE: y[r, n_off+n] = x[r] . W[n_off+n] (+ bias[n_off+n]) for n < n_tile and rows
// row0 .. row0+rows. The weight dtype is fixed per variant (WUNIT / WELEM, see shaders/variants.cmake)
// and dequantized in registers. A workgroup computes NR columns for RB rows, so each weight unit is
// read once per RB rows; its threads split K and reduce through subgroupAdd (OCTO_SUBGROUP variants)
// or shared memory. Block-quantized formats with GEMV_BLOCK defined (its IR dtype code) run the
// per-format chunk loops of common/gemv_chunks.glsl; the others split K in 8-element units (16-byte
// loads). VEC = false (unaligned x or W, K % 8 != 0) takes the one-element-at-a-time path.
#include "common/weights.glsl"
#ifdef OCTO_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint NR = 2;     // output columns per workgroup
layout(constant_id = 2) const uint RB = 1;     // rows per workgroup
layout(constant_id = 3) const bool VEC = true; // K % 8 == 0 and 16-byte aligned x / W: unit loads
// Block formats: x goes through shared memory in tiles of XT floats per row, loaded coalesced once per
// workgroup, instead of each invocation's own vec4 loads of its chunk's x elements. Off by default:
// 1.3-4x slower on an H200 (benchmarks/results/2026-11-21-h100-gemv); kept for other devices.
layout(constant_id = 4) const bool XS = false;

layout(push_constant) uniform params {
  uvec2 x, w, bias, y, globals;
  uint K, rows, row0, n_tile, n_off, ldy, w_row_bytes, has_bias, bias_dtype;
} pc;

shared float red[NR * RB * gl_WorkGroupSize.x];

float acc[NR * RB];
#ifdef GEMV_BLOCK
uint wrow[NR];  // byte offset of each weight row of the workgroup (clamped to the tile)
uint xrow[RB];  // vec4 index of each x row (clamped to the rows present)
// The x tile: XT floats per row (a multiple of 256), one padding vec4 after every 2^XPAD vec4s so the
// chunk loops' 16-byte reads of a quarter subgroup fall in distinct banks.
#if GEMV_BLOCK == 17 || GEMV_BLOCK == 18 || GEMV_BLOCK == 19
const uint XPAD = 4u;
#else
const uint XPAD = 3u;
#endif
const uint XT = 4096u >> (RB - 1u - (RB >> 2));  // 4096, 2048, 1024, 1024 floats for 1..4 rows
const uint XROW = XT / 4u + (XT / 4u >> XPAD);
shared vec4 xsh[uint(XS) * RB * XROW + 1u];
uint xk0 = 0u;  // first element of the current tile
#include "common/gemv_chunks.glsl"
#endif

void main() {
  const uint WG = gl_WorkGroupSize.x;
  uint tid = gl_LocalInvocationID.x;
  uint nb = octo_group_linear() * NR;
  if (nb >= pc.n_tile) return;
  uint rb = gl_WorkGroupID.y * RB;
  if (rb >= pc.rows) return;
  uint nrows = min(RB, pc.rows - rb);

  [[unroll]] for (uint i = 0u; i < NR * RB; ++i) acc[i] = 0.0;

#ifdef GEMV_BLOCK
  if (VEC) {
    [[unroll]] for (uint c = 0u; c < NR; ++c) wrow[c] = (pc.n_off + min(nb + c, pc.n_tile - 1u)) * pc.w_row_bytes;
    [[unroll]] for (uint r = 0u; r < RB; ++r) xrow[r] = ((pc.row0 + rb + min(r, nrows - 1u)) * pc.K) >> 2;
    const uint BE = CBE;  // elements per block (gemv_chunks.glsl)
    if (XS) {
      for (uint k0 = 0u; k0 < pc.K; k0 += XT) {
        uint kn4 = min(XT, pc.K - k0) >> 2;
        barrier();  // the previous tile is consumed
        v4_buf xb = v4_buf(pc.x);
        for (uint v = tid; v < RB * kn4; v += WG) {
          uint r = v / kn4, q = v - r * kn4;
          xsh[r * XROW + q + (q >> XPAD)] = xb.d[xrow[r] + (k0 >> 2) + q];
        }
        barrier();
        xk0 = k0;
        uint c0 = k0 / BE * CPB, c1 = c0 + (kn4 << 2) / BE * CPB;
        for (uint c = c0 + tid; c < c1; c += WG) gemv_chunk(c);
      }
    } else {
      uint chunks = pc.K / BE * CPB;
      for (uint c = tid; c < chunks; c += WG) gemv_chunk(c);
    }
  } else
#endif
  if (VEC) {
    v4_buf xb = v4_buf(pc.x);
    uint units = pc.K >> 3;
    for (uint u = tid; u < units; u += WG) {
      float wv[NR * 8];
      [[unroll]] for (uint c = 0u; c < NR; ++c) {
        uint n = min(nb + c, pc.n_tile - 1u);
        float t[8];
        WUNIT(pc.w, (pc.n_off + n) * pc.w_row_bytes, u, t);
        [[unroll]] for (uint i = 0u; i < 8u; ++i) wv[c * 8u + i] = t[i];
      }
      [[unroll]] for (uint r = 0u; r < RB; ++r) {
        if (r < nrows) {
          uint q = (((pc.row0 + rb + r) * pc.K) >> 2) + 2u * u;
          vec4 xa = xb.d[q];
          vec4 xc = xb.d[q + 1u];
          [[unroll]] for (uint c = 0u; c < NR; ++c) {
            acc[c * RB + r] += dot(xa, vec4(wv[c * 8u], wv[c * 8u + 1u], wv[c * 8u + 2u], wv[c * 8u + 3u])) +
                               dot(xc, vec4(wv[c * 8u + 4u], wv[c * 8u + 5u], wv[c * 8u + 6u], wv[c * 8u + 7u]));
          }
        }
      }
    }
  } else {
    f32_buf xb = f32_buf(pc.x);
    for (uint k = tid; k < pc.K; k += WG) {
      float wv[NR];
      [[unroll]] for (uint c = 0u; c < NR; ++c)
        wv[c] = WELEM(pc.w, (pc.n_off + min(nb + c, pc.n_tile - 1u)) * pc.w_row_bytes, k);
      [[unroll]] for (uint r = 0u; r < RB; ++r) {
        if (r < nrows) {
          float xv = xb.d[(pc.row0 + rb + r) * pc.K + k];
          [[unroll]] for (uint c = 0u; c < NR; ++c) acc[c * RB + r] += wv[c] * xv;
        }
      }
    }
  }

#ifdef OCTO_SUBGROUP
  [[unroll]] for (uint i = 0u; i < NR * RB; ++i) {
    float s = subgroupAdd(acc[i]);
    if (subgroupElect()) red[i * WG + gl_SubgroupID] = s;
  }
  barrier();
  uint parts = gl_NumSubgroups;
#else
  [[unroll]] for (uint i = 0u; i < NR * RB; ++i) red[i * WG + tid] = acc[i];
  barrier();
  uint parts = WG;
#endif
  if (tid < NR * RB) {
    uint c = tid / RB, r = tid % RB;
    uint n = nb + c;
    if (n < pc.n_tile && r < nrows) {
      float s = 0.0;
      for (uint p = 0u; p < parts; ++p) s += red[tid * WG + p];
      if (pc.has_bias != 0u) s += load_elem(pc.bias, pc.n_off + n, pc.bias_dtype);
      f32_buf(pc.y).d[(pc.row0 + rb + r) * pc.ldy + pc.n_off + n] = s;
    }
  }
}
