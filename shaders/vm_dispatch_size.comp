#version 460
// The workgroup counts of a program's indirect launches (kernel_registry.hpp, indirect_groups), computed
// from the globals record at the start of each run of its command buffer: one invocation per launch
// reads its rule and writes its VkDispatchIndirectCommand {x, y, z}. The same arithmetic as
// indirect_groups::groups_at on the host, without 64-bit integers (the clamp to limit comes before the
// division, so nothing overflows).
#include "common/vm_common.glsl"

layout(push_constant) uniform push_t {
  vm_u32 rules;  // 12 uints per launch: add (int), limit, div, min, max, mul, tokens, y, z, 3 unused
  vm_u32 args;   // 3 uints per launch
  vm_globals globals;
  uint count;
} pc;

uint sat_add(uint a, uint b) { return a + b < a ? 0xffffffffu : a + b; }

void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i >= pc.count) return;
  uint r = i * 12u;
  int add = int(pc.rules.v[r]);
  uint limit = pc.rules.v[r + 1u], div = pc.rules.v[r + 2u];
  uint lo = pc.rules.v[r + 3u], hi = pc.rules.v[r + 4u], mul = pc.rules.v[r + 5u];
  uint base = pc.globals.pos;
  if (pc.rules.v[r + 6u] != 0u) base = sat_add(base, pc.globals.n_tokens);
  // n = clamp(base + add, 0, limit).
  uint n = add >= 0 ? min(sat_add(base, uint(add)), limit) : (base > uint(-add) ? min(base - uint(-add), limit) : 0u);
  uint g = n / div + (n % div != 0u ? 1u : 0u);
  g = clamp(g, lo, hi);
  pc.args.v[i * 3u] = g * mul;
  pc.args.v[i * 3u + 1u] = pc.rules.v[r + 7u];
  pc.args.v[i * 3u + 2u] = pc.rules.v[r + 8u];
}
