#version 460
// Keeps the GPU awake while the host loads a model (vulkan_vm::keep_awake, docs/vulkan.md "Keeping the
// clock up while loading"): one workgroup runs a chain of dependent multiply-adds `iterations` long,
// then stores its result only if it is NaN (never: the store keeps the loop from being removed). It
// reads nothing and writes nothing any other kernel reads; it runs on a queue of its own.
#include "common/vm_common.glsl"

layout(push_constant) uniform push_t {
  f32_buf sink;
  uint iterations;
} pc;

void main() {
  float v = float(gl_LocalInvocationID.x);
  for (uint i = 0u; i < pc.iterations; ++i) v = fma(v, 0.999999, 1e-6);
  if (isnan(v)) pc.sink.d[gl_LocalInvocationID.x] = v;
}
