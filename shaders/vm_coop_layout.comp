#version 460
// Which element of a cooperative matrix each invocation holds (GL_NV_cooperative_matrix leaves it to the
// implementation): one subgroup loads a 16 x 8 f32 matrix whose element (r, c) is r * 8 + c and a
// 16 x 16 f16 matrix whose element is r * 16 + c, and writes what each invocation holds, in order:
// out[4 l + i] = element i of invocation l's 16 x 8, out[128 + 8 l + i] of its 16 x 16, then both
// lengths (out[384], out[385]). The VM compares them with the layout of NVIDIA's mma.m16n8k16 fragments
// (vulkan_vm.cpp, probe_coop_layout) before any kernel relies on it (attention_coop.comp's REGS).
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#include "common/vm_common.glsl"

layout(push_constant) uniform push_t {
  f32_buf out_;
} pc;

shared float cs[128];
shared float16_t ah[256];

void main() {
  uint lane = gl_LocalInvocationID.x;
  for (uint i = lane; i < 128u; i += gl_WorkGroupSize.x) cs[i] = float(i);
  for (uint i = lane; i < 256u; i += gl_WorkGroupSize.x) ah[i] = float16_t(float(i));
  barrier();
  fcoopmatNV<32, gl_ScopeSubgroup, 16, 8> c;
  coopMatLoadNV(c, cs, 0u, 8u, false);
  fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a;
  coopMatLoadNV(a, ah, 0u, 16u, false);
  if (lane >= 32u) return;
  for (int i = 0; i < c.length() && i < 4; ++i) pc.out_.d[4u * lane + uint(i)] = c[i];
  for (int i = 0; i < a.length() && i < 8; ++i) pc.out_.d[128u + 8u * lane + uint(i)] = float(a[i]);
  if (lane == 0u) {
    pc.out_.d[384] = float(c.length());
    pc.out_.d[385] = float(a.length());
  }
}
