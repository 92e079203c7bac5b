#version 450
// ATTENTION_TILE for one decode row (T = 1, partial = 0) as flash-decoding in one dispatch: one
// workgroup per (KV head, chunk of keys) serves every query head of its GQA group, so each K and V row
// is read once per step. Same semantics as attention.comp: keys j in [kv_start, kv_start + kv_len +
// globals.pos), with causal also j <= q_pos + globals.pos, never past the cache's slots.
//
// The chunk length comes from the keys actually visible this step (globals.pos): max(min_chunk,
// ceil(n_keys / MAX_CHUNKS)) rounded up to 32, so a short context uses few workgroups and the rest of
// the grid exits at once. Inside a workgroup each subgroup takes every NSG-th block of GSIZE keys: a
// lane scores one key against the group's G query heads (its K row read once), the subgroup updates G
// online softmaxes, then the lanes split head_dim (strided, so a V row is one coalesced read) and
// accumulate p_gj v_j for every g. The subgroups merge through shared memory.
//
// Chunks merge without a second dispatch: a workgroup writes its (acc, m, l) to the scratch buffer,
// then increments its KV head's arrival counter; the one that arrives last (it never waits on the
// others, so no forward-progress assumption) merges every chunk of that head, writes the output and
// puts the counter back to 0 for the next step. A step whose keys fit one chunk skips the scratch.
//
// Scratch layout (floats after `counters`): [n_kv_heads] uint counters, m [n_kv][G][MAX_CHUNKS],
// l [n_kv][G][MAX_CHUNKS], acc [n_kv][MAX_CHUNKS][G][head_dim]; the VM zero-fills it once.
#include "common/octo.glsl"
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_shuffle : require
layout(local_size_x_id = 0) in;
layout(buffer_reference, std430, buffer_reference_align = 4) coherent buffer scratch_f32 { float d[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) coherent buffer scratch_u32 { uint d[]; };
layout(constant_id = 1) const uint HD_MAX = 128;     // >= head_dim, a multiple of 32
layout(constant_id = 2) const uint LANES_MIN = 32;   // the subgroup size the planner assumed
layout(constant_id = 3) const uint K_DT = 0;         // cache dtypes (F32, F16, BF16, Q8_0)
layout(constant_id = 4) const uint V_DT = 0;
layout(constant_id = 5) const bool VEC_K = false;    // K rows load as 16-byte units (F32/F16/BF16)
layout(constant_id = 6) const uint G = 7;            // query heads per KV head (n_heads / n_kv_heads)
layout(constant_id = 7) const uint MAX_CHUNKS = 64;  // chunks per KV head, at most
// V rows load as 16-byte units (F32/F16/BF16, aligned, head_dim / dims-per-unit a power of two <= the
// subgroup): a lane takes one unit of every (GSIZE / units)-th key, so one load instruction of the
// subgroup reads several whole rows; the lanes holding the same unit sum up at the end (shuffles).
layout(constant_id = 8) const bool VEC_V = false;

layout(push_constant) uniform params {
  uvec2 q, k, v, o, globals, scratch;
  uint n_heads, n_kv_heads, head_dim, kv_start, kv_len, causal, q_pos, slots, min_chunk;
  float scale;
} pc;

const uint WG = gl_WorkGroupSize.x;
const uint H4 = HD_MAX / 4u;
const uint DPL = HD_MAX / LANES_MIN;  // output dims per lane (strided by the subgroup size)
const uint EPL = V_DT == DT_F32 ? 4u : 8u;  // VEC_V: dims per 16-byte unit
const uint AW = VEC_V ? EPL : DPL;          // accumulators per lane and query head
const uint NSG = WG / LANES_MIN;

shared vec4 qs[G * H4];          // the group's query rows, pre-scaled, zero past head_dim
shared float pj[WG * G];         // a block's probabilities: [subgroup][lane][g]
shared float sg_m[NSG * G], sg_l[NSG * G];
shared float gacc[G * HD_MAX];   // the chunk's accumulator, merged over subgroups
shared float cw[MAX_CHUNKS * G]; // the last workgroup's merge weights exp(m_c - M) / L
shared bool is_last;

// The G scores q_g . k_j of one K row starting at element e. Loops run to compile-time bounds (HD_MAX,
// G) with a guard, so they unroll and s[] stays in registers.
void k_scores(uint e, inout float s[G]) {
  uint hd = pc.head_dim;
  [[unroll]] for (uint g = 0u; g < G; ++g) s[g] = 0.0;
  if (VEC_K && K_DT == DT_F32) {
    v4_buf kb = v4_buf(pc.k);
    uint b = e >> 2;
    [[unroll]] for (uint i = 0u; i < H4; ++i) {
      if (i >= (hd >> 2)) break;
      vec4 kv = kb.d[b + i];
      [[unroll]] for (uint g = 0u; g < G; ++g) s[g] += dot(qs[g * H4 + i], kv);
    }
  } else if (VEC_K) {
    u4_buf kb = u4_buf(pc.k);
    uint b = e >> 3;
    [[unroll]] for (uint i = 0u; i < HD_MAX / 8u; ++i) {
      if (i >= (hd >> 3)) break;
      uvec4 w = kb.d[b + i];
      vec4 lo, hi;
      if (K_DT == DT_BF16) {
        lo = vec4(uintBitsToFloat(w.x << 16), uintBitsToFloat(w.x & 0xffff0000u), uintBitsToFloat(w.y << 16),
                  uintBitsToFloat(w.y & 0xffff0000u));
        hi = vec4(uintBitsToFloat(w.z << 16), uintBitsToFloat(w.z & 0xffff0000u), uintBitsToFloat(w.w << 16),
                  uintBitsToFloat(w.w & 0xffff0000u));
      } else {
        lo = vec4(unpackHalf2x16(w.x), unpackHalf2x16(w.y));
        hi = vec4(unpackHalf2x16(w.z), unpackHalf2x16(w.w));
      }
      [[unroll]] for (uint g = 0u; g < G; ++g) s[g] += dot(qs[g * H4 + 2u * i], lo) + dot(qs[g * H4 + 2u * i + 1u], hi);
    }
  } else {
    for (uint d = 0u; d < hd; ++d) {
      float kx = load_elem(pc.k, e + d, K_DT);
      [[unroll]] for (uint g = 0u; g < G; ++g) s[g] += qs[g * H4 + (d >> 2)][d & 3u] * kx;
    }
  }
}

void main() {
  uint wg_id = octo_group_linear();
  uint nkv = pc.n_kv_heads;
  if (wg_id >= nkv * MAX_CHUNKS) return;
  uint kvh = wg_id % nkv, chunk = wg_id / nkv;
  uint tid = gl_LocalInvocationID.x;
  uint hd = pc.head_dim;
  uint ldkv = nkv * hd;
  uint kv_off = kvh * hd;
  const float NEG_INF = uintBitsToFloat(0xff800000u);
  f32_buf ob = f32_buf(pc.o);

  uint gpos = globals_buf(pc.globals).pos;
  uint start = pc.kv_start;
  uint end = pc.kv_start + pc.kv_len + gpos;
  if (pc.causal != 0u) end = min(end, pc.q_pos + gpos + 1u);
  end = min(end, pc.slots);  // never read past the cache, whatever globals.pos says
  uint n_keys = end > start ? end - start : 0u;
  uint clen = max(pc.min_chunk, (n_keys + MAX_CHUNKS - 1u) / MAX_CHUNKS);
  clen = (clen + 31u) & ~31u;
  uint n_active = (n_keys + clen - 1u) / clen;
  if (n_keys == 0u) {  // no visible key: the output is 0 (written by the first chunk's workgroup)
    if (chunk == 0u)
      for (uint i = tid; i < G * hd; i += WG) ob.d[kvh * G * hd + i] = 0.0;
    return;
  }
  if (chunk >= n_active) return;

  // A device whose subgroups are smaller than the planner assumed would overflow the per-lane
  // accumulators: write NaN (visible) instead of a wrong number.
  if (gl_SubgroupSize < LANES_MIN || gl_SubgroupSize * gl_NumSubgroups > WG) {
    if (chunk == 0u)
      for (uint i = tid; i < G * hd; i += WG) ob.d[kvh * G * hd + i] = uintBitsToFloat(0x7fc00000u);
    return;
  }

  f32_buf qb = f32_buf(pc.q);
  for (uint i = tid; i < G * HD_MAX; i += WG) {
    uint g = i / HD_MAX, d = i % HD_MAX;
    qs[g * H4 + (d >> 2)][d & 3u] = (g < G && d < hd) ? qb.d[(kvh * G + g) * hd + d] * pc.scale : 0.0;
  }
  barrier();

  uint GS = gl_SubgroupSize, lane = gl_SubgroupInvocationID, sg = gl_SubgroupID, nsg = gl_NumSubgroups;
  uint c0 = start + chunk * clen, c1 = min(c0 + clen, end);
  float m[G], l[G];
  float acc[G][AW];
  // VEC_V: lane = kp * U + u holds unit u (dims u * EPL ..) of keys kp, kp + KP, ...; else dims lane + i * GS.
  uint U = hd / EPL, KP = VEC_V ? GS / U : 1u, kp = VEC_V ? lane / U : 0u, u = VEC_V ? lane % U : 0u;
  [[unroll]] for (uint g = 0u; g < G; ++g) {
    m[g] = NEG_INF;
    l[g] = 0.0;
    [[unroll]] for (uint i = 0u; i < AW; ++i) acc[g][i] = 0.0;
  }
  uint pbase = sg * GS * G;
  for (uint j0 = c0 + sg * GS; j0 < c1; j0 += nsg * GS) {
    uint cnt = min(GS, c1 - j0);
    float s[G];
    if (lane < cnt) k_scores((j0 + lane) * ldkv + kv_off, s);
    [[unroll]] for (uint g = 0u; g < G; ++g) {
      float sv = lane < cnt ? s[g] : NEG_INF;
      float m_new = max(m[g], subgroupMax(sv));  // finite: the block has at least one key
      float alpha = exp(m[g] - m_new);
      float p = lane < cnt ? exp(sv - m_new) : 0.0;
      l[g] = l[g] * alpha + subgroupAdd(p);
      m[g] = m_new;
      pj[pbase + lane * G + g] = p;
      [[unroll]] for (uint i = 0u; i < AW; ++i) acc[g][i] *= alpha;
    }
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    uint e0 = j0 * ldkv + kv_off;
    if (VEC_V) {
      // Four of the lane's keys per step, their 16-byte loads in flight together; past the block's end p
      // is 0 and the row is the block's last (a valid address, already in cache).
      for (uint jj = kp; jj < cnt; jj += 4u * KP) {
        float vx[4][EPL];
        [[unroll]] for (uint k = 0u; k < 4u; ++k) {
          uint e = e0 + min(jj + k * KP, cnt - 1u) * ldkv + u * EPL;
          if (V_DT == DT_F32) {
            vec4 w = v4_buf(pc.v).d[e >> 2];
            [[unroll]] for (uint c = 0u; c < EPL; ++c) vx[k][c] = w[c & 3u];
          } else {
            uvec4 w = u4_buf(pc.v).d[e >> 3];
            [[unroll]] for (uint c = 0u; c < EPL; c += 2u) {
              uint word = w[(c >> 1) & 3u];
              vec2 f = V_DT == DT_BF16 ? vec2(uintBitsToFloat(word << 16), uintBitsToFloat(word & 0xffff0000u))
                                       : unpackHalf2x16(word);
              vx[k][c] = f.x;
              vx[k][(c + 1u) % EPL] = f.y;
            }
          }
        }
        [[unroll]] for (uint k = 0u; k < 4u; ++k) {
          uint r = jj + k * KP;
          bool live = r < cnt;
          [[unroll]] for (uint g = 0u; g < G; ++g) {
            float p = live ? pj[pbase + r * G + g] : 0.0;
            [[unroll]] for (uint c = 0u; c < AW; ++c) acc[g][c] += p * vx[k][c % EPL];
          }
        }
      }
      subgroupMemoryBarrierShared();
      subgroupBarrier();  // pj is rewritten by the next block
      continue;
    }
    // Four keys per step, their V loads in flight together; past the block's end p is 0 and the row is
    // the block's last (a valid address, already in cache).
    for (uint jj = 0u; jj < cnt; jj += 4u) {
      float vx[4][AW];
      [[unroll]] for (uint k = 0u; k < 4u; ++k) {
        uint e = e0 + min(jj + k, cnt - 1u) * ldkv;
        [[unroll]] for (uint i = 0u; i < AW; ++i) {
          uint d = lane + i * GS;
          vx[k][i] = d < hd ? load_elem(pc.v, e + d, V_DT) : 0.0;
        }
      }
      [[unroll]] for (uint k = 0u; k < 4u; ++k) {
        bool live = jj + k < cnt;
        [[unroll]] for (uint g = 0u; g < G; ++g) {
          float p = live ? pj[pbase + (jj + k) * G + g] : 0.0;
          [[unroll]] for (uint i = 0u; i < AW; ++i) acc[g][i] += p * vx[k][i];
        }
      }
    }
    subgroupMemoryBarrierShared();
    subgroupBarrier();  // pj is rewritten by the next block
  }

  // VEC_V: the lanes holding the same unit (lane % U) sum their keys' shares; lanes kp = 0 hold the sums.
  if (VEC_V)
    for (uint off = U; off < GS; off <<= 1)
      [[unroll]] for (uint g = 0u; g < G; ++g)
        [[unroll]] for (uint i = 0u; i < AW; ++i) acc[g][i] += subgroupShuffleXor(acc[g][i], off);

  // Merge the subgroups: M = max m_s, L = sum l_s exp(m_s - M), acc = sum exp(m_s - M) acc_s, one
  // subgroup at a time into gacc (a subgroup that saw no key has l = 0 and adds nothing).
  if (lane == 0u)
    [[unroll]] for (uint g = 0u; g < G; ++g) {
      sg_m[sg * G + g] = m[g];
      sg_l[sg * G + g] = l[g];
    }
  barrier();
  float mstar[G], lsum[G];
  [[unroll]] for (uint g = 0u; g < G; ++g) {
    mstar[g] = NEG_INF;
    lsum[g] = 0.0;
    for (uint s2 = 0u; s2 < nsg; ++s2)
      if (sg_l[s2 * G + g] > 0.0) mstar[g] = max(mstar[g], sg_m[s2 * G + g]);
    for (uint s2 = 0u; s2 < nsg; ++s2)
      if (sg_l[s2 * G + g] > 0.0) lsum[g] += sg_l[s2 * G + g] * exp(sg_m[s2 * G + g] - mstar[g]);
  }
  for (uint s2 = 0u; s2 < nsg; ++s2) {
    if (sg == s2)
      [[unroll]] for (uint g = 0u; g < G; ++g) {
        float w = l[g] > 0.0 ? exp(m[g] - mstar[g]) : 0.0;
        [[unroll]] for (uint i = 0u; i < AW; ++i) {
          uint d = VEC_V ? u * EPL + i : lane + i * GS;
          if (d < hd && kp == 0u) gacc[g * HD_MAX + d] = (s2 == 0u ? 0.0 : gacc[g * HD_MAX + d]) + w * acc[g][i];
        }
      }
    barrier();
  }

  if (n_active == 1u) {  // one chunk holds every key: the output directly
    for (uint i = tid; i < G * hd; i += WG) {
      uint g = i / hd, d = i % hd;
      ob.d[(kvh * G + g) * hd + d] = lsum[g] > 0.0 ? gacc[g * HD_MAX + d] / lsum[g] : 0.0;
    }
    return;
  }

  scratch_u32 counters = scratch_u32(pc.scratch);
  scratch_f32 sc = scratch_f32(pc.scratch);
  uint ml_base = nkv;                                // m [nkv][G][MAX_CHUNKS], then l
  uint l_base = ml_base + nkv * G * MAX_CHUNKS;
  uint acc_base = l_base + nkv * G * MAX_CHUNKS;     // acc [nkv][MAX_CHUNKS][G][hd]
  for (uint i = tid; i < G * hd; i += WG) {
    uint g = i / hd, d = i % hd;
    sc.d[acc_base + ((kvh * MAX_CHUNKS + chunk) * G + g) * hd + d] = gacc[g * HD_MAX + d];
  }
  if (tid < G) {
    sc.d[ml_base + (kvh * G + tid) * MAX_CHUNKS + chunk] = mstar[tid];
    sc.d[l_base + (kvh * G + tid) * MAX_CHUNKS + chunk] = lsum[tid];
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

  if (tid < G) {
    uint mb = ml_base + (kvh * G + tid) * MAX_CHUNKS, lb = l_base + (kvh * G + tid) * MAX_CHUNKS;
    float M = NEG_INF;
    for (uint c = 0u; c < n_active; ++c) M = max(M, sc.d[mb + c]);
    float L = 0.0;
    for (uint c = 0u; c < n_active; ++c) {
      float w = exp(sc.d[mb + c] - M);
      cw[c * G + tid] = w;
      L += sc.d[lb + c] * w;
    }
    float inv = L > 0.0 ? 1.0 / L : 0.0;
    for (uint c = 0u; c < n_active; ++c) cw[c * G + tid] *= inv;
  }
  barrier();
  for (uint i = tid; i < G * hd; i += WG) {
    uint g = i / hd, d = i % hd;
    float a = 0.0;
    for (uint c = 0u; c < n_active; ++c) a += cw[c * G + g] * sc.d[acc_base + ((kvh * MAX_CHUNKS + c) * G + g) * hd + d];
    ob.d[(kvh * G + g) * hd + d] = a;
  }
}
