#version 450
// ATTENTION_TILE for prefill (many query rows, partial = 0): one workgroup per (block of ROWS query
// rows, head). Same semantics as attention.comp: GQA head h reads kv head h / (n_heads / n_kv_heads);
// row t sees keys j in [kv_start, kv_start + kv_len + globals.pos), with causal also
// j <= q_pos + globals.pos + t, never past the cache's slots; a row with no visible key outputs 0.
//
// Why this shape: attention.comp reads a head's K/V once per query row, so a T-row prefill reads them
// T times. Here a tile of KT keys (K and V, converted to f32) is loaded into shared memory once and used
// by all ROWS rows of the block; each row keeps its own online softmax (m, l) in shared memory and the
// workgroup's invocations hold the rows' output accumulators in registers. Key tiles wholly past the
// block's last visible key (the causal diagonal) are never loaded. No subgroup operations.
#include "common/octo.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint HD_MAX = 128;  // >= head_dim, a multiple of 32
layout(constant_id = 2) const uint K_DT = 0;      // cache dtypes (F32, F16, BF16)
layout(constant_id = 3) const uint V_DT = 0;

layout(push_constant) uniform params {
  uvec2 q, k, v, o, globals;
  uint T, n_heads, n_kv_heads, head_dim, kv_start, kv_len, causal, q_pos, partial, slots;
  float scale;
} pc;

const uint WG = gl_WorkGroupSize.x;
const uint ROWS = 16u;                               // query rows per workgroup
const uint KT = 16u;                                 // keys per shared tile
const uint H4 = HD_MAX / 4u;
const uint NACC = (ROWS * HD_MAX + WG - 1u) / WG;    // accumulators per invocation

shared vec4 qs[ROWS * H4];   // the block's query rows, pre-scaled, zero past head_dim
shared vec4 ks[KT * H4];     // the tile's K rows (f32), zero past head_dim
shared float vs[KT * HD_MAX];
shared float ps[ROWS * KT];  // scores, then probabilities
shared float row_m[ROWS], row_l[ROWS], row_alpha[ROWS];
shared uint row_end[ROWS];   // one past the row's last visible key (0: none)

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
    qs[r * H4 + (d >> 2)][d & 3u] = (t < pc.T && d < hd) ? qb.d[t * ldq + h * hd + d] * pc.scale : 0.0;
  }
  if (tid < ROWS) {
    uint t = r0 + tid;
    uint e = lim;
    if (pc.causal != 0u) e = min(e, pc.q_pos + gpos + t + 1u);
    row_end[tid] = t < pc.T ? e : 0u;
    row_m[tid] = NEG_INF;
    row_l[tid] = 0.0;
  }
  barrier();
  // The block's last key: rows' ends grow with t, but take the max to stay exact for any params.
  uint blk_end = 0u;
  for (uint r = 0u; r < ROWS; ++r) blk_end = max(blk_end, row_end[r]);

  float acc[NACC];
  for (uint i = 0u; i < NACC; ++i) acc[i] = 0.0;

  for (uint j0 = start; j0 < blk_end; j0 += KT) {
    uint cnt = min(KT, blk_end - j0);
    // Load the tile (f32), zero-padded past head_dim and past the tile's keys.
    for (uint i = tid; i < KT * HD_MAX; i += WG) {
      uint j = i / HD_MAX, d = i % HD_MAX;
      float kx = 0.0, vx = 0.0;
      if (j < cnt && d < hd) {
        uint e = (j0 + j) * ldkv + kv_off + d;
        kx = load_elem(pc.k, e, K_DT);
        vx = load_elem(pc.v, e, V_DT);
      }
      ks[j * H4 + (d >> 2)][d & 3u] = kx;
      vs[j * HD_MAX + d] = vx;
    }
    barrier();
    // Scores, masked per row.
    for (uint i = tid; i < ROWS * KT; i += WG) {
      uint r = i / KT, j = i % KT;
      float s = NEG_INF;
      if (j < cnt && j0 + j < row_end[r]) {
        s = 0.0;
        for (uint u = 0u; u < H4; ++u) s += dot(qs[r * H4 + u], ks[j * H4 + u]);
      }
      ps[i] = s;
    }
    barrier();
    // Online softmax per row: scores become probabilities, alpha rescales the row's accumulators.
    if (tid < ROWS) {
      float m = row_m[tid];
      float bm = NEG_INF;
      for (uint j = 0u; j < KT; ++j) bm = max(bm, ps[tid * KT + j]);
      float m_new = max(m, bm);
      float alpha = m == NEG_INF ? 0.0 : exp(m - m_new);  // m = -inf: nothing accumulated yet
      float sum = 0.0;
      for (uint j = 0u; j < KT; ++j) {
        float s = ps[tid * KT + j];
        float p = s == NEG_INF ? 0.0 : exp(s - m_new);
        ps[tid * KT + j] = p;
        sum += p;
      }
      row_m[tid] = m_new;
      row_l[tid] = row_l[tid] * alpha + sum;
      row_alpha[tid] = alpha;
    }
    barrier();
    for (uint i = 0u; i < NACC; ++i) {
      uint e = tid + i * WG;
      if (e < ROWS * HD_MAX) {
        uint r = e / HD_MAX, d = e % HD_MAX;
        float a = acc[i] * row_alpha[r];
        for (uint j = 0u; j < cnt; ++j) a += ps[r * KT + j] * vs[j * HD_MAX + d];
        acc[i] = a;
      }
    }
    barrier();  // the next tile overwrites ks, vs and ps
  }

  f32_buf ob = f32_buf(pc.o);
  for (uint i = 0u; i < NACC; ++i) {
    uint e = tid + i * WG;
    if (e < ROWS * HD_MAX) {
      uint r = e / HD_MAX, d = e % HD_MAX;
      uint t = r0 + r;
      if (t < pc.T && d < hd) {
        float l = row_l[r];
        ob.d[t * ldq + h * hd + d] = l > 0.0 ? acc[i] / l : 0.0;
      }
    }
  }
}
