#version 450
// GEMV_TILE / GEMM_TILE: y[r, n_off+n] = x[r] . W[n_off+n] (+ bias[n_off+n]) for n < n_tile and rows
// row0 .. row0+rows. The weight dtype is fixed per variant (WUNIT / WELEM, see shaders/variants.cmake)
// and dequantized in registers. A workgroup computes NR columns for RB rows, so each weight unit is
// read once per RB rows; its threads split K and reduce through subgroupAdd (OCTO_SUBGROUP variants)
// or shared memory. Block-quantized formats with GEMV_BLOCK defined (its IR dtype code) run the
// per-format chunk loops of common/gemv_chunks.glsl; the others split K in 8-element units (16-byte
// loads). VEC = false (unaligned x or W, K % 8 != 0) takes the one-element-at-a-time path.
//
// FUSE (spec constant 5) selects a fused decode op (docs/opcodes.md "Fused ops") as a prologue and an
// epilogue around the same loops, so every weight format gets every fusion:
//   RMSNORM (RMSNORM_GEMV, RMSNORM_SWIGLU, the RoPE ones): x is multiplied by the norm weight as it is
//     loaded; the dot products are linear in x, so the inverse RMS scales the finished sums. Each
//     invocation sums the squares of the x elements its main loop loads (SSQ_IN_LOOP: a workgroup's
//     chunks / units cover K once; the x tile and the one-element path keep a separate strided pass) and
//     those partial sums ride the final reduction beside the dot products: no pass over x and no barrier
//     before the weights' loads (a barrier there also made lavapipe's coroutine lowering of the unrolled
//     chunk loops take minutes). The separate pass cost a chain of K / WG dependent L2 round trips in
//     every fused GEMV: taking it out gave decode +6% (0.5B Q8_0) and +8% (1.5B) on the H100
//     (benchmarks/results/2026-11-27-h100-gemv/call3).
//   GEMV_ADD: y = r + W x, r at `aux`. With ROUND (integer-dot modules) it also rounds y into the runs
//     that the RMSNORM-fused integer GEMVs reading y take as their x (X8), at `runs`, times their norm
//     weight at `nw`: each workgroup owns whole runs of 16 outputs (NR x LANES columns), so no other
//     workgroup's result is needed, and the runs carry their sums of squares (the readers' inverse RMS).
//     That takes the gemv_quantize_x launch, and the barrier before it, out of the decode step.
//   RMSNORM_SWIGLU: the workgroup's NR weight rows are NR/2 gate rows (W) and the same NR/2 up rows
//     (`aux`), so silu(gate) * up is one invocation's epilogue. With ROUND it rounds its runs of 16
//     outputs as they are (no norm) for the down projection, which reads them as its x (X8) instead of
//     rounding x in every workgroup.
//   RMSNORM_GEMV_ROPE / _KV: the NR rows are NR/2 RoPE pairs (rotate-half: j and j + n_rot/2,
//     interleaved: 2i and 2i+1), so both halves of a rotation are summed in one workgroup; _KV writes
//     the rotated (or, n_rot = 0, plain) rows into the KV cache at kv_pos + globals.pos.
//   RMSNORM_GEMV_NORM_ROPE / _KV (Qwen3's q and k): as the RoPE pair, with the per-head norm between the
//     GEMV and the rotation. A head's hd outputs come from (hd / 2) / (NR / 2) workgroups: each writes
//     its sums to the task's scratch (`runs`) and counts its arrival on its (row, head) counter; the last
//     to arrive normalizes the head (the norm weight at `bias`, its dtype in bias_dtype: these ops have
//     no bias), rotates and stores it, and resets the counter (no workgroup waits on another, as decode
//     attention merges its chunks).
//   GEMV_QKV (a define: the gemv_*_qkv modules, RMSNORM_GEMV_QKV and RMSNORM_GEMV_NORM_QKV): the q, k and v
//     projections' grids in one launch, each workgroup running its part in the RoPE / KV pair mode, q and
//     k of Qwen3's form with the head norm (qkv_select, below).
#include "common/weights.glsl"
layout(local_size_x_id = 0) in;  // before reduce.glsl: its shared array is sized by the workgroup
#include "common/reduce.glsl"
#include "common/rope.glsl"

layout(constant_id = 1) const uint NR = 2;     // output columns per workgroup
layout(constant_id = 2) const uint RB = 1;     // rows per workgroup
layout(constant_id = 3) const bool VEC = true; // K % 8 == 0 and 16-byte aligned x / W: unit loads
// Block formats: x goes through shared memory in tiles of XT floats per row, loaded coalesced once per
// workgroup, instead of each invocation's own vec4 loads of its chunk's x elements. Off by default:
// 1.3-4x slower on an H200 (benchmarks/results/2026-11-21-h100-gemv); kept for other devices.
layout(constant_id = 4) const bool XS = false;
const uint FUSE_NONE = 0u, FUSE_NORM = 1u, FUSE_ADD = 2u, FUSE_SWIGLU = 3u, FUSE_ROPE = 4u, FUSE_KV = 5u,
           FUSE_NORM_ROPE = 6u, FUSE_NORM_KV = 7u;
layout(constant_id = 5) const uint FUSE = FUSE_NONE;
#ifdef GEMV_QKV
bool qkv_kv = false;         // this workgroup's part (k or v) writes a KV cache
bool qkv_head_norm = false;  // this workgroup's part (q or k of Qwen3's form) normalizes its heads
#define KV_OUT qkv_kv
#define HEAD_NORM qkv_head_norm
#else
const bool KV_OUT = FUSE == FUSE_KV || FUSE == FUSE_NORM_KV;   // rows written into a KV cache
const bool HEAD_NORM = FUSE >= FUSE_NORM_ROPE;                 // the per-head norm before the rotation
#endif
// The head-norm ops' scratch: the (row, head) arrival counters, then the rows' sums (f32); coherent, as
// other workgroups' writes are read.
layout(buffer_reference, std430, buffer_reference_align = 4) coherent buffer head_u32 { uint d[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) coherent buffer head_f32 { float d[]; };
// X8 (integer-dot modules): x arrives rounded (pc.x points at the runs, common/x_runs.glsl), by the
// GEMV_ADD that wrote it (ROUND) or by gemv_quantize_x.comp run before this launch (OCTO_GEMV_X8); an
// RMSNORM's weight is already in them, its inverse RMS is summed from their squares here.
// LANES: the workgroup is LANES independent lanes of WG / LANES invocations, each a workgroup of its own
// for the loops and the reduction (its own NR columns), so that a ROUND workgroup owns 16 columns
// without giving each column more invocations. A lane is a whole number of subgroups (the planner's
// condition; invocations fill subgroups in order of their index).
#ifdef GEMV_IDOT
layout(constant_id = 6) const bool X8 = false;
layout(constant_id = 7) const bool ROUND = false;
layout(constant_id = 8) const uint LANES = 1;
#else
const bool X8 = false;
const bool ROUND = false;
const uint LANES = 1;
#endif
const bool NORM = FUSE == FUSE_NORM || FUSE >= FUSE_SWIGLU;
const bool PAIRS = FUSE == FUSE_SWIGLU || FUSE >= FUSE_ROPE;  // two weight rows per output slot pair
// GEMV_IDOT (the gemv_idot_<dt> modules; the `fast` precision where the device accelerates packed int8
// dot products): the chunk loops of common/gemv_idot.glsl, which round each chunk's x runs to int8 in
// registers. One x row per workgroup (RB = 1), the chunk loop (VEC), no x tile (XS off): the planner's
// conditions.

// aux: the residual (ADD), the up weight (SWIGLU), the positions (ROPE, KV; 0 when n_rot = 0).
// rope: head_dim | n_rot << 16; style: rope style | y dtype << 8 (KV: the cache's).
// The first fields are every GEMV / GEMM module's (matmul_push); the fused operands follow.
#ifdef GEMV_QKV
// RMSNORM_GEMV_QKV and RMSNORM_GEMV_NORM_QKV (the gemv_*_qkv modules, kernels/gemv.cpp plan_qkv): one x
// row, the q, k and v projections' grids one after another (each ceil(pairs / (NR / 2)) workgroups), each
// run as the RoPE pair mode runs its projection alone (FUSE_ROPE; k and v write their caches, v
// unrotated; in Qwen3's form q and k as the head-norm modes run them). A workgroup takes its part's
// operands from its group index into `pc` (qkv_select), so the body below is the one every mode runs.
// widths: q's | the caches' row << 16; style: the rope style | the caches' dtype << 8 | the norm's dtype
// << 16 | the bias's (or head norms') dtype << 24 | has_bias << 29 | head norms << 30 (so that the block
// fits lavapipe's 128 bytes); `bias` is q's, k's and v's biases one after another, or Qwen3's q and k head
// norm weights; `runs` the head norms' scratch, q's counters and sums, then k's.
layout(push_constant) uniform qkv_params {
  uvec2 x, nw, wq, wk, wv, bias, pos, yq, kc, vc, globals, runs;
  uint K, w_row_bytes, widths, rope, style, kv_pos;
  float eps, log2_theta;
} qp;
struct gemv_params {
  uvec2 x, w, bias, y, globals;
  uint K, rows, row0, n_tile, n_off, ldy, w_row_bytes, has_bias, bias_dtype;
  uvec2 nw, aux;
  float eps, log2_theta;
  uint rope, style, kv_pos, nw_dtype;
  uvec2 runs;
};
gemv_params pc;
uint group0 = 0u;    // the part's first workgroup
uint bias_off = 0u;  // the part's first element of the bias (of the head norm weights)
uint runs_off = 0u;  // the part's first word of the head norms' scratch
void qkv_select() {
  uint nq = qp.widths & 0xffffu, nkv = qp.widths >> 16, hd = qp.rope & 0xffffu;
  const uint GC = NR / 2u;  // pairs a workgroup
  uint g = octo_group_linear(), gq = (nq / 2u + GC - 1u) / GC, gk = (nkv / 2u + GC - 1u) / GC;
  uint part = g < gq ? 0u : (g < gq + gk ? 1u : 2u);
  bool normed = ((qp.style >> 30) & 1u) != 0u;
  pc.x = qp.x;
  pc.w = part == 0u ? qp.wq : (part == 1u ? qp.wk : qp.wv);
  pc.bias = qp.bias;
  pc.y = part == 0u ? qp.yq : (part == 1u ? qp.kc : qp.vc);
  pc.globals = qp.globals;
  pc.K = qp.K;
  pc.rows = 1u;
  pc.row0 = 0u;
  pc.n_tile = part == 0u ? nq : nkv;
  pc.n_off = 0u;
  pc.ldy = pc.n_tile;
  pc.w_row_bytes = qp.w_row_bytes;
  pc.has_bias = normed ? 0u : (qp.style >> 29) & 1u;
  pc.bias_dtype = (qp.style >> 24) & 31u;
  pc.nw = qp.nw;
  pc.aux = qp.pos;
  pc.eps = qp.eps;
  pc.log2_theta = qp.log2_theta;
  pc.rope = part == 2u ? (qp.rope & 0xffffu) : qp.rope;  // v: n_rot = 0, its pairs pass through
  pc.style = part == 0u ? ((qp.style & 0xffu) | (DT_F32 << 8)) : (qp.style & 0xffffu);
  pc.kv_pos = qp.kv_pos;
  pc.nw_dtype = (qp.style >> 16) & 0xffu;
  pc.runs = qp.runs;
  qkv_kv = part != 0u;
  qkv_head_norm = normed && part != 2u;
  group0 = part == 0u ? 0u : (part == 1u ? gq : gq + gk);
  if (normed) bias_off = part == 1u ? hd : 0u;
  else bias_off = part == 0u ? 0u : (part == 1u ? nq : nq + nkv);
  // k's scratch after q's counters (a multiple of 4) and sums, rounded to 16 bytes (plan_qkv's offset)
  runs_off = part == 1u ? (((nq / hd + 3u) & ~3u) + nq + 3u) & ~3u : 0u;
}
#else
layout(push_constant) uniform params {
  uvec2 x, w, bias, y, globals;
  uint K, rows, row0, n_tile, n_off, ldy, w_row_bytes, has_bias, bias_dtype;
  uvec2 nw, aux;
  float eps, log2_theta;
  uint rope, style, kv_pos, nw_dtype;
  uvec2 runs;  // ROUND: where y's runs go
} pc;
const uint group0 = 0u, bias_off = 0u, runs_off = 0u;
#endif

// The weight tensor of slot n: SWIGLU's upper half reads the up weight.
uvec2 wsrc(uint n) { return FUSE == FUSE_SWIGLU && n >= NR / 2u ? pc.aux : pc.w; }
// The norm weight's elements e..e+3 (x is multiplied by it on load), or ones. F32 in a GGUF; a
// safetensors model may bring F16 / BF16.
vec4 xnorm(uint e) { return NORM ? load_norm4(pc.nw, e, pc.nw_dtype) : vec4(1.0); }
float xnorm1(uint k) { return NORM ? load_elem(pc.nw, k, pc.nw_dtype) : 1.0; }

// Output columns: `group_cols` per workgroup (NR, or NR/2 with PAIRS), `total_cols` in all (ROPE/KV:
// pairs). The column of slot c of workgroup g, clamped into range for loads.
uint total_cols() { return FUSE >= FUSE_ROPE ? pc.n_tile / 2u : pc.n_tile; }
uint rope_col(uint p, uint h) {
  uint hd = pc.rope & 0xffffu, n_rot = pc.rope >> 16, half_rot = n_rot / 2u;
  uint head = p / (hd / 2u), i = p - head * (hd / 2u);
  uint d = i < half_rot ? ((pc.style & 0xffu) == 0u ? i + h * half_rot : 2u * i + h) : n_rot + 2u * (i - half_rot) + h;
  return head * hd + d;
}
uint slot_col(uint g, uint c) {
  const uint GC = PAIRS ? NR / 2u : NR;
  if (FUSE >= FUSE_ROPE) return rope_col(min(g * GC + c / 2u, total_cols() - 1u), c & 1u);
  return pc.n_off + min(g * GC + (PAIRS ? c % GC : c), pc.n_tile - 1u);
}

// The dot products' partial sums, then (NORM) each row's partial sum of squares.
const uint NSUM = NR * RB + (NORM ? RB : 0u);
shared float red[NSUM * gl_WorkGroupSize.x];
#ifdef GEMV_IDOT
shared float run_v[16];  // ROUND: the workgroup's run of y
#endif

float acc[NR * RB];
// NORM: this invocation's part of each row's sum of squares. With 16-byte loads (VEC, no x tile) it is
// summed from the x elements the main loop loads anyway: the chunks / units of a workgroup cover K
// exactly once, so no separate pass over x runs before the weights' loads (that pass was a chain of
// K / WG dependent L2 round trips, several us of every fused GEMV's latency).
float ssq[RB];
const bool SSQ_IN_LOOP = NORM && VEC && !XS;
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


// KV: element n of cache row kv_pos + globals.pos + row, in the cache's dtype. A 16-bit cache packs two
// columns in a word whose other half another invocation may be writing: each replaces its own half with
// two atomics.
void store_kv(uint row, uint n, float s) {
  uint slot = pc.kv_pos + globals_buf(pc.globals).pos + row;
  uint e = slot * pc.ldy + n, dt = pc.style >> 8;
  if (dt == DT_F32) {
    f32_buf(pc.y).d[e] = s;
  } else {
    uint sh = (e & 1u) * 16u;
    u32_buf cw = u32_buf(pc.y);
    atomicAnd(cw.d[e >> 1], ~(0xffffu << sh));
    atomicOr(cw.d[e >> 1], encode_elem(s, dt) << sh);
  }
}

// Finishes slot = c * RB + r of the lane (invocation `slot`'s partial sums in red): row r's column c
// (with PAIRS, the partner slot's sum too).
void finish_slot(uint slot, uint grp, uint rb, uint nrows, uint parts, uint part0) {
  const uint GC = PAIRS ? NR / 2u : NR;
  const uint WG = gl_WorkGroupSize.x;
  uint c = slot / RB, r = slot % RB;
  if (r >= nrows) return;
  uint row = pc.row0 + rb + r;
  float s = 0.0, t = 0.0;
  uint mate = FUSE == FUSE_SWIGLU ? c + GC : c ^ 1u;  // SWIGLU: the up row; ROPE/KV: the pair's other half
  for (uint p = 0u; p < parts; ++p) s += red[slot * WG + part0 + p];
  if (PAIRS && mate < NR)
    for (uint p = 0u; p < parts; ++p) t += red[(mate * RB + r) * WG + part0 + p];
  if (NORM) {
    float ss = 0.0;
    for (uint p = 0u; p < parts; ++p) ss += red[(NR * RB + r) * WG + part0 + p];
    float inv_rms = 1.0 / sqrt(ss / float(pc.K) + pc.eps);
    s *= inv_rms;
    t *= inv_rms;
  }
  if (FUSE == FUSE_SWIGLU) {
    uint n = grp * GC + c;
    if (c >= GC || n >= pc.n_tile) return;
    f32_buf(pc.y).d[row * pc.ldy + pc.n_off + n] = s / (1.0 + exp(-s)) * t;
    return;
  }
  if (FUSE >= FUSE_ROPE) {
    uint pair = grp * GC + c / 2u;
    if (pair >= total_cols()) return;
    uint n = rope_col(pair, c & 1u), m = rope_col(pair, (c & 1u) ^ 1u);
    if (pc.has_bias != 0u) {
      s += load_elem(pc.bias, bias_off + n, pc.bias_dtype);
      t += load_elem(pc.bias, bias_off + m, pc.bias_dtype);
    }
    uint hd = pc.rope & 0xffffu, n_rot = pc.rope >> 16;
    uint i = pair % (hd / 2u);
    if (i < n_rot / 2u) {  // a rotated pair (the others pass through)
      vec2 cs = rope_cos_sin(float(i32_buf(pc.aux).d[row]), i, n_rot, pc.log2_theta);
      s = (c & 1u) == 0u ? s * cs.x - t * cs.y : t * cs.y + s * cs.x;
    }
    if (!KV_OUT) {
      f32_buf(pc.y).d[row * pc.ldy + n] = s;
      return;
    }
    store_kv(row, n, s);
    return;
  }
  uint n = grp * NR + c;
  if (n >= pc.n_tile) return;
  if (pc.has_bias != 0u) s += load_elem(pc.bias, pc.n_off + n, pc.bias_dtype);
  uint e = row * pc.ldy + pc.n_off + n;
  if (FUSE == FUSE_ADD) s += f32_buf(pc.aux).d[e];
  f32_buf(pc.y).d[e] = s;
}

shared uint head_last[RB];  // HEAD_NORM: whether this workgroup arrived last at a row's head

void main() {
  const uint WG = gl_WorkGroupSize.x;
  const uint LW = WG / LANES;  // a lane's invocations (WG with one lane)
  const uint GC = PAIRS ? NR / 2u : NR;
  uint tid = gl_LocalInvocationID.x;
  uint lane = LANES > 1u ? tid / LW : 0u, ltid = tid - lane * LW;  // (one lane: no division)
#ifdef GEMV_QKV
  qkv_select();
#endif
  uint grp = (octo_group_linear() - group0) * LANES + lane;  // the lane's group of columns
  if (grp * GC >= total_cols()) return;
  uint rb = gl_WorkGroupID.y * RB;
  if (rb >= pc.rows) return;
  uint nrows = min(RB, pc.rows - rb);

  [[unroll]] for (uint i = 0u; i < NR * RB; ++i) acc[i] = 0.0;
  [[unroll]] for (uint r = 0u; r < RB; ++r) ssq[r] = 0.0;
  if (NORM && !SSQ_IN_LOOP) {
    // This invocation's part of the rows' sums of squares (RMSNORM's, hidden == K), reduced below.
    [[unroll]] for (uint r = 0u; r < RB; ++r) {
      uint x0 = (pc.row0 + rb + min(r, nrows - 1u)) * pc.K;
      float ss = 0.0;
      for (uint k = tid; k < pc.K; k += WG) {
        float v = f32_buf(pc.x).d[x0 + k];
        ss += v * v;
      }
      ssq[r] = ss;
    }
  }

#ifdef GEMV_BLOCK
  if (VEC) {
    [[unroll]] for (uint c = 0u; c < NR; ++c) wrow[c] = slot_col(grp, c) * pc.w_row_bytes;
    [[unroll]] for (uint r = 0u; r < RB; ++r) xrow[r] = ((pc.row0 + rb + min(r, nrows - 1u)) * pc.K) >> 2;
    const uint BE = CBE;  // elements per block (gemv_chunks.glsl)
    if (XS) {
      for (uint k0 = 0u; k0 < pc.K; k0 += XT) {
        uint kn4 = min(XT, pc.K - k0) >> 2;
        barrier();  // the previous tile is consumed
        v4_buf xb = v4_buf(pc.x);
        for (uint v = tid; v < RB * kn4; v += WG) {
          uint r = v / kn4, q = v - r * kn4;
          xsh[r * XROW + q + (q >> XPAD)] = xb.d[xrow[r] + (k0 >> 2) + q] * xnorm(k0 + 4u * q);
        }
        barrier();
        xk0 = k0;
        uint c0 = k0 / BE * CPB, c1 = c0 + (kn4 << 2) / BE * CPB;
        for (uint c = c0 + tid; c < c1; c += WG) gemv_chunk(c);
      }
    } else {
      uint chunks = pc.K / BE * CPB;
      for (uint c = ltid; c < chunks; c += LW) gemv_chunk(c);  // (the other loops run with one lane)
    }
  } else
#endif
  if (VEC) {
    v4_buf xb = v4_buf(pc.x);
    uint units = pc.K >> 3;
    for (uint u = tid; u < units; u += WG) {
      float wv[NR * 8];
      [[unroll]] for (uint c = 0u; c < NR; ++c) {
        float t[8];
        WUNIT(wsrc(c), slot_col(grp, c) * pc.w_row_bytes, u, t);
        [[unroll]] for (uint i = 0u; i < 8u; ++i) wv[c * 8u + i] = t[i];
      }
      [[unroll]] for (uint r = 0u; r < RB; ++r) {
        if (r < nrows) {
          uint q = (((pc.row0 + rb + r) * pc.K) >> 2) + 2u * u;
          vec4 xa = xb.d[q], xc = xb.d[q + 1u];
          if (SSQ_IN_LOOP) ssq[r] += dot(xa, xa) + dot(xc, xc);
          xa *= xnorm(8u * u);
          xc *= xnorm(8u * u + 4u);
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
        wv[c] = WELEM(wsrc(c), slot_col(grp, c) * pc.w_row_bytes, k);
      [[unroll]] for (uint r = 0u; r < RB; ++r) {
        if (r < nrows) {
          float xv = xb.d[(pc.row0 + rb + r) * pc.K + k] * xnorm1(k);
          [[unroll]] for (uint c = 0u; c < NR; ++c) acc[c * RB + r] += wv[c] * xv;
        }
      }
    }
  }

#ifdef OCTO_SUBGROUP
  [[unroll]] for (uint i = 0u; i < NSUM; ++i) {
    float s = subgroupAdd(i < NR * RB ? acc[i] : ssq[i - NR * RB]);
    if (subgroupElect()) red[i * WG + gl_SubgroupID] = s;
  }
  barrier();
  uint parts = gl_NumSubgroups / LANES;
#else
  [[unroll]] for (uint i = 0u; i < NSUM; ++i) red[i * WG + tid] = i < NR * RB ? acc[i] : ssq[i - NR * RB];
  barrier();
  uint parts = LW;
#endif
  uint part0 = lane * parts;  // the lane's first part
#ifdef GEMV_IDOT
  if (ROUND) {
    // One x row, no column tile, n_tile a multiple of 16 (the planner's conditions): every lane's GC
    // columns exist. Each lane finishes its columns as the epilogue below would (GEMV_ADD: bias and
    // residual; RMSNORM_SWIGLU: the inverse RMS and silu(gate) * up), then one invocation rounds the
    // run: with the readers' norm weight for a GEMV_ADD (RMSNORM-fused readers), as it is for a
    // SWIGLU (the down projection reads it plain).
    if (ltid < GC) {
      float s = 0.0;
      for (uint p = 0u; p < parts; ++p) s += red[ltid * WG + part0 + p];
      uint n = grp * GC + ltid;
      if (FUSE == FUSE_SWIGLU) {
        float t = 0.0, ss = 0.0;
        for (uint p = 0u; p < parts; ++p) t += red[(ltid + GC) * WG + part0 + p];
        for (uint p = 0u; p < parts; ++p) ss += red[NR * WG + part0 + p];
        float inv_rms = 1.0 / sqrt(ss / float(pc.K) + pc.eps);
        s *= inv_rms;
        t *= inv_rms;
        s = s / (1.0 + exp(-s)) * t;
      } else {
        if (pc.has_bias != 0u) s += load_elem(pc.bias, n, pc.bias_dtype);
        s += f32_buf(pc.aux).d[pc.row0 * pc.ldy + n];
      }
      f32_buf(pc.y).d[pc.row0 * pc.ldy + n] = s;
      run_v[lane * GC + ltid] = s;
    }
    barrier();
    if (tid == 0u) {
      vec4 v[4];
      [[unroll]] for (uint i = 0u; i < 4u; ++i)
        v[i] = vec4(run_v[4u * i], run_v[4u * i + 1u], run_v[4u * i + 2u], run_v[4u * i + 3u]);
      round_and_store_run(pc.runs, pc.n_tile, octo_group_linear(), v, FUSE == FUSE_ADD, pc.nw, pc.nw_dtype);
    }
    return;
  }
#endif
  if (HEAD_NORM) {
    // One lane (the planner's condition), GC dividing hd / 2: the workgroup's pairs lie in one head.
    uint hd = pc.rope & 0xffffu, half_hd = hd / 2u, n_rot = pc.rope >> 16;
    uint heads = total_cols() / half_hd, head = grp * GC / half_hd;
    head_u32 cnt = head_u32(pc.runs);
    head_f32 raw = head_f32(pc.runs);
    uint raw0 = (pc.rows * heads + 3u) & ~3u;  // the rows' sums after the counters, [rows][n_tile]
    for (uint slot = ltid; slot < NR * RB; slot += LW) {  // (NR x RB may exceed the lane's width)
      uint c = slot / RB, r = slot % RB;
      if (r < nrows) {
        float s = 0.0, ss = 0.0;
        for (uint p = 0u; p < parts; ++p) s += red[slot * WG + part0 + p];
        for (uint p = 0u; p < parts; ++p) ss += red[(NR * RB + r) * WG + part0 + p];
        s *= 1.0 / sqrt(ss / float(pc.K) + pc.eps);
        raw.d[runs_off + raw0 + (rb + r) * pc.n_tile + rope_col(grp * GC + c / 2u, c & 1u)] = s;
      }
    }
    // Release: the workgroup's sums are visible device-wide before its arrival is counted.
    memoryBarrierBuffer();
    barrier();
    if (tid < nrows) {
      uint at = runs_off + (rb + tid) * heads + head;
      uint prev = atomicAdd(cnt.d[at], 1u);
      head_last[tid] = prev == half_hd / GC - 1u ? 1u : 0u;
      if (prev == half_hd / GC - 1u) atomicExchange(cnt.d[at], 0u);  // every part arrived: ready for the next step
    }
    barrier();
    // Acquire: the other workgroups' sums, written before their arrivals, are read after ours.
    memoryBarrierBuffer();
    for (uint r = 0u; r < nrows; ++r) {
      if (head_last[r] == 0u) continue;  // the same for the whole workgroup
      uint row = pc.row0 + rb + r, base = runs_off + raw0 + (rb + r) * pc.n_tile;
      // Pairs i = tid + WG k of the head (hd <= 8 WG: the planner's condition).
      float a[4], b[4], ss = 0.0;
      [[unroll]] for (uint k = 0u; k < 4u; ++k) {
        uint i = tid + k * WG;
        a[k] = 0.0;
        b[k] = 0.0;
        if (i < half_hd) {
          a[k] = raw.d[base + rope_col(head * half_hd + i, 0u)];
          b[k] = raw.d[base + rope_col(head * half_hd + i, 1u)];
          ss += a[k] * a[k] + b[k] * b[k];
        }
      }
      float inv_rms = 1.0 / sqrt(wg_sum(ss) / float(hd) + pc.eps);
      float p = n_rot > 0u ? float(i32_buf(pc.aux).d[row]) : 0.0;
      [[unroll]] for (uint k = 0u; k < 4u; ++k) {
        uint i = tid + k * WG;
        if (i >= half_hd) continue;
        uint n = rope_col(head * half_hd + i, 0u), m = rope_col(head * half_hd + i, 1u);
        float u = a[k] * inv_rms * load_elem(pc.bias, bias_off + n - head * hd, pc.bias_dtype);
        float v = b[k] * inv_rms * load_elem(pc.bias, bias_off + m - head * hd, pc.bias_dtype);
        if (i < n_rot / 2u) {  // a rotated pair (the others pass through)
          vec2 cs = rope_cos_sin(p, i, n_rot, pc.log2_theta);
          float u2 = u * cs.x - v * cs.y;
          v = v * cs.x + u * cs.y;
          u = u2;
        }
        // Each pair's two elements straight from registers: a 16-bit cache's word holds two pairs'
        // elements, so store_kv's two atomics. Staged through shared memory and stored in whole words
        // instead, the q task took 14.6 us a layer serialized against 13.1 on the H200's Qwen3-8B shape, and
        // the step ran 1.3% behind the two-task form against 0.4% (benchmarks/results/2026-12-04-h200-q8-swiglu,
        // calls 5 and 4).
        if (KV_OUT) {
          store_kv(row, n, u);
          store_kv(row, m, v);
        } else {
          f32_buf(pc.y).d[row * pc.ldy + n] = u;
          f32_buf(pc.y).d[row * pc.ldy + m] = v;
        }
      }
    }
    return;
  }
  // Epilogue: each slot (c, r) of the lane's NR x RB, as many an invocation as NR x RB exceeds the
  // lane's width (the planner's shapes fit one; OCTO_GEMV_NR / OCTO_GEMV_WG may not).
  for (uint slot = ltid; slot < NR * RB; slot += LW) finish_slot(slot, grp, rb, nrows, parts, part0);
}
