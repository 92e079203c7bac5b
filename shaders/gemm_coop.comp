#version 450
// GEMM_TILE / GEMV_TILE / GEMV_ADD over many rows (prefill) on tensor cores through GL_NV_cooperative_matrix:
// y[row0+m, n_off+n] = (r[row0+m, n_off+n] +) x[row0+m] . W[n_off+n] (+ bias), f16 products summed in f32.
// WM x WN subgroups of 32 (WG = 32 WM WN invocations, spec constants 0 and 4); each owns FM x FN
// fragments of 16 x 8 (spec constants 1, 2), so the workgroup tile is (16 FM WM) x (8 FN WN). Per step
// of BK (32 or 64) along K, x (f32) and W (dequantized by WUNIT) are staged in shared memory as f16, in
// units of 8 halves (one 16-byte store each). The shared tiles are double-buffered: step s's global loads
// go into registers before step s-1's matrix products and into the other buffer after them, so one
// barrier per step orders both. Results go through a per-subgroup 16 x 8 f32 staging area so edge
// tiles, bias and the output's row stride keep GEMM_TILE's semantics.
// Precision: with OCTO_COOP_SPLIT each factor is split into f16 high and low parts, v = hi + lo, and
// three products hi.hi + lo.hi + hi.lo keep about 22 bits of every input, close to an f32 kernel;
// without it (gemm_coopf_*: activations and dequantized weights rounded to f16, as llama.cpp does) the
// products cost a third but carry f16's 11 bits. Inputs beyond f16's range (|v| > 65504) saturate to
// +-65504 in gemm_coopf and become infinite in the split kernel.
// gemm_coopf is the planner's default where the VM's precision is `fast` (the default, docs/precision.md);
// gemm_coop runs on request (OCTO_GEMM_KERNEL=coop). Both only where the device reports
// VK_NV_cooperative_matrix and a subgroup size of 32 (16x8x16 f16 -> f32 is the shape NVIDIA exposes
// since Turing).
// W_RAW (gemm_coopf_f16): F16 weights are copied to shared memory as loaded (16 bytes, no conversion);
// W16_Q8_0 (gemm_coopf_q8_0): Q8_0 dequantized straight to f16 pairs (w16_q8_0); the other formats are
// dequantized to floats by WUNIT and rounded to f16 like x.
// X16 (spec constant 6): x comes as f16 rows, rounded once ahead (rows_f16_f32), copied to the tiles as
// loaded; the same values as rounding f32 x here (src/vulkan/kernels/gemm.cpp, plan_x_f16).
// Needs K % BK == 0, 16-byte-aligned x rows and WUNIT's own alignment (see weights.glsl).
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#include "common/weights.glsl"
#include "common/w16.glsl"  // pack_sat, w16_q8_0: the f16 weights weights_f16.comp makes too

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint FM = 2u;
layout(constant_id = 2) const uint FN = 4u;
layout(constant_id = 3) const uint BK = 32u;  // K per step: 32, or 64 (K % 64 == 0)
layout(constant_id = 4) const uint WM = 2u;   // subgroups along M; WN = WG / 32 / WM along N
// The fused epilogue (spec constant 5; src/vulkan/kernels/gemm.cpp): 0 plain, 1 RMSNORM_GEMV's norm,
// 2 GEMV_ADD's residual, 3 RMSNORM_SWIGLU's SiLU.mul (its norm ahead, in x), 4 the norm and SiLU.mul,
// 5 RMSNORM_GEMV_ROPE's / RMSNORM_GEMV_KV's RoPE and cache write (the norm ahead), 6 the norm and those
// (common/gemm_rope_kv.glsl).
// A constant, not a test of the push fields, so the plain GEMM compiles without the norm's registers
// and code: as a run-time test it cost every GEMM 7-10% on the H200
// (benchmarks/results/2026-11-28-h200-prefill-fusion, call3).
// SWIGLU: the tile's columns are gate and up rows interleaved, column 2 o + s being row n_off + o of
// the gate weight (s = 0, pc.w) or of the up weight (s = 1, pc.residual), so n_tile counts 2 columns an
// output; each lane holds 4 consecutive columns in the epilogue, two outputs' pairs, and writes
// y[.., n_off + o] = silu(gate) * up.
layout(constant_id = 5) const uint EPI = 0u;
const bool NORM = EPI == 1u || EPI == 4u || EPI == 6u, RESID = EPI == 2u, SWIGLU = EPI == 3u || EPI == 4u;
// X16 (spec constant 6): x arrives as f16 rows of K halves (pc.x, rows row0 ..), rounded as this kernel
// rounds f32 x (pack_sat), and is copied to shared memory as loaded: half the bytes and registers of
// an f32 row, no conversion. Not with the norm (it needs x's f32 squares) or the split factors.
layout(constant_id = 6) const bool X16 = false;
// DEEP (spec constant 7; with X16, without the norm): the three-stage K loop below (two register sets
// of loads in flight), where x's f16 tiles leave the registers for it.
layout(constant_id = 7) const bool DEEP_ASKED = false;
const bool DEEP = DEEP_ASKED && X16 && !NORM;
// EPI_REGS (spec constant 8; not with the RoPE / KV epilogue, whose lanes take 4 consecutive columns):
// the epilogue reads each invocation's own elements of the sums, as NVIDIA's mma.m16n8k16 fragments
// hold them (rows lane / 4 and lane / 4 + 8, columns 2 (lane % 4) and the next), instead of staging
// every 16 x 8 fragment through shared memory. The planner asks for it only where the VM's probe found
// that layout (device_facts::coop_mma_layout).
layout(constant_id = 8) const bool EPI_REGS_ASKED = false;
// OCTO_COOP_KSPLIT (gemm_coopf_f16_ksplit; never with the norm in the staging): each output tile's K
// steps are split over KSPLIT workgroups (spec constant 9; gl_WorkGroupID.y = row tile + row tiles x
// split), so a grid of few tiles fills the GPU. Each writes its sums to its slot of the partials
// (pc.norm_w, then the task's transient scratch: [tile][split][BM x BN] floats) and counts its arrival
// on its tile's counter (pc.counters, the task's own scratch, zero-filled once); the last to arrive (it
// never waits on the others: no forward-progress assumption) adds the slots in split order, so the sums
// do not depend on which arrives last, stages them for the epilogue (not EPI_REGS's, which reads the
// accumulators) and puts the counter back to 0 for the next run. A module of its own, so the unsplit
// modules keep none of it (the same SPIR-V as before it): the first form, in every module behind a spec
// constant, gave every launch wrong sums on the H100 (its shared flag moved the staging area off its
// 16-byte alignment; benchmarks/results/2026-12-07-h100-ksplit, calls 1-7).
#ifdef OCTO_COOP_KSPLIT
layout(constant_id = 9) const uint KSPLIT = 2u;
layout(buffer_reference, std430, buffer_reference_align = 4) coherent buffer partials_f32 { float d[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) coherent buffer counters_u32 { uint d[]; };
#endif

layout(push_constant) uniform params {
  uvec2 x, w, bias, y, globals;
  uint K, rows, row0, n_tile, n_off, ldy, w_row_bytes, has_bias, bias_dtype;
  uvec2 residual;  // GEMV_ADD's r (laid out as y), added to every output (EPI 2); the SWIGLU's up weight (3, 4); positions (5, 6)
  // RMSNORM_GEMV's norm weight (EPI 1): x is multiplied by it as it is staged, each row's sum of
  // squares of x is kept beside, and a row's sums are multiplied by its 1 / sqrt(ss / K + eps) in the
  // epilogue (before the bias), as gemv.comp's norm does. OCTO_COOP_KSPLIT: the partials.
  uvec2 norm_w;
  uint norm_dtype;
  float eps;
  uint rope, style, kv_pos;  // EPI 5, 6: common/gemm_rope_kv.glsl
  float log2_theta;
#ifdef OCTO_COOP_KSPLIT
  uvec2 counters;  // one arrival counter per output tile
#endif
} pc;
#include "common/gemm_rope_kv.glsl"

const uint WG = gl_WorkGroupSize.x;
const uint NSG = WG / 32u, WN = NSG / WM;
const uint BM = 16u * FM * WM, BN = 8u * FN * WN;
const uint KU = BK / 8u;          // units of 8 halves a row per step
const uint SK = KU + 1u;          // shared row stride in units: 16 bytes of padding keep consecutive rows on distinct banks
const uint XV = BM * KU / WG;     // x units per invocation per step
const uint WU = BN * KU / WG;     // W units per invocation per step
shared uvec4 as_[2u * BM * SK];   // x tiles, row-major [m][k], two buffers
shared uvec4 bs_[2u * BN * SK];   // W tiles, [n][k]: B = W^T read column-major
#ifdef OCTO_COOP_SPLIT
shared uvec4 al_[2u * BM * SK];   // low parts
shared uvec4 bl_[2u * BN * SK];
// hi keeps the top 11 significant bits by masking (exact in f16 for |v| >= 2^-14); lo = v - hi is
// exact in f32. Masking rather than v - float(float16_t(v)): a driver may fold that round trip to v.
float hi_part(float v) { return uintBitsToFloat(floatBitsToUint(v) & 0xffffe000u); }
uint pack_hi(float a, float b) { return packFloat2x16(f16vec2(float16_t(hi_part(a)), float16_t(hi_part(b)))); }
uint pack_lo(float a, float b) { return packFloat2x16(f16vec2(float16_t(a - hi_part(a)), float16_t(b - hi_part(b)))); }
#define PUT(arr, lo, o, v)                                                                          \
  {                                                                                                 \
    arr[o] = uvec4(pack_hi(v[0], v[1]), pack_hi(v[2], v[3]), pack_hi(v[4], v[5]), pack_hi(v[6], v[7])); \
    lo[o] = uvec4(pack_lo(v[0], v[1]), pack_lo(v[2], v[3]), pack_lo(v[4], v[5]), pack_lo(v[6], v[7])); \
  }
#else
#define PUT(arr, lo, o, v) arr[o] = uvec4(pack_sat(v[0], v[1]), pack_sat(v[2], v[3]), pack_sat(v[4], v[5]), pack_sat(v[6], v[7]));
#endif
shared float cs[NSG * 128u];      // one 16 x 8 f32 fragment per subgroup, for the epilogue
// The norm's sums (each loader's sum of squares, then each row's 1 / RMS) reuse the x tiles once the
// K loop is done: arrays of their own cost a workgroup per multiprocessor where the tiles already
// fill the shared memory (the H200 ran every GEMM 10-45% slower, plain ones too;
// benchmarks/results/2026-11-28-h200-prefill-fusion, call2).
// Floats 0 .. WG - 1: the loaders' sums (KU loaders a row); WG .. WG + BM - 1: the rows' 1 / RMS.
void put_norm(uint i, float v) { as_[i >> 2][i & 3u] = floatBitsToUint(v); }
float norm_at(uint i) { return uintBitsToFloat(as_[i >> 2][i & 3u]); }

#if defined(W16_Q8_0) && !defined(OCTO_COOP_SPLIT)
#define W16 w16_q8_0
#endif

// Tile column n's weight and its row's first byte (SWIGLU: gate and up rows interleaved; ROPE_KV: rotation
// pairs in a lane's columns).
uvec2 w_of(uint n) { return SWIGLU && (n & 1u) != 0u ? pc.residual : pc.w; }
uint w_row_byte(uint n) { return (pc.n_off + (SWIGLU ? n >> 1 : ROPE_KV ? rope_kv_col(n) : n)) * pc.w_row_bytes; }

void main() {
  uint tid = gl_LocalInvocationID.x;
  uint sg = tid / 32u, lane = tid % 32u;
  uint wm = sg % WM, wn = sg / WM;
  uint n0 = octo_group_linear() * BN;
#ifdef OCTO_COOP_KSPLIT
  uint row_tiles = (pc.rows + BM - 1u) / BM;
  uint mt = gl_WorkGroupID.y % row_tiles, ks = gl_WorkGroupID.y / row_tiles;  // row tile, part of K
  uint m0 = mt * BM;
  if (ks >= KSPLIT) return;
#else
  uint m0 = gl_WorkGroupID.y * BM;
#endif
  if (n0 >= pc.n_tile || m0 >= pc.rows) return;

  v4_buf xb = v4_buf(pc.x);
  uint kq = pc.K >> 2;
  // Unit p of an invocation: row (tid + WG p) / KU of the tile, unit (tid + WG p) % KU along K; WG is a
  // multiple of KU, so the unit is the same for every p.
  uint ur = tid / KU, uk = tid % KU;

  // Two register sets of a step's loads (S = 0, 1: constants after unrolling); the second only in the
  // three-stage loop (DEEP).
  float xv[2][XV][8];
  uvec4 xh[2][XV];  // X16: 8 halves per unit, as loaded
  // The norm: x's elements 8 uk .. 8 uk + 7 of a step are scaled by the norm weight's, which LOAD_STEP
  // fetches beside x (the unit is the same for every p) so that no load waits after the products.
  vec4 gv[2] = {vec4(1.0), vec4(1.0)};
  float ss[XV];
#if defined(W_RAW) || defined(W16)
  uvec4 wv[2][WU];  // 8 halves per unit, stored as they are
#ifdef W_RAW
#define LOAD_W(S, p, n, k0) wv[S][p] = u4_buf(w_of(n)).d[(w_row_byte(n) >> 4) + ((k0) >> 3) + uk];
#else
#define LOAD_W(S, p, n, k0) wv[S][p] = W16(w_of(n), w_row_byte(n), ((k0) >> 3) + uk);
#endif
#define STORE_W(S, o, p) bs_[o] = wv[S][p];
#else
  float wv[2][WU][8];
#define LOAD_W(S, p, n, k0) WUNIT(w_of(n), w_row_byte(n), ((k0) >> 3) + uk, wv[S][p]);
#define STORE_W(S, o, p) PUT(bs_, bl_, o, wv[S][p])
#endif
#define LOAD_STEP(S, k0)                                                 \
  if (NORM) {                                                            \
    gv[0] = load_norm4(pc.norm_w, (k0) + 8u * uk, pc.norm_dtype);        \
    gv[1] = load_norm4(pc.norm_w, (k0) + 8u * uk + 4u, pc.norm_dtype);   \
  }                                                                      \
  if (X16) {                                                             \
    [[unroll]] for (uint p = 0u; p < XV; ++p) {                          \
      uint r = m0 + ur + (WG / KU) * p;                                  \
      xh[S][p] = uvec4(0u);                                              \
      if (r < pc.rows) xh[S][p] = u4_buf(pc.x).d[(((pc.row0 + r) * pc.K) >> 3) + ((k0) >> 3) + uk]; \
    }                                                                    \
  } else [[unroll]] for (uint p = 0u; p < XV; ++p) {                     \
    uint r = m0 + ur + (WG / KU) * p;                                    \
    vec4 a = vec4(0.0), b = vec4(0.0);                                   \
    if (r < pc.rows) {                                                   \
      uint q = (pc.row0 + r) * kq + ((k0) >> 2) + 2u * uk;               \
      a = xb.d[q];                                                       \
      b = xb.d[q + 1u];                                                  \
    }                                                                    \
    xv[S][p][0] = a.x; xv[S][p][1] = a.y; xv[S][p][2] = a.z;             \
    xv[S][p][3] = a.w; xv[S][p][4] = b.x; xv[S][p][5] = b.y;             \
    xv[S][p][6] = b.z; xv[S][p][7] = b.w;                                \
  }                                                                      \
  [[unroll]] for (uint p = 0u; p < WU; ++p) {                            \
    uint n = min(n0 + ur + (WG / KU) * p, pc.n_tile - 1u);               \
    LOAD_W(S, p, n, k0)                                                  \
  }
#define STORE_STEP(S, buf)                                               \
  [[unroll]] for (uint p = 0u; p < XV; ++p) {                            \
    uint o = (buf) * BM * SK + (ur + (WG / KU) * p) * SK + uk;           \
    if (X16) {                                                           \
      as_[o] = xh[S][p];                                                 \
      continue;                                                          \
    }                                                                    \
    if (NORM) {                                                          \
      [[unroll]] for (uint i = 0u; i < 4u; ++i) {                        \
        ss[p] += xv[S][p][i] * xv[S][p][i] + xv[S][p][i + 4u] * xv[S][p][i + 4u]; \
        xv[S][p][i] *= gv[0][i];                                         \
        xv[S][p][i + 4u] *= gv[1][i];                                    \
      }                                                                  \
    }                                                                    \
    PUT(as_, al_, o, xv[S][p])                                           \
  }                                                                      \
  [[unroll]] for (uint p = 0u; p < WU; ++p) {                            \
    uint o = (buf) * BN * SK + (ur + (WG / KU) * p) * SK + uk;           \
    STORE_W(S, o, p)                                                     \
  }

  fcoopmatNV<32, gl_ScopeSubgroup, 16, 8> acc[FM * FN];
  [[unroll]] for (uint i = 0u; i < FM * FN; ++i) acc[i] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 8>(0.0);

  [[unroll]] for (uint p = 0u; p < XV; ++p) ss[p] = 0.0;
#ifdef OCTO_COOP_KSPLIT
  // This split's steps (the planner makes every split non-empty), from K element kbase.
  uint per = (pc.K / BK + KSPLIT - 1u) / KSPLIT;
  uint kbase = ks * per * BK, steps = min(per, pc.K / BK - ks * per);
#define K_AT(k) (kbase + (k))
#else
  uint steps = pc.K / BK;
#define K_AT(k) (k)
#endif
  LOAD_STEP(0, K_AT(0u))
  STORE_STEP(0, 0u)
  // 16 halves of K per product, from the tiles at abase (x) and bbase (W) of shared memory.
#define MMA_PRODUCTS(abase, bbase)                                                                      \
  [[unroll]] for (uint kk = 0u; kk < KU; kk += 2u) {                                                    \
    fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a[FM];                                                     \
    [[unroll]] for (uint i = 0u; i < FM; ++i) coopMatLoadNV(a[i], as_, (abase) + 16u * i * SK + kk, SK, false); \
    [[unroll]] for (uint j = 0u; j < FN; ++j) {                                                         \
      fcoopmatNV<16, gl_ScopeSubgroup, 16, 8> b;                                                        \
      coopMatLoadNV(b, bs_, (bbase) + 8u * j * SK + kk, SK, true);                                      \
      [[unroll]] for (uint i = 0u; i < FM; ++i) acc[i * FN + j] = coopMatMulAddNV(a[i], b, acc[i * FN + j]); \
    }                                                                                                   \
  }
#ifndef OCTO_COOP_SPLIT
  if (DEEP) {
    // Three stages: step t+2's loads go into the register set step t frees while step t multiplies, and
    // step t+1's set (loaded during step t-1) goes to shared memory after its products, so a load has
    // two steps of products to arrive instead of one. Two steps an iteration (h: an unrolled constant,
    // so each register set is named by a constant). On the H200 with K steps of 64 where they fit:
    // 1.5B shapes 71.1 -> 75.5 TFLOP/s, 7B 114.8 -> 126.5 (benchmarks/results/2026-11-30-h200-x16, call4).
    if (steps > 1u) {
      LOAD_STEP(1, K_AT(BK))
    }
    barrier();
    for (uint s = 0u; s < steps; s += 2u) {
      [[unroll]] for (uint h = 0u; h < 2u; ++h) {
        uint t = s + h;  // the step; its tiles are in buffer h
        if (t >= steps) break;
        if (t + 2u < steps) {
          LOAD_STEP(h, K_AT((t + 2u) * BK))
        }
        MMA_PRODUCTS(h * BM * SK + wm * 16u * FM * SK, h * BN * SK + wn * 8u * FN * SK)
        if (t + 1u < steps) {
          STORE_STEP(1u - h, 1u - h)
        }
        barrier();
      }
    }
  } else
#endif
  {
    barrier();
    for (uint s = 0u; s < steps; ++s) {
      uint cur = s & 1u;
      bool more = s + 1u < steps;
      if (more) {
        LOAD_STEP(0, K_AT((s + 1u) * BK))
      }
      uint abase = cur * BM * SK + wm * 16u * FM * SK, bbase = cur * BN * SK + wn * 8u * FN * SK;
#ifdef OCTO_COOP_SPLIT
      [[unroll]] for (uint kk = 0u; kk < KU; kk += 2u) {  // 16 halves of K per product
        fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a[FM];
        [[unroll]] for (uint i = 0u; i < FM; ++i) coopMatLoadNV(a[i], as_, abase + 16u * i * SK + kk, SK, false);
        fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> alo[FM];
        [[unroll]] for (uint i = 0u; i < FM; ++i) coopMatLoadNV(alo[i], al_, abase + 16u * i * SK + kk, SK, false);
        [[unroll]] for (uint j = 0u; j < FN; ++j) {
          fcoopmatNV<16, gl_ScopeSubgroup, 16, 8> b;
          coopMatLoadNV(b, bs_, bbase + 8u * j * SK + kk, SK, true);
          fcoopmatNV<16, gl_ScopeSubgroup, 16, 8> blo;
          coopMatLoadNV(blo, bl_, bbase + 8u * j * SK + kk, SK, true);
          [[unroll]] for (uint i = 0u; i < FM; ++i) {
            acc[i * FN + j] = coopMatMulAddNV(alo[i], b, acc[i * FN + j]);
            acc[i * FN + j] = coopMatMulAddNV(a[i], blo, acc[i * FN + j]);
            acc[i * FN + j] = coopMatMulAddNV(a[i], b, acc[i * FN + j]);
          }
        }
      }
#else
      MMA_PRODUCTS(abase, bbase)
#endif
      if (more) {
        STORE_STEP(0, cur ^ 1u)
      }
      barrier();
    }
  }
#undef MMA_PRODUCTS
#undef K_AT
#undef LOAD_STEP
#undef STORE_STEP
#undef LOAD_W
#undef STORE_W
#undef PUT

  if (NORM) {  // loaders KU r .. KU r + KU - 1 hold row r's sums of squares (the same unit uk each step)
    [[unroll]] for (uint p = 0u; p < XV; ++p) {
      put_norm(tid, ss[p]);
      barrier();
      if (uk == 0u) {
        float t = 0.0;
        for (uint u = 0u; u < KU; ++u) t += norm_at(tid + u);
        put_norm(WG + ur + (WG / KU) * p, 1.0 / sqrt(t / float(pc.K) + pc.eps));
      }
      barrier();
    }
  }
  // The K split: every lane's 4 values of every fragment (row lane / 2, columns 4 (lane % 2) .. + 3 of
  // its 16 x 8, through this subgroup's staging area) into this split's slot, then the arrival; only the
  // last workgroup of the tile goes on, and its epilogue below stages the splits' sums, added in split
  // order, instead of its own.
#ifdef OCTO_COOP_KSPLIT
  uint tile = mt * ((pc.n_tile + BN - 1u) / BN) + n0 / BN;
  partials_f32 part = partials_f32(pc.norm_w);
  uint slot0 = tile * KSPLIT * (BM * BN / 4u) + sg * FM * FN * 32u + lane;
  uint at = sg * 128u + (lane / 2u) * 8u + 4u * (lane % 2u);
  [[unroll]] for (uint i = 0u; i < FM; ++i)
    [[unroll]] for (uint j = 0u; j < FN; ++j) {
      coopMatStoreNV(acc[i * FN + j], cs, sg * 128u, 8u, false);
      subgroupBarrier();
      uint o = 4u * (slot0 + ks * (BM * BN / 4u) + (i * FN + j) * 32u);
      [[unroll]] for (uint c = 0u; c < 4u; ++c) part.d[o + c] = cs[at + c];
      subgroupBarrier();
    }
  // Release: every invocation's partials are visible device-wide before the arrival is counted.
  memoryBarrierBuffer();
  barrier();
  if (tid == 0u) {
    uint prev = atomicAdd(counters_u32(pc.counters).d[tile], 1u);
    if (prev == KSPLIT - 1u) atomicExchange(counters_u32(pc.counters).d[tile], 0u);  // ready for the next run
    // The x tiles are free after the K loop: the flag goes there. A shared variable of its own moved the
    // staging area off its 16-byte alignment in this module (the staged sums came back one float off on
    // the H100: benchmarks/results/2026-12-07-h100-ksplit, call 7).
    as_[0].x = prev == KSPLIT - 1u ? 1u : 0u;
  }
  barrier();
  if (as_[0].x == 0u) return;
  // Acquire: the other splits' partials, written before their arrivals, are read after ours.
  memoryBarrierBuffer();
#endif
  f32_buf yb = f32_buf(pc.y);
#ifndef OCTO_COOP_KSPLIT  // the split's sums are staged, not in the accumulators
  if (EPI_REGS_ASKED && !ROPE_KV) {
    uint fg = lane / 4u, fc2 = 2u * (lane % 4u);
    [[unroll]] for (uint i = 0u; i < FM; ++i)
      [[unroll]] for (uint j = 0u; j < FN; ++j)
        [[unroll]] for (uint hr = 0u; hr < 2u; ++hr) {
          uint m = m0 + wm * 16u * FM + 16u * i + fg + 8u * hr;
          uint nb = n0 + wn * 8u * FN + 8u * j + fc2;
          if (m >= pc.rows || nb >= pc.n_tile) continue;
          uint yrow = (pc.row0 + m) * pc.ldy + pc.n_off;
          float v0 = acc[i * FN + j][2u * hr], v1 = acc[i * FN + j][2u * hr + 1u];
          if (NORM) {
            v0 *= norm_at(WG + m - m0);
            v1 *= norm_at(WG + m - m0);
          }
          if (SWIGLU) {  // columns nb (gate) and nb + 1 (up) of output nb / 2 (n_tile is even)
            yb.d[yrow + (nb >> 1)] = v0 / (1.0 + exp(-v0)) * v1;
            continue;
          }
          [[unroll]] for (uint c = 0u; c < 2u; ++c) {
            uint n = nb + c;
            if (n >= pc.n_tile) continue;
            float s = c == 0u ? v0 : v1;
            if (pc.has_bias != 0u) s += load_elem(pc.bias, pc.n_off + n, pc.bias_dtype);
            if (RESID) s = f32_buf(pc.residual).d[yrow + n] + s;
            yb.d[yrow + n] = s;
          }
        }
    return;
  }
#endif
  // Epilogue: each fragment through this subgroup's staging area; lane l writes row l / 2, columns
  // 4 (l % 2) .. + 3 of it.
  uint fr = lane / 2u, fc = 4u * (lane % 2u);
  [[unroll]] for (uint i = 0u; i < FM; ++i)
    [[unroll]] for (uint j = 0u; j < FN; ++j) {
#ifdef OCTO_COOP_KSPLIT
      {  // the splits' sums of this lane's 4 values
        uint o = 4u * (slot0 + (i * FN + j) * 32u);
        [[unroll]] for (uint c = 0u; c < 4u; ++c) {
          float e = part.d[o + c];
          for (uint k = 1u; k < KSPLIT; ++k) e += part.d[o + c + k * BM * BN];
          cs[at + c] = e;
        }
      }
#else
      coopMatStoreNV(acc[i * FN + j], cs, sg * 128u, 8u, false);
#endif
      subgroupBarrier();
      uint m = m0 + wm * 16u * FM + 16u * i + fr;
      uint nb = n0 + wn * 8u * FN + 8u * j + fc;
      if (m < pc.rows) {
        uint yrow = (pc.row0 + m) * pc.ldy + pc.n_off;
        if (SWIGLU) {  // columns nb .. nb + 3: outputs nb / 2 and nb / 2 + 1 (n_tile is even)
          [[unroll]] for (uint q = 0u; q < 2u; ++q) {
            if (nb + 2u * q >= pc.n_tile) continue;
            float g = cs[sg * 128u + fr * 8u + fc + 2u * q], u = cs[sg * 128u + fr * 8u + fc + 2u * q + 1u];
            if (NORM) {
              g *= norm_at(WG + m - m0);
              u *= norm_at(WG + m - m0);
            }
            yb.d[yrow + (nb >> 1) + q] = g / (1.0 + exp(-g)) * u;
          }
        } else if (ROPE_KV) {  // columns nb .. nb + 3: two rotation pairs (n_tile % 4 == 0)
          if (nb < pc.n_tile) {
            vec4 v = vec4(cs[sg * 128u + fr * 8u + fc], cs[sg * 128u + fr * 8u + fc + 1u], cs[sg * 128u + fr * 8u + fc + 2u],
                          cs[sg * 128u + fr * 8u + fc + 3u]);
            if (NORM) v *= norm_at(WG + m - m0);
            rope_kv_store(pc.row0 + m, nb, v);
          }
        } else
          [[unroll]] for (uint c = 0u; c < 4u; ++c) {
            uint n = nb + c;
            if (n < pc.n_tile) {
              float s = cs[sg * 128u + fr * 8u + fc + c];
              if (NORM) s *= norm_at(WG + m - m0);
              if (pc.has_bias != 0u) s += load_elem(pc.bias, pc.n_off + n, pc.bias_dtype);
              if (RESID) s = f32_buf(pc.residual).d[yrow + n] + s;
              yb.d[yrow + n] = s;
            }
          }
      }
      subgroupBarrier();
    }
}
