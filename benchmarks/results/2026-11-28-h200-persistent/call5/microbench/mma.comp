#version 450
// How fast NV cooperative matrices multiply on this device, apart from any kernel around them: each
// subgroup holds FM x FN f32 accumulators of 16 x 8 and runs ITER steps of FM x FN products
// 16x16 (f16) * 16x8 (f16). MODE 0: the factors stay in registers (the tensor cores' own rate);
// MODE 1: each step loads its FM A and FN B fragments from shared memory first (a GEMM's inner loop
// without the global loads and barriers), with the row stride SK uvec4s (a padded stride like gemm_coop's).
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference_uvec2 : require
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint MODE = 0u;
layout(constant_id = 1) const uint FM = 4u;
layout(constant_id = 2) const uint FN = 4u;
layout(constant_id = 3) const uint SK = 5u;
layout(buffer_reference, std430, buffer_reference_align = 4) buffer fbuf { float d[]; };
layout(push_constant) uniform params { uvec2 out_; uint iters; } pc;
shared uvec4 sa[128u * 9u];  // a 128 x 128 tile's x and W parts, as 2 x 4 subgroups of 64 x 32 read them
shared uvec4 sb[128u * 9u];
shared float st[8u * 128u];
void main() {
  uint tid = gl_LocalInvocationID.x, sg = tid / 32u;
  for (uint i = tid; i < 128u * 9u; i += 256u) {
    sa[i] = uvec4(packHalf2x16(vec2(float(i % 7u) * 0.01, 0.02)));
    sb[i] = uvec4(packHalf2x16(vec2(float(i % 5u) * 0.01, 0.03)));
  }
  barrier();
  fcoopmatNV<32, gl_ScopeSubgroup, 16, 8> acc[FM * FN];
  for (uint i = 0u; i < FM * FN; ++i) acc[i] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 8>(0.0);
  fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a[FM];
  fcoopmatNV<16, gl_ScopeSubgroup, 16, 8> b[FN];
  uint abase = (sg % 2u) * 64u * SK, bbase = (sg / 2u) * 32u * SK;
  for (uint i = 0u; i < FM; ++i) coopMatLoadNV(a[i], sa, abase + 16u * i * SK, SK, false);
  for (uint j = 0u; j < FN; ++j) coopMatLoadNV(b[j], sb, bbase + 8u * j * SK, SK, true);
  for (uint it = 0u; it < pc.iters; ++it) {
    if (MODE == 1u) {
      uint kk = (it & 1u) * 2u;
      [[unroll]] for (uint i = 0u; i < FM; ++i) coopMatLoadNV(a[i], sa, abase + 16u * i * SK + kk, SK, false);
      [[unroll]] for (uint j = 0u; j < FN; ++j) coopMatLoadNV(b[j], sb, bbase + 8u * j * SK + kk, SK, true);
    }
    [[unroll]] for (uint j = 0u; j < FN; ++j)
      [[unroll]] for (uint i = 0u; i < FM; ++i) acc[i * FN + j] = coopMatMulAddNV(a[i], b[j], acc[i * FN + j]);
  }
  fcoopmatNV<32, gl_ScopeSubgroup, 16, 8> s = acc[0];
  for (uint i = 1u; i < FM * FN; ++i) s = s + acc[i];
  coopMatStoreNV(s, st, sg * 128u, 8u, false);
  barrier();
  if (tid == 0u) fbuf(pc.out_).d[gl_WorkGroupID.x] = st[5];
}
