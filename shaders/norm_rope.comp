#version 450
// RMSNORM_ROPE / RMSNORM_ROPE_KV (Qwen3's q and k after their projections): per head, the RMSNORM over
// head_dim, then RoPE, written to y or (KV) into the cache row kv_pos + globals.pos + t in the cache's
// dtype (a 16-bit row written a word at a time from shared memory). One workgroup per (row t, head); an invocation owns whole pairs (rotate-half: j and j + n_rot/2,
// interleaved: 2i and 2i+1; dims >= n_rot pass through in pairs).
#include "common/octo.glsl"
layout(local_size_x_id = 0) in;  // before reduce.glsl: its shared array is sized by the workgroup
#include "common/reduce.glsl"
#include "common/rope.glsl"

layout(push_constant) uniform params {
  uvec2 x, nw, pos, y, globals;
  uint rows, heads, head_dim, n_rot, style, y_dtype, kv, kv_pos, nw_dtype;
  float eps, log2_theta;
} pc;

// A 16-bit cache row goes through shared memory so that each invocation writes whole words (two
// halves) instead of the per-element atomics a word shared by two invocations would need.
const uint MAX_HD = 512u;  // plan_norm_rope refuses larger heads
shared float row_out[MAX_HD];

void main() {
  uint th = octo_group_linear();  // t * heads + head
  if (th >= pc.rows * pc.heads) return;
  uint t = th / pc.heads, head = th - t * pc.heads;
  uint hd = pc.head_dim, half_rot = pc.n_rot / 2u;
  uint base = th * hd;
  f32_buf x = f32_buf(pc.x);
  float ss = 0.0;
  for (uint d = gl_LocalInvocationID.x; d < hd; d += gl_WorkGroupSize.x) ss += x.d[base + d] * x.d[base + d];
  float inv = 1.0 / sqrt(wg_sum(ss) / float(hd) + pc.eps);
  uint out_base = pc.kv != 0u ? (pc.kv_pos + globals_buf(pc.globals).pos + t) * pc.heads * hd + head * hd : base;
  float p = float(i32_buf(pc.pos).d[t]);
  for (uint i = gl_LocalInvocationID.x; i < hd / 2u; i += gl_WorkGroupSize.x) {
    bool rotated = i < half_rot;
    uint a = rotated ? (pc.style == 0u ? i : 2u * i) : pc.n_rot + 2u * (i - half_rot);
    uint b = rotated ? (pc.style == 0u ? i + half_rot : 2u * i + 1u) : a + 1u;
    float va = x.d[base + a] * inv * load_elem(pc.nw, a, pc.nw_dtype);
    float vb = x.d[base + b] * inv * load_elem(pc.nw, b, pc.nw_dtype);
    if (rotated) {
      vec2 cs = rope_cos_sin(p, i, pc.n_rot, pc.log2_theta);
      float ra = va * cs.x - vb * cs.y, rb = va * cs.y + vb * cs.x;
      va = ra;
      vb = rb;
    }
    if (pc.y_dtype == DT_F32) {
      f32_buf(pc.y).d[out_base + a] = va;
      f32_buf(pc.y).d[out_base + b] = vb;
    } else {
      row_out[a] = va;
      row_out[b] = vb;
    }
  }
  if (pc.y_dtype == DT_F32) return;  // uniform: no barrier is skipped by part of the workgroup
  barrier();
  u32_buf w = u32_buf(pc.y);
  for (uint i = gl_LocalInvocationID.x; i < hd / 2u; i += gl_WorkGroupSize.x)
    w.d[(out_base >> 1) + i] = encode_elem(row_out[2u * i], pc.y_dtype) | (encode_elem(row_out[2u * i + 1u], pc.y_dtype) << 16);
}
