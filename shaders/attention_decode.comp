#version 450
// ATTENTION_TILE for one decode row (T = 1, partial = 0) over a 16-bit cache (F16, BF16), as
// flash-decoding in one dispatch: one workgroup per (KV head, chunk of keys) serves every query head of
// its GQA group, so each K and V row is read once per step. Same semantics as attention.comp: keys j in
// [kv_start, kv_start + kv_len + globals.pos), with causal also j <= q_pos + globals.pos, never past
// the cache's slots.
//
// Built for latency (a decode step's attention reads well under a megabyte; what costs is the chain of
// dependent memory round trips and serial steps, not bytes):
// - A pass takes CK = WG keys, one per invocation: the invocation reads its whole K row (HD / 8
//   16-byte loads, all in flight together) and scores it against the G query heads (in shared memory).
// - Before the softmax's reductions it issues its V loads, so they fly while the scores are reduced:
//   invocation t = kl * U + u (U = HD / 8 units of 8 dims a row) takes unit u of keys kl, kl + KL, ...
//   (KL = WG / U key lanes, U keys each), one 16-byte load a key.
// - The softmax over the pass: one subgroup reduction and one exchange through shared memory per
//   quantity (max, sum); p goes to shared memory and each invocation accumulates p_gj v_j for its keys.
// - The key lanes' sums merge by subgroup shuffles (the lanes holding the same unit), then across
//   subgroups (or key lanes, where a row's units span subgroups) through shared memory.
// - Chunks: as many as the keys need at CK keys each (at most MAX_CHUNKS; past that a chunk loops over
//   several passes with an online softmax). The VM dispatches that many per KV head, computed on the
//   device from the position (an indirect dispatch), so a short context wakes few workgroups. A one-chunk step
//   writes the output directly. Otherwise each workgroup writes its (acc, m, l) to the scratch buffer
//   and increments its KV head's arrival counter; the last to arrive (it never waits on the others: no
//   forward-progress assumption) merges every chunk, all its invocations loading partials at once, and
//   puts the counter back to 0 for the next step.
//
// Scratch (floats): [n_kv_heads] uint counters, m [n_kv][G][MAX_CHUNKS], l [n_kv][G][MAX_CHUNKS],
// acc [n_kv][MAX_CHUNKS][G][HD]; the VM zero-fills it once.
#include "common/octo.glsl"
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_shuffle : require
layout(local_size_x_id = 0) in;
layout(buffer_reference, std430, buffer_reference_align = 4) coherent buffer scratch_f32 { float d[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) coherent buffer scratch_u32 { uint d[]; };
layout(constant_id = 1) const uint HD = 64;          // head_dim: a multiple of 8, HD / 8 a power of two
layout(constant_id = 2) const uint LANES_MIN = 32;   // the subgroup size the planner assumed
layout(constant_id = 3) const uint K_DT = 1;         // cache dtypes: F16 or BF16
layout(constant_id = 4) const uint V_DT = 1;
layout(constant_id = 5) const uint G = 7;            // query heads per KV head (n_heads / n_kv_heads)
layout(constant_id = 6) const uint MAX_CHUNKS = 64;  // chunks per KV head, at most (<= the workgroup size)
layout(constant_id = 7) const uint RB = 8;           // rows of partial sums shared memory holds at once

layout(push_constant) uniform params {
  uvec2 q, k, v, o, globals, scratch;
  uint n_heads, n_kv_heads, head_dim, kv_start, kv_len, causal, q_pos, slots;
  float scale;
} pc;

const uint WG = gl_WorkGroupSize.x;
const uint CK = WG;            // keys a pass
const uint U = HD / 8u;        // 16-byte units a row
const uint KL = WG / U;        // key lanes of the V phase
const uint VK = CK / KL;       // keys a V lane takes a pass (= U)
const uint NSG = WG / LANES_MIN;
const uint H4 = HD / 4u;
// After the shuffles one partial sum per (row, unit): a row is a subgroup (U < the subgroup size, its
// lanes below U hold the sums) or a key lane (U >= the subgroup size: no shuffles).
const uint ROW_W = U > LANES_MIN ? U : LANES_MIN;
const uint NROWS = WG / ROW_W;
// One shared array serves the pass's probabilities [G][CK] and, after the last pass, RB rows' sums
// [RB][G][HD] at a time.
const uint SH_P = G * CK, SH_R = RB * G * HD;
const uint NOUT = (G * HD + WG - 1u) / WG;  // outputs an invocation sums
const uint SH = SH_P > SH_R ? SH_P : SH_R;

shared vec4 qs[G * H4];        // the group's query rows, pre-scaled
shared float sh[SH];
shared float red_m[NSG * G], red_s[NSG * G];
shared float cw[MAX_CHUNKS * G];  // the last workgroup's merge weights exp(m_c - M) / L
shared bool is_last;

void main() {
  uint wg_id = octo_group_linear();
  uint nkv = pc.n_kv_heads;
  if (wg_id >= nkv * MAX_CHUNKS) return;
  uint kvh = wg_id % nkv, chunk = wg_id / nkv;
  uint tid = gl_LocalInvocationID.x;
  uint ldkv = nkv * HD;
  uint kv_off = kvh * HD;
  const float NEG_INF = uintBitsToFloat(0xff800000u);
  f32_buf ob = f32_buf(pc.o);
  f32_buf qb = f32_buf(pc.q);

  uint gpos = globals_buf(pc.globals).pos;
  // The query rows load while the position is in flight (their address does not depend on it).
  float qv[(G * HD + WG - 1u) / WG];
  [[unroll]] for (uint r = 0u; r < (G * HD + WG - 1u) / WG; ++r) {
    uint i = tid + r * WG;
    qv[r] = i < G * HD ? qb.d[kvh * G * HD + i] : 0.0;
  }
  uint start = pc.kv_start;
  uint end = pc.kv_start + pc.kv_len + gpos;
  if (pc.causal != 0u) end = min(end, pc.q_pos + gpos + 1u);
  end = min(end, pc.slots);  // never read past the cache, whatever globals.pos says
  uint n_keys = end > start ? end - start : 0u;
  // The chunks are the workgroups dispatched per KV head (the VM sizes the dispatch from the position,
  // kernels/attention.cpp), capped by the keys; fewer dispatched than the keys would fill make longer
  // chunks, never missing keys. The scratch layout keeps MAX_CHUNKS slots a head.
  uint dispatched = gl_NumWorkGroups.x * gl_NumWorkGroups.y * gl_NumWorkGroups.z / nkv;
  uint n_chunks = min(min(MAX_CHUNKS, dispatched), (n_keys + CK - 1u) / CK);
  uint clen = n_chunks == 0u ? CK : ((n_keys + n_chunks - 1u) / n_chunks + CK - 1u) / CK * CK;
  uint n_active = (n_keys + clen - 1u) / clen;
  if (n_keys == 0u) {  // no visible key: the output is 0 (written by the first chunk's workgroup)
    if (chunk == 0u)
      for (uint i = tid; i < G * HD; i += WG) ob.d[kvh * G * HD + i] = 0.0;
    return;
  }
  if (chunk >= n_active) return;

  // A device whose subgroups differ from what the planner assumed would break the shuffles' pairing:
  // write NaN (visible) instead of a wrong number.
  if (gl_SubgroupSize != LANES_MIN || gl_NumSubgroups != NSG) {
    if (chunk == 0u)
      for (uint i = tid; i < G * HD; i += WG) ob.d[kvh * G * HD + i] = uintBitsToFloat(0x7fc00000u);
    return;
  }

  [[unroll]] for (uint r = 0u; r < (G * HD + WG - 1u) / WG; ++r) {
    uint i = tid + r * WG;
    if (i < G * HD) qs[i >> 2][i & 3u] = qv[r] * pc.scale;
  }
  barrier();

  uint lane = gl_SubgroupInvocationID, sg = gl_SubgroupID;
  uint kl = tid / U, u = tid % U;
  uint c0 = start + chunk * clen, c1 = min(c0 + clen, end);
  u4_buf kb = u4_buf(pc.k);
  u4_buf vb = u4_buf(pc.v);
  float m_run[G], l_run[G];
  float acc[G][8];
  [[unroll]] for (uint g = 0u; g < G; ++g) {
    m_run[g] = NEG_INF;
    l_run[g] = 0.0;
    [[unroll]] for (uint e = 0u; e < 8u; ++e) acc[g][e] = 0.0;
  }

  for (uint base = c0; base < c1; base += CK) {
    uint cnt = min(CK, c1 - base);
    // Scores of this invocation's key (the pass's last key's row where past the end: valid, unused).
    uint j = base + min(tid, cnt - 1u);
    uint krow = (j * ldkv + kv_off) >> 3;
    uvec4 kw[U];
    [[unroll]] for (uint i = 0u; i < U; ++i) kw[i] = kb.d[krow + i];
    float s[G];
    [[unroll]] for (uint g = 0u; g < G; ++g) s[g] = 0.0;
    [[unroll]] for (uint i = 0u; i < U; ++i) {
      vec4 a = unpack8_lo(kw[i], K_DT), b = unpack8_hi(kw[i], K_DT);
      [[unroll]] for (uint g = 0u; g < G; ++g) s[g] += dot(qs[g * H4 + 2u * i], a) + dot(qs[g * H4 + 2u * i + 1u], b);
    }
    // This invocation's V loads, in flight during the reductions below.
    uvec4 vw[VK];
    [[unroll]] for (uint i = 0u; i < VK; ++i) {
      uint jv = base + min(kl + i * KL, cnt - 1u);
      vw[i] = vb.d[((jv * ldkv + kv_off) >> 3) + u];
    }
    bool live = tid < cnt;
    [[unroll]] for (uint g = 0u; g < G; ++g) {
      float mx = subgroupMax(live ? s[g] : NEG_INF);
      if (lane == 0u) red_m[sg * G + g] = mx;
    }
    barrier();
    float alpha[G];
    [[unroll]] for (uint g = 0u; g < G; ++g) {
      float mp = NEG_INF;
      for (uint w = 0u; w < NSG; ++w) mp = max(mp, red_m[w * G + g]);
      float m_new = max(m_run[g], mp);  // finite: the pass has at least one key
      alpha[g] = exp(m_run[g] - m_new);
      m_run[g] = m_new;
      float p = live ? exp(s[g] - m_new) : 0.0;
      sh[g * CK + tid] = p;
      float ps = subgroupAdd(p);
      if (lane == 0u) red_s[sg * G + g] = ps;
    }
    barrier();
    [[unroll]] for (uint g = 0u; g < G; ++g) {
      float ls = 0.0;
      for (uint w = 0u; w < NSG; ++w) ls += red_s[w * G + g];
      l_run[g] = l_run[g] * alpha[g] + ls;
      [[unroll]] for (uint e = 0u; e < 8u; ++e) acc[g][e] *= alpha[g];
    }
    [[unroll]] for (uint i = 0u; i < VK; ++i) {
      uint t = kl + i * KL;  // past cnt p is 0
      vec4 a = unpack8_lo(vw[i], V_DT), b = unpack8_hi(vw[i], V_DT);
      [[unroll]] for (uint g = 0u; g < G; ++g) {
        float p = sh[g * CK + t];
        acc[g][0] += p * a.x;
        acc[g][1] += p * a.y;
        acc[g][2] += p * a.z;
        acc[g][3] += p * a.w;
        acc[g][4] += p * b.x;
        acc[g][5] += p * b.y;
        acc[g][6] += p * b.z;
        acc[g][7] += p * b.w;
      }
    }
    barrier();  // sh and red_* are rewritten by the next pass
  }

  // The key lanes of a subgroup holding the same unit (lane % U) sum up; lanes below U hold the sums.
  for (uint off = U; off < LANES_MIN; off <<= 1)
    [[unroll]] for (uint g = 0u; g < G; ++g)
      [[unroll]] for (uint e = 0u; e < 8u; ++e) acc[g][e] += subgroupShuffleXor(acc[g][e], off);
  // Rows' sums to shared memory RB rows at a time (what the device's shared memory holds), each
  // invocation adding up its outputs i = tid, tid + WG, ...
  uint row = tid / ROW_W;
  float outv[NOUT];
  [[unroll]] for (uint r = 0u; r < NOUT; ++r) outv[r] = 0.0;
  for (uint r0 = 0u; r0 < NROWS; r0 += RB) {
    if ((U >= LANES_MIN || lane < U) && row >= r0 && row < r0 + RB)
      [[unroll]] for (uint g = 0u; g < G; ++g)
        [[unroll]] for (uint e = 0u; e < 8u; ++e) sh[((row - r0) * G + g) * HD + u * 8u + e] = acc[g][e];
    barrier();
    [[unroll]] for (uint r = 0u; r < NOUT; ++r) {
      uint i = tid + r * WG;
      if (i < G * HD)
        for (uint w = 0u; w < RB && r0 + w < NROWS; ++w) outv[r] += sh[w * G * HD + i];
    }
    barrier();
  }

  if (n_active == 1u) {  // one chunk holds every key: the output directly
    [[unroll]] for (uint r = 0u; r < NOUT; ++r) {
      uint i = tid + r * WG;
      if (i >= G * HD) continue;
      float lg = 0.0;
      [[unroll]] for (uint g = 0u; g < G; ++g)
        if (g == i / HD) lg = l_run[g];
      ob.d[kvh * G * HD + i] = lg > 0.0 ? outv[r] / lg : 0.0;
    }
    return;
  }

  scratch_u32 counters = scratch_u32(pc.scratch);
  scratch_f32 sc = scratch_f32(pc.scratch);
  uint ml_base = nkv;                                // m [nkv][G][MAX_CHUNKS], then l
  uint l_base = ml_base + nkv * G * MAX_CHUNKS;
  uint acc_base = l_base + nkv * G * MAX_CHUNKS;     // acc [nkv][MAX_CHUNKS][G][HD]
  [[unroll]] for (uint r = 0u; r < NOUT; ++r) {
    uint i = tid + r * WG;
    if (i < G * HD) sc.d[acc_base + (kvh * MAX_CHUNKS + chunk) * G * HD + i] = outv[r];
  }
  if (tid < G) {
    // m_run / l_run are uniform over the workgroup; G is a compile-time bound, so select by index.
    float mm = 0.0, ll = 0.0;
    [[unroll]] for (uint g = 0u; g < G; ++g)
      if (g == tid) {
        mm = m_run[g];
        ll = l_run[g];
      }
    sc.d[ml_base + (kvh * G + tid) * MAX_CHUNKS + chunk] = mm;
    sc.d[l_base + (kvh * G + tid) * MAX_CHUNKS + chunk] = ll;
  }
  // Release: every invocation's partials are visible device-wide before the arrival is counted.
  memoryBarrierBuffer();
  barrier();
  if (tid == 0u) {
    uint prev = atomicAdd(counters.d[kvh], 1u);
    is_last = prev == n_active - 1u;
    if (is_last) atomicExchange(counters.d[kvh], 0u);  // every chunk has arrived: ready for the next step
  }
  barrier();
  if (!is_last) return;
  // Acquire: the other chunks' partials, written before their arrivals, are read after ours.
  memoryBarrierBuffer();

  // Every (chunk, head) pair's m and l load at once, one invocation each.
  for (uint i = tid; i < n_active * G; i += WG) {
    uint c = i / G, g = i % G;
    cw[c * G + g] = sc.d[ml_base + (kvh * G + g) * MAX_CHUNKS + c];
    sh[c * G + g] = sc.d[l_base + (kvh * G + g) * MAX_CHUNKS + c];
  }
  barrier();
  if (tid < G) {
    float M = NEG_INF;
    for (uint c = 0u; c < n_active; ++c) M = max(M, cw[c * G + tid]);
    float L = 0.0;
    for (uint c = 0u; c < n_active; ++c) L += sh[c * G + tid] * exp(cw[c * G + tid] - M);
    float inv = L > 0.0 ? 1.0 / L : 0.0;
    for (uint c = 0u; c < n_active; ++c) cw[c * G + tid] = exp(cw[c * G + tid] - M) * inv;
  }
  barrier();
  // Each output sums its chunks' partials, four loads in flight at a time.
  for (uint i = tid; i < G * HD; i += WG) {
    uint g = i / HD;
    uint a0 = acc_base + kvh * MAX_CHUNKS * G * HD + i;
    float a = 0.0;
    uint c = 0u;
    for (; c + 4u <= n_active; c += 4u) {
      float x0 = sc.d[a0 + c * G * HD], x1 = sc.d[a0 + (c + 1u) * G * HD];
      float x2 = sc.d[a0 + (c + 2u) * G * HD], x3 = sc.d[a0 + (c + 3u) * G * HD];
      a += cw[c * G + g] * x0 + cw[(c + 1u) * G + g] * x1 + cw[(c + 2u) * G + g] * x2 + cw[(c + 3u) * G + g] * x3;
    }
    for (; c < n_active; ++c) a += cw[c * G + g] * sc.d[a0 + c * G * HD];
    ob.d[kvh * G * HD + i] = a;
  }
}
