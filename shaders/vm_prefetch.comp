#version 460
// Weight bytes pulled into the GPU's L2 cache ahead of the kernel that reads them (OCTO_L2_PREFETCH,
// src/vulkan/vm_recording.cpp): recorded beside a wavefront whose own kernels leave most of the GPU idle
// (decode attention), so that the next wavefront's GEMV finds its rows in L2 instead of waiting on HBM.
// The loads' values only feed a sum that is written to `sink` when it equals `never` (a value the
// recorder picks and no one reads), so the compiler keeps every load. Grid-stride over 16-byte units,
// four loads in flight an invocation.
#include "common/vm_common.glsl"

layout(push_constant) uniform push_t {
  u4_buf src;
  u32_buf sink;
  uint n;      // 16-byte units
  uint never;
} pc;

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  uvec4 acc = uvec4(0u);
  uint i = gl_GlobalInvocationID.x;
  for (; i + 3u * stride < pc.n; i += 4u * stride) {
    uvec4 a = pc.src.d[i], b = pc.src.d[i + stride], c = pc.src.d[i + 2u * stride], d = pc.src.d[i + 3u * stride];
    acc += (a ^ b) + (c ^ d);
  }
  for (; i < pc.n; i += stride) acc += pc.src.d[i];
  uint h = acc.x ^ acc.y ^ acc.z ^ acc.w;
  if (h == pc.never) pc.sink.d[0] = h;
}
