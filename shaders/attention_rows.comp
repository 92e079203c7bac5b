#version 450
// ATTENTION_TILE for prefill (many query rows, partial = 0): one workgroup per (block of ROWS query
// rows, head). Same semantics as attention.comp: GQA head h reads kv head h / (n_heads / n_kv_heads);
// row t sees keys j in [kv_start, kv_start + kv_len + globals.pos), with causal also
// j <= q_pos + globals.pos + t, never past the cache's slots; a row with no visible key outputs 0.
//
// Why this shape: attention.comp reads a head's K/V once per query row, so a T-row prefill reads them
// T times. Here a tile of KT keys (K and V, converted to f32) is loaded into shared memory once and used
// by all ROWS rows of the block. Every step of a tile runs on the whole workgroup (a tile costs four
// barriers whatever its size, so KT is as large as shared memory allows): TPR invocations a row each
// score KPT keys of it, reduce the row's maximum through shared memory and keep the row's online
// softmax (m, and a partial l summed at the end) in registers; then each invocation accumulates its
// rows x 4 dims of the output over the tile's V rows. Key tiles wholly past the block's last visible key (the
// causal diagonal) are never loaded. No subgroup operations.
#include "common/octo.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint HD_MAX = 128;  // >= head_dim, a multiple of 32
layout(constant_id = 2) const uint K_DT = 0;      // cache dtypes (F32, F16, BF16, Q8_0)
layout(constant_id = 3) const uint V_DT = 0;
layout(constant_id = 4) const uint KT = 16;       // keys per shared tile: 16 or 32 (what shared memory holds)
layout(constant_id = 5) const bool VEC = false;   // tiles load as 16-byte units (16-bit caches, head_dim % 8 == 0, aligned)

layout(push_constant) uniform params {
  uvec2 q, k, v, o, globals;
  uint T, n_heads, n_kv_heads, head_dim, kv_start, kv_len, causal, q_pos, partial, slots;
  float scale;
} pc;

const uint WG = gl_WorkGroupSize.x;
const uint ROWS = 16u;                               // query rows per workgroup
const uint TPR = WG / ROWS;                          // invocations per row in the score step
const uint KPT = KT / TPR;                           // keys an invocation scores per tile
const uint H4 = HD_MAX / 4u;
const uint QS = H4 + 1u;                             // row strides padded by one vec4: rows read
const uint KS = H4 + 1u;                             // side by side hit different banks
// The P.V step: the output is cut into slots of RW rows x 4 dims (slot s: dims 4 * (s % DG), rows
// RW * (s / DG) ..); invocation t owns slots t, t + WG, ..., so each key costs it RW probability loads
// and one vec4 V load for 4 * RW FMAs a slot.
const uint DG = H4;                                  // 4-dim groups a row
const uint RW = ROWS * DG >= 4u * WG ? 4u : (ROWS * DG >= 2u * WG ? 2u : 1u);
const uint NSLOT = (ROWS / RW) * DG;
const uint NS = (NSLOT + WG - 1u) / WG;              // slots an invocation owns

shared vec4 qs[ROWS * QS];   // the block's query rows, pre-scaled, zero past head_dim
shared vec4 ks[KT * KS];     // the tile's K rows (f32), zero past head_dim
shared vec4 vs[KT * H4];
shared float ps[ROWS * KT];  // the tile's probabilities
shared float red[WG];        // the rows' partial maxima, then partial sums
shared float row_alpha[ROWS];
shared uint row_end[ROWS];   // one past the row's last visible key (0: none)

void store_kv(uint j, uint d, float kx, float vx) {
  ks[j * KS + (d >> 2)][d & 3u] = kx;
  vs[j * H4 + (d >> 2)][d & 3u] = vx;
}

void main() {
  uint g = octo_group_linear();
  uint nblk = (pc.T + ROWS - 1u) / ROWS;
  if (g >= nblk * pc.n_heads) return;
  uint h = g % pc.n_heads, r0 = (g / pc.n_heads) * ROWS;
  uint tid = gl_LocalInvocationID.x;
  uint hd = pc.head_dim;
  uint ldq = pc.n_heads * hd;
  uint ldkv = pc.n_kv_heads * hd;
  uint kv_off = (h / (pc.n_heads / pc.n_kv_heads)) * hd;
  const float NEG_INF = uintBitsToFloat(0xff800000u);
  uint gpos = globals_buf(pc.globals).pos;

  uint start = pc.kv_start;
  uint lim = min(pc.kv_start + pc.kv_len + gpos, pc.slots);  // never read past the cache
  f32_buf qb = f32_buf(pc.q);
  for (uint i = tid; i < ROWS * HD_MAX; i += WG) {
    uint r = i / HD_MAX, d = i % HD_MAX;
    uint t = r0 + r;
    qs[r * QS + (d >> 2)][d & 3u] = (t < pc.T && d < hd) ? qb.d[t * ldq + h * hd + d] * pc.scale : 0.0;
  }
  if (tid < ROWS) {
    uint t = r0 + tid;
    uint e = lim;
    if (pc.causal != 0u) e = min(e, pc.q_pos + gpos + t + 1u);
    row_end[tid] = t < pc.T ? e : 0u;
  }
  barrier();
  // The block's last key: rows' ends grow with t, but take the max to stay exact for any params.
  uint blk_end = 0u;
  for (uint r = 0u; r < ROWS; ++r) blk_end = max(blk_end, row_end[r]);

  // The score step's row and keys: row sr, keys sc, sc + TPR, ... of each tile.
  uint sr = tid / TPR, sc = tid % TPR;
  uint my_end = row_end[sr];
  float m_run = NEG_INF, l_part = 0.0;
  vec4 acc[NS * RW];
  [[unroll]] for (uint i = 0u; i < NS * RW; ++i) acc[i] = vec4(0.0);

  for (uint j0 = start; j0 < blk_end; j0 += KT) {
    uint cnt = min(KT, blk_end - j0);
    // Load the tile (f32), zero past head_dim and past the tile's keys.
    if (VEC) {
      uint upr = HD_MAX / 8u;  // 8-dim units a row
      for (uint i = tid; i < KT * upr; i += WG) {
        uint j = i / upr, d0 = (i % upr) * 8u;
        vec4 k0 = vec4(0.0), k1 = vec4(0.0), v0 = vec4(0.0), v1 = vec4(0.0);
        if (j < cnt && d0 < hd) {
          uint e = ((j0 + j) * ldkv + kv_off + d0) >> 3;
          uvec4 kw = u4_buf(pc.k).d[e], vw = u4_buf(pc.v).d[e];
          k0 = unpack8_lo(kw, K_DT);
          k1 = unpack8_hi(kw, K_DT);
          v0 = unpack8_lo(vw, V_DT);
          v1 = unpack8_hi(vw, V_DT);
        }
        ks[j * KS + (d0 >> 2)] = k0;
        ks[j * KS + (d0 >> 2) + 1u] = k1;
        vs[j * H4 + (d0 >> 2)] = v0;
        vs[j * H4 + (d0 >> 2) + 1u] = v1;
      }
    } else {
      for (uint i = tid; i < KT * HD_MAX; i += WG) {
        uint j = i / HD_MAX, d = i % HD_MAX;
        float kx = 0.0, vx = 0.0;
        if (j < cnt && d < hd) {
          uint e = (j0 + j) * ldkv + kv_off + d;
          kx = load_elem(pc.k, e, K_DT);
          vx = load_elem(pc.v, e, V_DT);
        }
        store_kv(j, d, kx, vx);
      }
    }
    barrier();
    // Scores of this invocation's keys, masked by its row's end; the row's maximum through shared memory.
    float s[KPT];
    float lm = NEG_INF;
    for (uint kk = 0u; kk < KPT; ++kk) {
      uint j = sc + kk * TPR;
      float x = NEG_INF;
      if (j < cnt && j0 + j < my_end) {
        x = 0.0;
        for (uint u = 0u; u < H4; ++u) x += dot(qs[sr * QS + u], ks[j * KS + u]);
      }
      s[kk] = x;
      lm = max(lm, x);
    }
    red[tid] = lm;
    barrier();
    float m_tile = NEG_INF;
    for (uint c = 0u; c < TPR; ++c) m_tile = max(m_tile, red[sr * TPR + c]);
    float m_new = max(m_run, m_tile);
    float alpha = m_run == NEG_INF ? 0.0 : exp(m_run - m_new);  // nothing accumulated yet: 0
    float psum = 0.0;
    for (uint kk = 0u; kk < KPT; ++kk) {
      float p = s[kk] == NEG_INF ? 0.0 : exp(s[kk] - m_new);
      ps[sr * KT + sc + kk * TPR] = p;
      psum += p;
    }
    l_part = l_part * alpha + psum;
    m_run = m_new;
    if (sc == 0u) row_alpha[sr] = alpha;
    barrier();
    [[unroll]] for (uint i = 0u; i < NS; ++i) {
      uint slot = tid + i * WG;
      if (slot >= NSLOT) break;
      uint pg = slot % DG, pr0 = (slot / DG) * RW;
      [[unroll]] for (uint r = 0u; r < RW; ++r) acc[i * RW + r] *= row_alpha[pr0 + r];
      for (uint j = 0u; j < cnt; ++j) {
        vec4 vv = vs[j * H4 + pg];
        [[unroll]] for (uint r = 0u; r < RW; ++r) acc[i * RW + r] += ps[(pr0 + r) * KT + j] * vv;
      }
    }
    barrier();  // the next tile overwrites ks, vs, ps and red
  }

  // The rows' l: the sum of their invocations' partial sums (every invocation of a row has the same m).
  red[tid] = l_part;
  barrier();
  f32_buf ob = f32_buf(pc.o);
  [[unroll]] for (uint i = 0u; i < NS; ++i) {
    uint slot = tid + i * WG;
    if (slot >= NSLOT) break;
    uint pg = slot % DG, pr0 = (slot / DG) * RW;
    [[unroll]] for (uint rr = 0u; rr < RW; ++rr) {
      uint r = pr0 + rr, t = r0 + r;
      if (t >= pc.T) continue;
      float l = 0.0;
      for (uint c = 0u; c < TPR; ++c) l += red[r * TPR + c];
      [[unroll]] for (uint c = 0u; c < 4u; ++c) {
        uint d = 4u * pg + c;
        if (d < hd) ob.d[t * ldq + h * hd + d] = l > 0.0 ? acc[i * RW + rr][c] / l : 0.0;
      }
    }
  }
}
