#version 450
// ATTENTION_TILE: one workgroup per (query row t, head h); GQA head h reads kv head h / (n_heads /
// n_kv_heads). Keys j in [kv_start, kv_start + kv_len + globals.pos), and with causal also
// j <= q_pos + globals.pos + t, never past the cache's slots. partial = 1 writes (normalised o, m, l)
// per (t, h) for ATTENTION_COMBINE.
//
// Why this shape: a decode step has only T * n_heads (e.g. 14) rows, so one row must keep many
// invocations busy without a barrier per chunk of keys. The workgroup is split into "groups" (a
// subgroup each in the OCTO_SUBGROUP variant; the whole workgroup in the _nosg fallback). A group takes
// a contiguous 1/NGROUPS of the keys in blocks of GSIZE: each lane scores one key of a block with
// 16-byte loads of its K row, the group updates its own online softmax (m, l) with one max and one sum, then the
// lanes split head_dim (4 dims each, so a block's V rows are read as whole contiguous rows) and
// accumulate p_j v_j. At the end the groups merge (m, l, acc) once through shared memory.
#include "common/octo.glsl"
#ifdef OCTO_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
layout(local_size_x_id = 0) in;
layout(buffer_reference, std430, buffer_reference_align = 8) buffer u2_buf { uvec2 d[]; };  // 4 16-bit values
layout(constant_id = 1) const uint HD_MAX = 128;    // >= head_dim
layout(constant_id = 2) const uint LANES_MIN = 32;  // the smallest group: the subgroup size (the workgroup in _nosg)
layout(constant_id = 3) const uint K_DT = 0;        // cache dtypes (F32, F16, BF16): fixed per pipeline so the
layout(constant_id = 4) const uint V_DT = 0;        // inner loops carry no dtype branches
layout(constant_id = 5) const bool VEC_K = false;   // K rows load as 16-byte units (head_dim and address allow it)
layout(constant_id = 6) const bool VEC_V = false;   // V rows load as 4-dim units (head_dim % 4 == 0, aligned)
#ifndef OCTO_SUBGROUP
#include "common/reduce.glsl"
#endif

layout(push_constant) uniform params {
  uvec2 q, k, v, o, globals;
  uint T, n_heads, n_kv_heads, head_dim, kv_start, kv_len, causal, q_pos, partial, slots;
  float scale;
} pc;

const uint WG = gl_WorkGroupSize.x;
const uint UPL = (HD_MAX / 4u + LANES_MIN - 1u) / LANES_MIN;  // 4-dim units of o per lane
const uint NG_MAX = WG / LANES_MIN;                           // groups per workgroup, at most

shared vec4 qs[HD_MAX / 4u];         // the query row, pre-scaled
shared float pj[WG];                 // a block's probabilities, GSIZE per group
shared float gm[NG_MAX], gsum_l[NG_MAX];
shared float gacc[NG_MAX * HD_MAX];  // each group's unnormalised accumulator

#ifdef OCTO_SUBGROUP
#define GSIZE gl_SubgroupSize
#define GLANE gl_SubgroupInvocationID
#define GID gl_SubgroupID
#define NGROUPS gl_NumSubgroups
float g_max(float x) { return subgroupMax(x); }
float g_sum(float x) { return subgroupAdd(x); }
void g_sync() {
  subgroupMemoryBarrierShared();
  subgroupBarrier();
}
#else
#define GSIZE WG
#define GLANE gl_LocalInvocationID.x
#define GID 0u
#define NGROUPS 1u
float g_max(float x) { return wg_max(x); }
float g_sum(float x) { return wg_sum(x); }
void g_sync() { barrier(); }
#endif

float q_at(uint d) { return qs[d >> 2][d & 3u]; }

// q . k_j (q pre-scaled); `e` is the element index of the row's first dim.
float k_dot(uint e) {
  uint hd = pc.head_dim;
  float s = 0.0;
  if (VEC_K && K_DT == DT_F32) {
    v4_buf kb = v4_buf(pc.k);
    uint b = e >> 2;
    for (uint i = 0u; i < (hd >> 2); ++i) s += dot(qs[i], kb.d[b + i]);
  } else if (VEC_K) {
    u4_buf kb = u4_buf(pc.k);
    uint b = e >> 3;
    for (uint i = 0u; i < (hd >> 3); ++i) {
      uvec4 w = kb.d[b + i];
      s += dot(qs[2u * i], unpack8_lo(w, K_DT)) + dot(qs[2u * i + 1u], unpack8_hi(w, K_DT));
    }
  } else {
    for (uint d = 0u; d < hd; ++d) s += q_at(d) * load_elem(pc.k, e + d, K_DT);
  }
  return s;
}

// Dims 4u .. 4u + 3 of the V row starting at element e (0 past head_dim).
vec4 v_quad(uint e, uint u) {
  uint i = e + 4u * u;
  if (VEC_V) {  // i is a multiple of 4: one 16-byte (F32) or 8-byte (16-bit) load
    if (V_DT == DT_F32) return v4_buf(pc.v).d[i >> 2];
    uvec2 w = u2_buf(pc.v).d[i >> 2];
    return unpack8_lo(uvec4(w, 0u, 0u), V_DT);
  }
  vec4 r = vec4(0.0);
  [[unroll]] for (uint c = 0u; c < 4u; ++c)
    if (4u * u + c < pc.head_dim) r[c] = load_elem(pc.v, i + c, V_DT);
  return r;
}

void main() {
  uint th = octo_group_linear();
  if (th >= pc.T * pc.n_heads) return;
  uint tid = gl_LocalInvocationID.x;
  uint t = th / pc.n_heads, h = th % pc.n_heads;
  uint hd = pc.head_dim;
  uint ldkv = pc.n_kv_heads * hd;
  uint kv_off = (h / (pc.n_heads / pc.n_kv_heads)) * hd;
  uint units = (hd + 3u) / 4u;
  const float NEG_INF = uintBitsToFloat(0xff800000u);
  f32_buf ob = f32_buf(pc.o);
  uint obase = pc.partial != 0u ? th * (hd + 2u) : th * hd;

  // A device whose subgroups are smaller than the planner assumed would overflow the per-lane
  // accumulators: write NaN (visible) instead of a wrong number.
  if (GSIZE < LANES_MIN || GSIZE * NGROUPS > WG) {
    for (uint d = tid; d < hd; d += WG) ob.d[obase + d] = uintBitsToFloat(0x7fc00000u);
    return;
  }

  uint gpos = globals_buf(pc.globals).pos;  // issued before the q load: both in flight together
  f32_buf qb = f32_buf(pc.q);
  for (uint d = tid; d < HD_MAX; d += WG) qs[d >> 2][d & 3u] = d < hd ? qb.d[th * hd + d] * pc.scale : 0.0;
  barrier();

  uint start = pc.kv_start;
  uint end = pc.kv_start + pc.kv_len + gpos;
  if (pc.causal != 0u) end = min(end, pc.q_pos + gpos + t + 1u);
  end = min(end, pc.slots);  // never read past the cache, whatever globals.pos says
  uint n_keys = end > start ? end - start : 0u;

  uint lane = GLANE, gid = GID;
  uint pbase = gid * GSIZE;
  float m = NEG_INF, l = 0.0;
  vec4 acc[UPL];
  for (uint i = 0u; i < UPL; ++i) acc[i] = vec4(0.0);

  // Each group takes a contiguous share of the keys, as even as the group count allows (short
  // contexts still spread over every group), in blocks of at most GSIZE keys. The trip counts are the
  // same for every lane of a group.
  uint per = (n_keys + NGROUPS - 1u) / NGROUPS;
  uint g_end = start + min((gid + 1u) * per, n_keys);
  for (uint j0 = start + min(gid * per, n_keys); j0 < g_end; j0 += GSIZE) {
    uint cnt = min(GSIZE, g_end - j0);
    float s = NEG_INF;
    if (lane < cnt) s = k_dot((j0 + lane) * ldkv + kv_off);
    float m_new = max(m, g_max(s));  // finite: the block has at least one key
    float alpha = exp(m - m_new);
    float p = lane < cnt ? exp(s - m_new) : 0.0;
    l = l * alpha + g_sum(p);
    m = m_new;
    pj[pbase + lane] = p;
    g_sync();
    for (uint i = 0u; i < UPL; ++i) acc[i] *= alpha;
    uint e0 = j0 * ldkv + kv_off;
    // Eight keys per step, their V loads in flight together; past the block's end p is 0 and the row
    // is the block's last (a valid address, already in cache).
    for (uint jj = 0u; jj < cnt; jj += 8u) {
      vec4 pa, pb;
      uint r[8];
      [[unroll]] for (uint k = 0u; k < 8u; ++k) {
        float pk = jj + k < cnt ? pj[pbase + jj + k] : 0.0;
        if (k < 4u) pa[k] = pk; else pb[k - 4u] = pk;
        r[k] = e0 + min(jj + k, cnt - 1u) * ldkv;
      }
      for (uint i = 0u; i < UPL; ++i) {
        uint u = lane + i * GSIZE;
        if (u < units) {
          vec4 v0 = v_quad(r[0], u), v1 = v_quad(r[1], u), v2 = v_quad(r[2], u), v3 = v_quad(r[3], u);
          vec4 v4 = v_quad(r[4], u), v5 = v_quad(r[5], u), v6 = v_quad(r[6], u), v7 = v_quad(r[7], u);
          acc[i] += pa.x * v0 + pa.y * v1 + pa.z * v2 + pa.w * v3 + pb.x * v4 + pb.y * v5 + pb.z * v6 + pb.w * v7;
        }
      }
    }
    g_sync();  // pj is rewritten by the next block
  }

  // Merge the groups: m* = max m_g, w_g = exp(m_g - m*), o = sum w_g acc_g / sum w_g l_g.
  if (lane == 0u) {
    gm[gid] = m;
    gsum_l[gid] = l;
  }
  for (uint i = 0u; i < UPL; ++i) {
    uint u = lane + i * GSIZE;
    if (u < units) {
      [[unroll]] for (uint c = 0u; c < 4u; ++c)
        if (4u * u + c < HD_MAX) gacc[gid * HD_MAX + 4u * u + c] = acc[i][c];
    }
  }
  barrier();
  uint ng = NGROUPS;
  float mstar = NEG_INF;
  for (uint i = 0u; i < ng; ++i)
    if (gsum_l[i] > 0.0) mstar = max(mstar, gm[i]);
  float lsum = 0.0;
  for (uint i = 0u; i < ng; ++i)
    if (gsum_l[i] > 0.0) lsum += gsum_l[i] * exp(gm[i] - mstar);
  float inv_l = lsum > 0.0 ? 1.0 / lsum : 0.0;
  for (uint d = tid; d < hd; d += WG) {
    float a = 0.0;
    for (uint i = 0u; i < ng; ++i)
      if (gsum_l[i] > 0.0) a += exp(gm[i] - mstar) * gacc[i * HD_MAX + d];
    ob.d[obase + d] = a * inv_l;
  }
  if (pc.partial != 0u && tid == 0u) {
    ob.d[obase + hd] = mstar;
    ob.d[obase + hd + 1u] = lsum;
  }
}
