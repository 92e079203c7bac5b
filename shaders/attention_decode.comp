#version 450
// ATTENTION_TILE for one decode row (T = 1, partial = 0) over a 16-bit cache (F16, BF16), as
// flash-decoding in one dispatch: one workgroup per (KV head, chunk of keys) serves every query head of
// its GQA group, so each K and V row is read once per step. Same semantics as attention.comp: keys j in
// [kv_start, kv_start + kv_len + globals.pos), with causal also j <= q_pos + globals.pos, never past
// the cache's slots.
//
// Built for latency: a decode step's attention reads well under a megabyte at short contexts, so what
// costs is the chain of dependent memory round trips and serial steps, not bytes. Hence:
// - Chunks of CK keys (one pass each at short contexts), so a 1k-key step spreads over 16 workgroups
//   a KV head instead of a few, and every load of a pass is issued before anything waits on one.
// - A pass: every invocation first issues its V loads (they do not depend on the scores), then its K
//   row (key j = tid % CK, all HD dims), and scores that key against HPT of the G query heads (the
//   query rows sit in shared memory; every lane of a subgroup reads the same element: a broadcast).
//   The softmax runs in 16 lanes per head through shared memory; each invocation then accumulates
//   p_gj v_j for 4 dims of its keys (key group kg = tid / (HD / 4)). No subgroup operation anywhere,
//   so the kernel is the same on every device (lavapipe included).
// - Past one pass (long contexts, at most MAX_CHUNKS chunks a head) a chunk loops with an online
//   softmax; the key groups' sums merge once through shared memory at the end.
// - Chunks merge in the same dispatch: each workgroup writes (acc, m, l) to the scratch buffer and counts
//   its arrival on its KV head's counter; the last to arrive (it never waits on the others: no
//   forward-progress assumption) merges every chunk and puts the counter back to 0 for the next step:
//   in registers where an invocation has one output (each loads its chunks' m, l and partial sums, 8
//   chunks a round trip), else through shared memory (each (chunk, head)'s weight computed once, then
//   16-byte loads of the partial sums, eight in flight). A one-chunk step writes the output directly.
//
// Scratch (floats): [n_kv_heads] uint counters, m [n_kv][G][MAX_CHUNKS], l [n_kv][G][MAX_CHUNKS],
// acc [n_kv][MAX_CHUNKS][G][HD]; the VM zero-fills it once.
#include "common/octo.glsl"
layout(local_size_x_id = 0) in;
layout(buffer_reference, std430, buffer_reference_align = 4) coherent buffer scratch_f32 { float d[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) coherent buffer scratch_v4 { vec4 d[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) coherent buffer scratch_u32 { uint d[]; };
layout(buffer_reference, std430, buffer_reference_align = 8) buffer u2_buf { uvec2 d[]; };  // 4 16-bit values
layout(constant_id = 1) const uint HD = 64;          // head_dim: a multiple of 8, 4 * WG / HD keys divide CK
layout(constant_id = 2) const uint CK = 64;          // keys a pass (WG / CK head groups score them)
layout(constant_id = 3) const uint K_DT = 1;         // cache dtypes: F16 or BF16
layout(constant_id = 4) const uint V_DT = 1;
layout(constant_id = 5) const uint G = 7;            // query heads per KV head (n_heads / n_kv_heads), <= WG / SL
layout(constant_id = 6) const uint MAX_CHUNKS = 64;  // chunks per KV head, at most
layout(constant_id = 7) const uint MB = 8;           // chunks a merge loads in one round trip
// PIPE: a chunk of several passes loads pass p + 1's K and V while pass p scores and accumulates.
layout(constant_id = 8) const bool PIPE = false;

layout(push_constant) uniform params {
  uvec2 q, k, v, o, globals, scratch;
  uint n_heads, n_kv_heads, head_dim, kv_start, kv_len, causal, q_pos, slots;
  float scale;
} pc;

const uint WG = gl_WorkGroupSize.x;
const uint HG = WG / CK;                // head groups of the score phase
const uint HPT = (G + HG - 1u) / HG;    // query heads a score invocation takes
const uint U8 = HD / 8u;                // 16-byte units of a K row
const uint DU = HD / 4u;                // 4-dim units of a V row: the V phase's lanes per key group
const uint KG = WG / DU;                // key groups of the V phase
const uint VPT = CK / KG;               // keys a V invocation takes a pass
const uint SL = 16u;                    // softmax lanes per head (G * SL <= WG)
const uint H4 = HD / 4u;
const uint NOUT = (G * H4 + WG - 1u) / WG;  // 4-dim outputs an invocation sums (and merges)

shared vec4 qs[G * H4];                 // the group's query rows, pre-scaled
shared float ps[G * CK];                // a pass's scores, then its probabilities
shared float red[G * SL];               // the softmax lanes' partial max, then partial sum
shared float alpha_sh[G], m_sh[G], l_sh[G];
shared vec4 part[KG * G * H4];          // the key groups' sums, merged once at the end
shared float cw[MAX_CHUNKS * G];        // the last workgroup's merge weights exp(m_c - M) / L
shared float cl[MAX_CHUNKS * G];
shared bool is_last;

void pass_loads(u2_buf vb, u4_buf kb, uint base, uint c1, uint ldkv, uint kv_off, uint kg, uint du, uint kj,
                out uvec2 vw[VPT], out uvec4 kw[U8]) {
  uint cnt = min(CK, c1 - base);
  [[unroll]] for (uint i = 0u; i < VPT; ++i) {
    uint jv = base + min(kg + i * KG, cnt - 1u);
    vw[i] = vb.d[((jv * ldkv + kv_off) >> 2) + du];
  }
  uint krow = ((base + min(kj, cnt - 1u)) * ldkv + kv_off) >> 3;
  [[unroll]] for (uint i = 0u; i < U8; ++i) kw[i] = kb.d[krow + i];
}

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

  uint gpos = globals_buf(pc.globals).pos;
  // The query rows load while the position is in flight (their address does not depend on it).
  v4_buf qb = v4_buf(pc.q);
  for (uint i = tid; i < G * H4; i += WG) qs[i] = qb.d[kvh * G * H4 + i] * pc.scale;
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

  uint c0 = start + chunk * clen, c1 = min(c0 + clen, end);
  u4_buf kb = u4_buf(pc.k);
  u2_buf vb = u2_buf(pc.v);
  // Score phase: key kj of the pass, heads hg * HPT ...; V phase: dims 4 * du .. +3 of keys kg + KG * i.
  uint kj = tid % CK, hg = tid / CK;
  uint du = tid % DU, kg = tid / DU;
  // Softmax phase: head sg_h, lane sl (keys sl, sl + SL, ...).
  uint sg_h = tid / SL, sl = tid % SL;
  bool soft = sg_h < G;
  float m_run = NEG_INF, l_run = 0.0;  // the softmax lanes' running max and sum of their head
  vec4 acc[G];
  [[unroll]] for (uint g = 0u; g < G; ++g) acc[g] = vec4(0.0);
  barrier();  // qs

  // A pass's loads: this invocation's V (they fly during the scores and the softmax), then its K row
  // (the pass's last key where past the end: valid, masked below).
  uvec2 vw[VPT], vn[VPT];
  uvec4 kw[U8], kn[U8];
  if (PIPE) pass_loads(vb, kb, c0, c1, ldkv, kv_off, kg, du, kj, vn, kn);
  for (uint base = c0; base < c1; base += CK) {
    uint cnt = min(CK, c1 - base);
    if (PIPE) {
      [[unroll]] for (uint i = 0u; i < VPT; ++i) vw[i] = vn[i];
      [[unroll]] for (uint i = 0u; i < U8; ++i) kw[i] = kn[i];
      if (base + CK < c1) pass_loads(vb, kb, base + CK, c1, ldkv, kv_off, kg, du, kj, vn, kn);
    } else {
      pass_loads(vb, kb, base, c1, ldkv, kv_off, kg, du, kj, vw, kw);
    }
    float s[HPT];
    [[unroll]] for (uint h = 0u; h < HPT; ++h) s[h] = 0.0;
    [[unroll]] for (uint i = 0u; i < U8; ++i) {
      vec4 a = unpack8_lo(kw[i], K_DT), b = unpack8_hi(kw[i], K_DT);
      [[unroll]] for (uint h = 0u; h < HPT; ++h) {
        uint g = min(hg * HPT + h, G - 1u);
        s[h] += dot(qs[g * H4 + 2u * i], a) + dot(qs[g * H4 + 2u * i + 1u], b);
      }
    }
    [[unroll]] for (uint h = 0u; h < HPT; ++h) {
      uint g = hg * HPT + h;
      if (g < G) ps[g * CK + kj] = kj < cnt ? s[h] : NEG_INF;
    }
    barrier();
    // Softmax, 16 lanes a head: the pass's max, then the probabilities and their sum.
    float mx = NEG_INF;
    if (soft) {
      for (uint jj = sl; jj < cnt; jj += SL) mx = max(mx, ps[sg_h * CK + jj]);
      red[sg_h * SL + sl] = mx;
    }
    barrier();
    float m_new = NEG_INF;
    if (soft) {
      [[unroll]] for (uint r = 0u; r < SL; ++r) m_new = max(m_new, red[sg_h * SL + r]);
      m_new = max(m_new, m_run);  // finite: the pass has at least one key
    }
    barrier();  // every lane has read the maxima before they become sums
    if (soft) {
      float sum = 0.0;
      for (uint jj = sl; jj < CK; jj += SL) {
        float p = jj < cnt ? exp(ps[sg_h * CK + jj] - m_new) : 0.0;
        ps[sg_h * CK + jj] = p;
        sum += p;
      }
      red[sg_h * SL + sl] = sum;
      if (sl == 0u) alpha_sh[sg_h] = exp(m_run - m_new);
    }
    barrier();
    if (soft) {
      float ls = 0.0;
      [[unroll]] for (uint r = 0u; r < SL; ++r) ls += red[sg_h * SL + r];
      l_run = l_run * exp(m_run - m_new) + ls;
      m_run = m_new;
    }
    // P . V for this invocation's dims and keys (p is 0 past cnt).
    [[unroll]] for (uint g = 0u; g < G; ++g) acc[g] *= alpha_sh[g];
    [[unroll]] for (uint i = 0u; i < VPT; ++i) {
      vec4 v = unpack8_lo(uvec4(vw[i], 0u, 0u), V_DT);
      uint t = kg + i * KG;
      [[unroll]] for (uint g = 0u; g < G; ++g) acc[g] += ps[g * CK + t] * v;
    }
    barrier();  // ps, red and alpha_sh are rewritten by the next pass
  }

  // The key groups' sums, once through shared memory; each output (a 4-dim unit of a head) sums KG.
  [[unroll]] for (uint g = 0u; g < G; ++g) part[(kg * G + g) * H4 + du] = acc[g];
  if (soft && sl == 0u) {
    m_sh[sg_h] = m_run;
    l_sh[sg_h] = l_run;
  }
  barrier();
  vec4 outv[NOUT];
  [[unroll]] for (uint r = 0u; r < NOUT; ++r) {
    uint i = tid + r * WG;
    outv[r] = vec4(0.0);
    if (i < G * H4)
      [[unroll]] for (uint w = 0u; w < KG; ++w) outv[r] += part[w * G * H4 + i];
  }
  v4_buf ov = v4_buf(pc.o);

  if (n_active == 1u) {  // one chunk holds every key: the output directly
    [[unroll]] for (uint r = 0u; r < NOUT; ++r) {
      uint i = tid + r * WG;
      if (i >= G * H4) continue;
      float lg = l_sh[i / H4];
      ov.d[kvh * G * H4 + i] = lg > 0.0 ? outv[r] / lg : vec4(0.0);
    }
    return;
  }

  scratch_u32 counters = scratch_u32(pc.scratch);
  scratch_f32 sc = scratch_f32(pc.scratch);
  // The counters take nkv floats rounded up to 4, and MAX_CHUNKS is even (the planner's rule), so acc
  // starts on a 16-byte boundary.
  uint ml_base = (nkv + 3u) & ~3u;                   // m [nkv][G][MAX_CHUNKS], then l
  uint l_base = ml_base + nkv * G * MAX_CHUNKS;
  uint acc_base = l_base + nkv * G * MAX_CHUNKS;     // acc [nkv][MAX_CHUNKS][G][HD]
  scratch_v4 sv = scratch_v4(pc.scratch);
  uint acc4 = acc_base / 4u;
  [[unroll]] for (uint r = 0u; r < NOUT; ++r) {
    uint i = tid + r * WG;
    if (i < G * H4) sv.d[acc4 + (kvh * MAX_CHUNKS + chunk) * G * H4 + i] = outv[r];
  }
  if (tid < G) {
    sc.d[ml_base + (kvh * G + tid) * MAX_CHUNKS + chunk] = m_sh[tid];
    sc.d[l_base + (kvh * G + tid) * MAX_CHUNKS + chunk] = l_sh[tid];
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

  if (NOUT == 1u) {
    // One output an invocation (G x HD <= 4 x WG: the 0.5B's shape): each merges its chunks in
    // registers, a batch's m, l and partial sums loaded together (one round trip per 8 chunks) with an
    // online rescale between batches; no shared memory, no barrier. On the H200 this took 0.5B Q8_0
    // decode from 1051 to 1091 tok/s at a 512-token prompt and gained 0.8-3% at 1k-16k keys; with two
    // outputs an invocation (1.5B, 7B) it lost at long contexts or at 7B
    // (benchmarks/results/2026-11-29-h200-qkv, calls 3 and 4), so they take the merge below.
    uint i = tid;
    if (i >= G * H4) return;
    uint mrow = (kvh * G + i / H4) * MAX_CHUNKS;
    uint a0 = acc4 + kvh * MAX_CHUNKS * G * H4 + i;
    float M = NEG_INF, L = 0.0;
    vec4 a = vec4(0.0);
    for (uint c0 = 0u; c0 < n_active; c0 += MB) {
      float mm[MB], ll[MB];
      vec4 x[MB];
      [[unroll]] for (uint e = 0u; e < MB; ++e) {
        uint c = min(c0 + e, n_active - 1u);
        mm[e] = sc.d[ml_base + mrow + c];
        ll[e] = sc.d[l_base + mrow + c];
        x[e] = sv.d[a0 + c * G * H4];
      }
      float bm = M;
      [[unroll]] for (uint e = 0u; e < MB; ++e) if (c0 + e < n_active) bm = max(bm, mm[e]);
      float rs = exp(M - bm);  // 0 on the first batch (M = -inf; bm is finite: every chunk holds a key)
      a *= rs;
      L *= rs;
      [[unroll]] for (uint e = 0u; e < MB; ++e) {
        float w = c0 + e < n_active ? exp(mm[e] - bm) : 0.0;
        a += w * x[e];
        L += w * ll[e];
      }
      M = bm;
    }
    ov.d[kvh * G * H4 + i] = L > 0.0 ? a / L : vec4(0.0);
    return;
  }

  // Every (chunk, head) pair's m and l load at once, one invocation each.
  for (uint i = tid; i < n_active * G; i += WG) {
    uint c = i / G, g = i % G;
    cw[c * G + g] = sc.d[ml_base + (kvh * G + g) * MAX_CHUNKS + c];
    cl[c * G + g] = sc.d[l_base + (kvh * G + g) * MAX_CHUNKS + c];
  }
  barrier();
  // Each head's weights exp(m_c - M) / L, its 16 softmax lanes taking the chunks sl, sl + SL, ...
  float M = NEG_INF;
  if (soft) {
    for (uint c = sl; c < n_active; c += SL) M = max(M, cw[c * G + sg_h]);
    red[sg_h * SL + sl] = M;
  }
  barrier();
  if (soft) [[unroll]] for (uint r = 0u; r < SL; ++r) M = max(M, red[sg_h * SL + r]);
  barrier();  // the maxima are read before they become sums
  if (soft) {
    float L = 0.0;
    for (uint c = sl; c < n_active; c += SL) L += cl[c * G + sg_h] * exp(cw[c * G + sg_h] - M);
    red[sg_h * SL + sl] = L;
  }
  barrier();
  if (soft) {
    float L = 0.0;
    [[unroll]] for (uint r = 0u; r < SL; ++r) L += red[sg_h * SL + r];
    float inv = L > 0.0 ? 1.0 / L : 0.0;
    for (uint c = sl; c < n_active; c += SL) cw[c * G + sg_h] = exp(cw[c * G + sg_h] - M) * inv;
  }
  barrier();
  // Each 4-dim output sums its chunks' partials, MB 16-byte loads in flight at a time.
  for (uint i = tid; i < G * H4; i += WG) {
    uint g = i / H4;
    uint a0 = acc4 + kvh * MAX_CHUNKS * G * H4 + i;
    vec4 a = vec4(0.0);
    uint c = 0u;
    for (; c + MB <= n_active; c += MB) {
      vec4 x[MB];
      [[unroll]] for (uint e = 0u; e < MB; ++e) x[e] = sv.d[a0 + (c + e) * G * H4];
      [[unroll]] for (uint e = 0u; e < MB; ++e) a += cw[(c + e) * G + g] * x[e];
    }
    for (; c < n_active; ++c) a += cw[c * G + g] * sv.d[a0 + c * G * H4];
    ov.d[kvh * G * H4 + i] = a;
  }
}
