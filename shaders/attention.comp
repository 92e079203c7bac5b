#version 450
// ATTENTION_TILE: one workgroup per (query row t, head h); GQA head h reads kv head h / (n_heads /
// n_kv_heads). Keys j in [kv_start, kv_start + kv_len + globals.pos), and with causal also
// j <= q_pos + globals.pos + t. Online softmax over chunks of WG keys: each invocation scores one key of
// the chunk, then every invocation updates the output dims it owns with the chunk's probabilities.
// partial = 1 writes (normalised o, m, l) per (t, h) for ATTENTION_COMBINE (split-K decode).
#include "common/octo.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint HD_MAX = 128;  // >= head_dim
#include "common/reduce.glsl"

layout(push_constant) uniform params {
  uvec2 q, k, v, o, globals;
  uint T, n_heads, n_kv_heads, head_dim, kv_start, kv_len, causal, q_pos, partial, k_dtype, v_dtype, slots;
  float scale;
} pc;

const uint DPT = (HD_MAX + gl_WorkGroupSize.x - 1u) / gl_WorkGroupSize.x;  // output dims per invocation
shared float qs[HD_MAX];
shared float pj[gl_WorkGroupSize.x];

float kv_at(uvec2 addr, uint i, uint dt) {
  if (dt == DT_F32) return f32_buf(addr).d[i];
  return load_elem(addr, i, dt);
}

void main() {
  const uint WG = gl_WorkGroupSize.x;
  uint th = octo_group_linear();
  if (th >= pc.T * pc.n_heads) return;
  uint tid = gl_LocalInvocationID.x;
  uint t = th / pc.n_heads, h = th % pc.n_heads;
  uint hd = pc.head_dim;
  uint kvh = h / (pc.n_heads / pc.n_kv_heads);
  uint ldkv = pc.n_kv_heads * hd;
  uint kv_off = kvh * hd;
  globals_buf g = globals_buf(pc.globals);

  f32_buf qb = f32_buf(pc.q);
  for (uint d = tid; d < hd; d += WG) qs[d] = qb.d[t * pc.n_heads * hd + h * hd + d];
  barrier();

  uint start = pc.kv_start;
  uint end = pc.kv_start + pc.kv_len + g.pos;
  if (pc.causal != 0u) end = min(end, pc.q_pos + g.pos + t + 1u);
  end = min(end, pc.slots);  // never read past the cache, whatever globals.pos says

  const float NEG_INF = uintBitsToFloat(0xff800000u);
  float m = NEG_INF, l = 0.0;
  float acc[DPT];
  [[unroll]] for (uint i = 0u; i < DPT; ++i) acc[i] = 0.0;

  for (uint j0 = start; j0 < end; j0 += WG) {
    uint j = j0 + tid;
    float s = NEG_INF;
    if (j < end) {
      float dotv = 0.0;
      uint kb = j * ldkv + kv_off;
      for (uint d = 0u; d < hd; ++d) dotv += qs[d] * kv_at(pc.k, kb + d, pc.k_dtype);
      s = dotv * pc.scale;
    }
    float m_new = max(m, wg_max(s));  // finite: the chunk has at least one key
    float alpha = exp(m - m_new);
    float p = j < end ? exp(s - m_new) : 0.0;
    pj[tid] = p;
    l = l * alpha + wg_sum(p);  // wg_sum's barrier also publishes pj
    m = m_new;
    uint cnt = min(WG, end - j0);
    [[unroll]] for (uint i = 0u; i < DPT; ++i) {
      uint d = tid + i * WG;
      if (d < hd) {
        float a = acc[i] * alpha;
        for (uint jj = 0u; jj < cnt; ++jj) a += pj[jj] * kv_at(pc.v, (j0 + jj) * ldkv + kv_off + d, pc.v_dtype);
        acc[i] = a;
      }
    }
    barrier();  // pj is rewritten by the next chunk
  }

  f32_buf ob = f32_buf(pc.o);
  float inv_l = l > 0.0 ? 1.0 / l : 0.0;
  uint obase = pc.partial != 0u ? th * (hd + 2u) : t * pc.n_heads * hd + h * hd;
  [[unroll]] for (uint i = 0u; i < DPT; ++i) {
    uint d = tid + i * WG;
    if (d < hd) ob.d[obase + d] = acc[i] * inv_l;
  }
  if (pc.partial != 0u && tid == 0u) {
    ob.d[obase + hd] = m;
    ob.d[obase + hd + 1u] = l;
  }
}
