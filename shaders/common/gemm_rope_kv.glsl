// The RoPE / KV epilogue of the tiled GEMM kernels (shaders/gemm_coop.comp, gemm_reg.comp; their EPI 5
// and 6): RMSNORM_GEMV_ROPE and RMSNORM_GEMV_KV over many rows, a prefill's q, k and v projections with
// their RoPE and cache write in one task. Included after the kernel's push block, whose fields it reads:
// rope = head_dim | n_rot << 16, style = rope_style | y dtype << 8 | kv << 16, kv_pos, log2_theta, the
// positions (I32, one per x row) in the residual field. n_rot = 0: no rotation (v).
//
// A lane's 4 consecutive tile columns nb .. nb + 3 (nb % 4 == 0) must be whole rotation pairs, so the
// tile's columns are a permutation of the weight's rows (rope_kv_col): in a NeoX head's rotated
// dimensions, columns q .. q + 3 are outputs i, i + n_rot/2, i + 1, i + 1 + n_rot/2 for i = q / 2; the
// interleaved style's pairs (2i, 2i + 1) and the dimensions past n_rot are in place. Each lane then
// rotates its two pairs and writes its outputs; a 16-bit cache gets two whole words (i, i + 1) and
// (i + half, i + half + 1), which needs head_dim and n_rot multiples of 4 (src/vulkan/kernels/gemv.cpp,
// gemm_rope_kv_fits). The arithmetic is gemv.comp's fused epilogue and rope.comp's: bias at the output
// column, then the rotation in f32.
#ifndef OCTO_GEMM_ROPE_KV_GLSL
#define OCTO_GEMM_ROPE_KV_GLSL
#include "rope.glsl"

const bool ROPE_KV = EPI == 5u || EPI == 6u;

// The output column (and weight row), relative to n_off, of tile column n.
uint rope_kv_col(uint n) {
  uint hd = pc.rope & 0xffffu, n_rot = pc.rope >> 16;
  uint q = n % hd;
  if (q >= n_rot || (pc.style & 0xffu) != 0u) return n;
  return n - q + 2u * (q >> 2) + ((q >> 1) & 1u) + (q & 1u) * (n_rot >> 1);
}

// Tile columns nb .. nb + 3 of x row `row` (row0 + m), their sums v (the norm applied): bias, rotation,
// store (into y's row, or the cache's row kv_pos + globals.pos + row).
void rope_kv_store(uint row, uint nb, vec4 v) {
  uint hd = pc.rope & 0xffffu, n_rot = pc.rope >> 16;
  uint q = nb % hd, head0 = nb - q;
  bool neox = (pc.style & 0xffu) == 0u, rot = q < n_rot;
  uvec4 col = uvec4(nb, nb + 1u, nb + 2u, nb + 3u);
  if (rot && neox) {
    uint i = head0 + (q >> 1), half_rot = n_rot >> 1;
    col = uvec4(i, i + half_rot, i + 1u, i + 1u + half_rot);
  }
  if (pc.has_bias != 0u)
    [[unroll]] for (uint c = 0u; c < 4u; ++c) v[c] += load_elem(pc.bias, pc.n_off + col[c], pc.bias_dtype);
  if (rot) {  // pairs (v.x, v.y) and (v.z, v.w): pair indices q / 2 and q / 2 + 1 of the head
    float p = float(i32_buf(pc.residual).d[row]);
    vec2 a = rope_cos_sin(p, q >> 1, n_rot, pc.log2_theta), b = rope_cos_sin(p, (q >> 1) + 1u, n_rot, pc.log2_theta);
    v = vec4(v.x * a.x - v.y * a.y, v.x * a.y + v.y * a.x, v.z * b.x - v.w * b.y, v.z * b.y + v.w * b.x);
  }
  uint ydt = (pc.style >> 8) & 0xffu;
  uint base = ((pc.style >> 16) != 0u ? pc.kv_pos + globals_buf(pc.globals).pos + row : row) * pc.ldy + pc.n_off;
  if (ydt == DT_F32) {
    [[unroll]] for (uint c = 0u; c < 4u; ++c) f32_buf(pc.y).d[base + col[c]] = v[c];
    return;
  }
  // Words of two adjacent outputs: NeoX's rotated (col.x, col.z) and (col.y, col.w), else in order.
  u32_buf w = u32_buf(pc.y);
  if (rot && neox) {
    w.d[(base + col.x) >> 1] = encode_elem(v.x, ydt) | (encode_elem(v.z, ydt) << 16);
    w.d[(base + col.y) >> 1] = encode_elem(v.y, ydt) | (encode_elem(v.w, ydt) << 16);
  } else {
    w.d[(base + col.x) >> 1] = encode_elem(v.x, ydt) | (encode_elem(v.y, ydt) << 16);
    w.d[(base + col.z) >> 1] = encode_elem(v.z, ydt) | (encode_elem(v.w, ydt) << 16);
  }
}

#endif
