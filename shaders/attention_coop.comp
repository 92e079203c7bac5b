#version 450
// ATTENTION_TILE for prefill on tensor cores (GL_NV_cooperative_matrix), 16-bit K/V caches: one
// workgroup per (block of 16 RG query rows, head), 16 rows per subgroup, KS subgroups per 16 rows (each
// taking every KS-th tile of the keys: key splits, merged at the end through shared memory). Same semantics as
// attention_rows.comp: GQA head h reads kv head h / (n_heads / n_kv_heads); row t sees keys j in
// [kv_start, kv_start + kv_len + globals.pos), with causal also j <= q_pos + globals.pos + t, never past
// the cache's slots; a row with no visible key outputs 0.
// One pass over rounds of KS tiles (KS KT keys of K and V staged in shared memory as f16 by the whole
// workgroup; subgroup (rg, ks) takes tile ks of a round for its rows rg), online softmax: per tile, S = Q.K^T on the tensor cores goes through shared memory to the
// two lanes that own each row (half its columns each), which keep the row's running maximum and sum and
// write P (f16); T = P.V on the tensor cores goes through the same shared area back to those lanes,
// which keep the output row in registers, O = O * exp(m_old - m_new) + T. Scores are f16 products
// summed in f32 (Q rounded to f16), scaled and exponentiated in f32; P is rounded to f16 for P.V, summed
// in f32 (docs/precision.md: the `fast` precision's prefill attention). The key splits exist for
// parallelism: at 512 rows a head has 32 blocks of 16 rows, and one subgroup per 16 rows leaves each
// multiprocessor of a large GPU about 4 subgroups (src/vulkan/kernels/attention.cpp picks RG and KS).
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#include "common/octo.glsl"
layout(local_size_x_id = 0) in;                // 32 RG KS
layout(constant_id = 1) const uint HD = 64;    // head_dim: a multiple of 16, at most 128
layout(constant_id = 2) const uint KT = 32;    // keys per tile: 16, 32 or 64
layout(constant_id = 3) const uint K_BF16 = 0; // the caches' dtype: 0 F16, 1 BF16
layout(constant_id = 4) const uint V_BF16 = 0;
// PREFETCH (spec constant 5): the next tile's K and V are loaded into registers while this tile's
// products run (stored to shared memory after them), instead of at the top of each tile.
layout(constant_id = 5) const bool PREFETCH = false;
layout(constant_id = 6) const uint KS = 1u;    // subgroups splitting the keys of one 16 rows: 1, 2 or 4
// REGS (spec constant 7; without key splits): the softmax in registers. S stays in its accumulators,
// each invocation reading and rewriting its own elements: in NVIDIA's mma.m16n8k16 fragments invocation
// l holds rows l / 4 and l / 4 + 8 of a 16 x 8 result, columns 2 (l % 4) and the next (elements 0, 1 and
// 2, 3), and a 16 x 16 factor's elements are two such 16 x 8 blocks side by side, so P becomes the
// factor of P.V in place, the row maximum and sum take two shuffles among the row's four invocations, and
// O stays in accumulators, each invocation rescaling its own rows. No scores, P or P.V through shared
// memory. The planner asks for it only where the VM's probe found that layout (device_facts::
// coop_mma_layout; GL_NV_cooperative_matrix itself leaves the layout to the implementation).
layout(constant_id = 7) const bool REGS_ASKED = false;
// REGS: the order of a 16 x 16 f16 factor's element pairs (device_facts::coop_factor_order, probed at
// boot): 0 the PTX ISA's, (g, 2t), (g + 8, 2t), (g, 2t + 8), (g + 8, 2t + 8); 1 columns first, (g, 2t),
// (g, 2t + 8), (g + 8, 2t), (g + 8, 2t + 8), as NVIDIA's Vulkan driver holds them.
layout(constant_id = 8) const uint FACTOR_ORDER = 0u;
const bool REGS = REGS_ASKED && KS == 1u;

layout(push_constant) uniform params {
  uvec2 q, k, v, o, globals;
  uint T, n_heads, n_kv_heads, head_dim, kv_start, kv_len, causal, q_pos, partial, slots;
  float scale;
} pc;

const uint WG = gl_WorkGroupSize.x;
const uint NW = WG / 32u;       // subgroups: RG row groups x KS key splits
const uint RG = NW / KS;
const uint ROWS = 16u * RG;
const uint RK = KS * KT;        // keys a round
const uint HU = HD / 8u;         // 16-byte units (8 halves) a row
const uint SH = HU + 1u;         // shared row stride in units: one unit of padding
const uint KU = KT / 8u;
const uint SP = KU + 1u;         // probabilities' row stride in units
const uint SA = (KT > HD ? KT : HD) + 4u;  // the score / P.V area's row stride in floats (4 of padding: fewer bank conflicts)
const uint KV = (ROWS > 2u * RK ? ROWS : 2u * RK) * SH;
shared uvec4 kv[KV];             // the query rows (f16) at the start, then the round's K rows and V rows
shared float sa[REGS ? 1u : NW * 16u * SA];  // each subgroup's 16 scores or P.V rows (f32)
shared uvec4 ps[REGS ? 1u : NW * 16u * SP];  // each subgroup's 16 x KT probabilities (f16)

uint pack_h(vec2 v) { return packFloat2x16(f16vec2(v)); }
uvec4 to_f16(uvec4 w, uint is_bf16) {  // 8 halves of the cache as f16
  if (is_bf16 == 0u) return w;
  vec4 lo = unpack8_lo(w, DT_BF16), hi = unpack8_hi(w, DT_BF16);
  return uvec4(pack_h(lo.xy), pack_h(lo.zw), pack_h(hi.xy), pack_h(hi.zw));
}

void main() {
  uint g = octo_group_linear();
  uint nblk = (pc.T + ROWS - 1u) / ROWS;
  if (g >= nblk * pc.n_heads) return;
  // The last blocks of rows first: under a causal mask they see the most keys, so they start first and
  // the short ones fill in behind them.
  uint h = g % pc.n_heads, r0 = (nblk - 1u - g / pc.n_heads) * ROWS;
  uint tid = gl_LocalInvocationID.x, sg = tid / 32u, lane = tid % 32u;
  uint rg = sg % RG, ks = sg / RG;  // this subgroup's 16 rows of the block, its tile of each round
  uint ldq = pc.n_heads * HD;
  uint ldkv = pc.n_kv_heads * HD;
  uint kv_off = (h / (pc.n_heads / pc.n_kv_heads)) * HD;
  const float NEG_INF = uintBitsToFloat(0xff800000u);
  uint gpos = globals_buf(pc.globals).pos;
  uint lim = min(pc.kv_start + pc.kv_len + gpos, pc.slots);  // never read past the cache

  // The query rows as f16 (zero past T), into the K/V area until the subgroups hold them.
  v4_buf qb = v4_buf(pc.q);
  for (uint i = tid; i < ROWS * HU; i += WG) {
    uint r = i / HU, u = i % HU, t = r0 + r;
    uvec4 w = uvec4(0u);
    if (t < pc.T) {
      uint e = (t * ldq + h * HD + 8u * u) >> 2;
      vec4 a = qb.d[e], b = qb.d[e + 1u];
      w = uvec4(pack_h(a.xy), pack_h(a.zw), pack_h(b.xy), pack_h(b.zw));
    }
    kv[r * SH + u] = w;
  }
  // Lane l of a subgroup owns row l / 2 of its 16: columns (l % 2) KT/2 .. of each tile's scores and
  // (l % 2) HD/2 .. of the output.
  uint lr = lane / 2u, lh = lane % 2u;
  uint my_t = r0 + rg * 16u + lr;
  uint my_end = 0u;  // one past the row's last visible key
  if (my_t < pc.T) my_end = pc.causal != 0u ? min(lim, pc.q_pos + gpos + my_t + 1u) : lim;
  // The block's last key (rows' ends grow with t; the last row present has the largest).
  uint t_last = min(r0 + ROWS, pc.T) - 1u;
  uint blk_end = pc.causal != 0u ? min(lim, pc.q_pos + gpos + t_last + 1u) : lim;
  // The same for this subgroup's 16 rows: a tile at or past it is skipped (uniform in the subgroup).
  uint rg_last = min(r0 + rg * 16u + 16u, pc.T) - 1u;
  uint rg_end = r0 + rg * 16u >= pc.T ? 0u : pc.causal != 0u ? min(lim, pc.q_pos + gpos + rg_last + 1u) : lim;
  barrier();

  fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> qa[HD / 16u];
  [[unroll]] for (uint c = 0u; c < HD / 16u; ++c) coopMatLoadNV(qa[c], kv, rg * 16u * SH + 2u * c, SH, false);
  barrier();  // the tiles overwrite the query rows

  const uint HALF = KT / 2u, OH = HD / 2u;
  float m = NEG_INF, l = 0.0;
  float o[OH];
  [[unroll]] for (uint d = 0u; d < OH; ++d) o[d] = 0.0;
  // REGS: this invocation's rows of the subgroup's 16 (ga, ga + 8), its column pair in every 8, each
  // row's running maximum and this invocation's share of its sum, and O's 16 x 8 blocks.
  uint ga = lane / 4u, gc = 2u * (lane % 4u);
  uint ta = r0 + rg * 16u + ga, tb = ta + 8u;
  uint end_a = 0u, end_b = 0u;
  if (ta < pc.T) end_a = pc.causal != 0u ? min(lim, pc.q_pos + gpos + ta + 1u) : lim;
  if (tb < pc.T) end_b = pc.causal != 0u ? min(lim, pc.q_pos + gpos + tb + 1u) : lim;
  float ma = NEG_INF, mb = NEG_INF, la = 0.0, lb = 0.0;
  fcoopmatNV<32, gl_ScopeSubgroup, 16, 8> oacc[HD / 8u];
  [[unroll]] for (uint c = 0u; c < HD / 8u; ++c) oacc[c] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 8>(0.0);
  uint sbase = sg * 16u * SA;
  uint kbase = ks * KT * SH, vbase = (RK + ks * KT) * SH;  // this subgroup's tile of the round

  // A round's K and V units, LU an invocation: all loaded before any is stored, so their loads are in
  // flight together (a loop storing each unit as it arrives waited out one load latency per unit: 8 a
  // tile at head_dim 128).
  const uint LU = (RK * HU + WG - 1u) / WG;
  uvec4 kr[LU], vr[LU];
#define LOAD_TILE(J0)                                                   \
  {                                                                     \
    uint cnt_ = min(RK, blk_end - (J0));                                \
    [[unroll]] for (uint p = 0u; p < LU; ++p) {                         \
      uint i = tid + WG * p, j = i / HU, u = i % HU;                    \
      kr[p] = uvec4(0u);                                                \
      vr[p] = uvec4(0u);                                                \
      if (i < RK * HU && j < cnt_) {                                    \
        uint e = (((J0) + j) * ldkv + kv_off + 8u * u) >> 3;            \
        kr[p] = u4_buf(pc.k).d[e];                                      \
        vr[p] = u4_buf(pc.v).d[e];                                      \
      }                                                                 \
    }                                                                   \
  }
  if (PREFETCH && pc.kv_start < blk_end) LOAD_TILE(pc.kv_start)
  for (uint r0k = pc.kv_start; r0k < blk_end; r0k += RK) {
    if (!PREFETCH) LOAD_TILE(r0k)
    [[unroll]] for (uint p = 0u; p < LU; ++p) {
      uint i = tid + WG * p, j = i / HU, u = i % HU;
      if (i < RK * HU) {
        kv[j * SH + u] = to_f16(kr[p], K_BF16);
        kv[(RK + j) * SH + u] = to_f16(vr[p], V_BF16);
      }
    }
    barrier();
    if (PREFETCH && r0k + RK < blk_end) LOAD_TILE(r0k + RK)
    uint j0 = r0k + ks * KT;  // this subgroup's tile
    if (REGS && j0 < rg_end) {
      fcoopmatNV<32, gl_ScopeSubgroup, 16, 8> sc[KT / 8u];
      [[unroll]] for (uint n = 0u; n < KT / 8u; ++n) {
        sc[n] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 8>(0.0);
        [[unroll]] for (uint c = 0u; c < HD / 16u; ++c) {
          fcoopmatNV<16, gl_ScopeSubgroup, 16, 8> kb;
          coopMatLoadNV(kb, kv, kbase + 8u * n * SH + 2u * c, SH, true);
          sc[n] = coopMatMulAddNV(qa[c], kb, sc[n]);
        }
      }
      // Scaled scores masked past each row's end, the tile's row maxima over the row's four invocations.
      float xa = NEG_INF, xb = NEG_INF;
      [[unroll]] for (uint n = 0u; n < KT / 8u; ++n)
        [[unroll]] for (uint e = 0u; e < 2u; ++e) {
          uint j = j0 + 8u * n + gc + e;
          float va = j < end_a ? sc[n][e] * pc.scale : NEG_INF;
          float vb = j < end_b ? sc[n][2u + e] * pc.scale : NEG_INF;
          sc[n][e] = va;
          sc[n][2u + e] = vb;
          xa = max(xa, va);
          xb = max(xb, vb);
        }
      xa = max(xa, subgroupShuffleXor(xa, 1u));
      xa = max(xa, subgroupShuffleXor(xa, 2u));
      xb = max(xb, subgroupShuffleXor(xb, 1u));
      xb = max(xb, subgroupShuffleXor(xb, 2u));
      float na = max(ma, xa), nb = max(mb, xb);
      float aa = ma == NEG_INF ? 0.0 : exp(ma - na), ab = mb == NEG_INF ? 0.0 : exp(mb - nb);  // nothing yet: 0
      ma = na;
      mb = nb;
      float sa_ = 0.0, sb_ = 0.0;
      [[unroll]] for (uint n = 0u; n < KT / 8u; ++n)
        [[unroll]] for (uint e = 0u; e < 2u; ++e) {
          float pa = sc[n][e] == NEG_INF ? 0.0 : exp(sc[n][e] - na);
          float pb = sc[n][2u + e] == NEG_INF ? 0.0 : exp(sc[n][2u + e] - nb);
          sc[n][e] = pa;
          sc[n][2u + e] = pb;
          sa_ += pa;
          sb_ += pb;
        }
      la = la * aa + sa_;
      lb = lb * ab + sb_;
      [[unroll]] for (uint c = 0u; c < HD / 8u; ++c) {
        oacc[c][0] *= aa;
        oacc[c][1] *= aa;
        oacc[c][2] *= ab;
        oacc[c][3] *= ab;
      }
      // O += P V: P's 16 x 16 factors are pairs of score blocks, rounded to f16. Pair p of the factor is
      // the row half (element pair 0 or 1 of a block) and column half (the first block or the second)
      // FACTOR_ORDER gives it.
      [[unroll]] for (uint kk = 0u; kk < KT / 16u; ++kk) {
        fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> pf;
        [[unroll]] for (uint p = 0u; p < 4u; ++p) {
          uint row_half = FACTOR_ORDER == 0u ? p % 2u : p / 2u, col_half = FACTOR_ORDER == 0u ? p / 2u : p % 2u;
          [[unroll]] for (uint e = 0u; e < 2u; ++e)
            pf[2u * p + e] = float16_t(sc[2u * kk + col_half][2u * row_half + e]);
        }
        [[unroll]] for (uint c = 0u; c < HD / 8u; ++c) {
          fcoopmatNV<16, gl_ScopeSubgroup, 16, 8> vb;
          coopMatLoadNV(vb, kv, vbase + 16u * kk * SH + c, SH, false);
          oacc[c] = coopMatMulAddNV(pf, vb, oacc[c]);
        }
      }
    } else if (!REGS && j0 < rg_end) {
      // S = Q K^T for this subgroup's rows, through shared memory.
      [[unroll]] for (uint n = 0u; n < KT / 8u; ++n) {
        fcoopmatNV<32, gl_ScopeSubgroup, 16, 8> s = fcoopmatNV<32, gl_ScopeSubgroup, 16, 8>(0.0);
        [[unroll]] for (uint c = 0u; c < HD / 16u; ++c) {
          fcoopmatNV<16, gl_ScopeSubgroup, 16, 8> kb;
          coopMatLoadNV(kb, kv, kbase + 8u * n * SH + 2u * c, SH, true);
          s = coopMatMulAddNV(qa[c], kb, s);
        }
        coopMatStoreNV(s, sa, sbase + 8u * n, SA, false);
      }
      subgroupBarrier();
      // This lane's half row: scaled scores masked past the row's end, the running maximum and sum, P.
      float sv[HALF];
      float tm = NEG_INF;
      [[unroll]] for (uint c = 0u; c < HALF; ++c) {
        uint col = lh * HALF + c;
        float x = j0 + col < my_end ? sa[sbase + lr * SA + col] * pc.scale : NEG_INF;
        sv[c] = x;
        tm = max(tm, x);
      }
      tm = max(tm, subgroupShuffleXor(tm, 1u));
      float m_new = max(m, tm);
      float alpha = m == NEG_INF ? 0.0 : exp(m - m_new);  // nothing accumulated yet: 0
      float psum = 0.0;
      uint pw[HALF / 2u];
      [[unroll]] for (uint c = 0u; c < HALF; c += 2u) {
        float p0 = sv[c] == NEG_INF ? 0.0 : exp(sv[c] - m_new);
        float p1 = sv[c + 1u] == NEG_INF ? 0.0 : exp(sv[c + 1u] - m_new);
        psum += p0 + p1;
        pw[c / 2u] = pack_h(vec2(p0, p1));
      }
      l = l * alpha + psum + subgroupShuffleXor(psum, 1u);
      m = m_new;
      [[unroll]] for (uint c = 0u; c < HALF / 8u; ++c)
        ps[sg * 16u * SP + lr * SP + lh * (HALF / 8u) + c] = uvec4(pw[4u * c], pw[4u * c + 1u], pw[4u * c + 2u], pw[4u * c + 3u]);
      subgroupBarrier();
      // T = P V on the tensor cores, back through the score area (its scores are read); O = O alpha + T.
      [[unroll]] for (uint c = 0u; c < HD / 8u; ++c) {
        fcoopmatNV<32, gl_ScopeSubgroup, 16, 8> t = fcoopmatNV<32, gl_ScopeSubgroup, 16, 8>(0.0);
        [[unroll]] for (uint kk = 0u; kk < KT / 16u; ++kk) {
          fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> pa;
          coopMatLoadNV(pa, ps, sg * 16u * SP + 2u * kk, SP, false);
          fcoopmatNV<16, gl_ScopeSubgroup, 16, 8> vb;
          coopMatLoadNV(vb, kv, vbase + 16u * kk * SH + c, SH, false);
          t = coopMatMulAddNV(pa, vb, t);
        }
        coopMatStoreNV(t, sa, sbase + 8u * c, SA, false);
      }
      subgroupBarrier();
      [[unroll]] for (uint d = 0u; d < OH; ++d) o[d] = o[d] * alpha + sa[sbase + lr * SA + lh * OH + d];
    }
    barrier();  // the next round overwrites the K/V area and this subgroup's scores
  }
#undef LOAD_TILE

  // The key splits merge into subgroup ks = 0 of each row group: the others leave their rows' output,
  // maximum and sum in their score areas (SA >= HD + 4 floats a row).
  if (KS > 1u) {
    if (ks != 0u) {
      [[unroll]] for (uint d = 0u; d < OH; ++d) sa[sbase + lr * SA + lh * OH + d] = o[d];
      if (lh == 0u) {
        sa[sbase + lr * SA + HD] = m;
        sa[sbase + lr * SA + HD + 1u] = l;
      }
    }
    barrier();
    if (ks != 0u) return;
    for (uint k = 1u; k < KS; ++k) {
      uint ob = (sg + k * RG) * 16u * SA + lr * SA;
      float mk = sa[ob + HD], lk = sa[ob + HD + 1u];
      float mm = max(m, mk);
      float a = m == NEG_INF ? 0.0 : exp(m - mm), b = mk == NEG_INF ? 0.0 : exp(mk - mm);
      [[unroll]] for (uint d = 0u; d < OH; ++d) o[d] = o[d] * a + sa[ob + lh * OH + d] * b;
      l = l * a + lk * b;
      m = mm;
    }
  }

  if (REGS) {
    la += subgroupShuffleXor(la, 1u);
    la += subgroupShuffleXor(la, 2u);
    lb += subgroupShuffleXor(lb, 1u);
    lb += subgroupShuffleXor(lb, 2u);
    f32_buf ob = f32_buf(pc.o);
    [[unroll]] for (uint c = 0u; c < HD / 8u; ++c)
      [[unroll]] for (uint e = 0u; e < 2u; ++e) {
        if (ta < pc.T) ob.d[ta * ldq + h * HD + 8u * c + gc + e] = la > 0.0 ? oacc[c][e] / la : 0.0;
        if (tb < pc.T) ob.d[tb * ldq + h * HD + 8u * c + gc + e] = lb > 0.0 ? oacc[c][2u + e] / lb : 0.0;
      }
    return;
  }
  if (my_t < pc.T) {
    f32_buf ob = f32_buf(pc.o);
    [[unroll]] for (uint d = 0u; d < OH; ++d) ob.d[my_t * ldq + h * HD + lh * OH + d] = l > 0.0 ? o[d] / l : 0.0;
  }
}
