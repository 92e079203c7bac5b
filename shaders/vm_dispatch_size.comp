#version 460
// The workgroup counts of a program's indirect launches (kernel_registry.hpp, indirect_groups), computed
// from the globals record at the start of each run of its command buffer: one invocation per launch
// reads its rule and writes its VkDispatchIndirectCommand {x, y, z}. A gated launch (control words,
// vm_kernels.hpp dispatch_gate) gets x = 0 unless its layer's skip word and its instance's precision_mode
// word let it run. The same arithmetic as
// indirect_groups::groups_at on the host, without 64-bit integers (the clamp to limit comes before the
// division, so nothing overflows).
#include "common/vm_common.glsl"

layout(push_constant) uniform push_t {
  u32_buf rules;  // 16 uints per launch: add (int), limit, div, min, max, mul, tokens, y, z, 1 + layer (0: no
                  // layer gate), runs while skipped, precision gate (0 either, 1 fast, 2 accurate) | instance << 8,
                  // n_min, n_max (runs only while n_min <= n <= n_max), 1 unused
  u32_buf args;   // 3 uints per launch
  globals_buf globals;
  f32_buf control;        // 4 floats per instance: scale_factor, eviction_priority, precision_mode, active
  u32_buf layer_control;  // one word per layer: 0 active, 1 skipped
  uint count;
} pc;

uint sat_add(uint a, uint b) { return a + b < a ? 0xffffffffu : a + b; }

void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i >= pc.count) return;
  uint r = i * 16u;
  int add = int(pc.rules.d[r]);
  uint limit = pc.rules.d[r + 1u], div = pc.rules.d[r + 2u];
  uint lo = pc.rules.d[r + 3u], hi = pc.rules.d[r + 4u], mul = pc.rules.d[r + 5u];
  uint base = pc.globals.pos;
  if (pc.rules.d[r + 6u] != 0u) base = sat_add(base, pc.globals.n_tokens);
  // n = clamp(base + add, 0, limit).
  uint n = add >= 0 ? min(sat_add(base, uint(add)), limit) : (base > uint(-add) ? min(base - uint(-add), limit) : 0u);
  uint g = n / div + (n % div != 0u ? 1u : 0u);
  g = clamp(g, lo, hi);
  if (n < pc.rules.d[r + 12u] || n > pc.rules.d[r + 13u]) g = 0u;
  uint layer = pc.rules.d[r + 9u];
  if (layer != 0u && (pc.layer_control.d[layer - 1u] != 0u) != (pc.rules.d[r + 10u] != 0u)) g = 0u;
  uint prec = pc.rules.d[r + 11u];
  if ((prec & 0xffu) != 0u) {
    bool accurate = pc.control.d[(prec >> 8) * 4u + 2u] != 0.0;  // precision_mode: 0 fast, 1 accurate
    if (accurate != ((prec & 0xffu) == 2u)) g = 0u;
  }
  pc.args.d[i * 3u] = g * mul;
  pc.args.d[i * 3u + 1u] = pc.rules.d[r + 7u];
  pc.args.d[i * 3u + 2u] = pc.rules.d[r + 8u];
}
