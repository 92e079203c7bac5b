// Shared by the VM's own kernels (shaders/vm_*.comp): buffer-reference types for the push-constant
// addresses. Push-constant convention: 64-bit addresses first, then 32-bit scalars.
#extension GL_EXT_buffer_reference : require

layout(buffer_reference, std430, buffer_reference_align = 4) buffer vm_f32 { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer vm_u32 { uint v[]; };
// The globals record (globals_buf) and the dtype codes: from octo.glsl, like every kernel.
#include "octo.glsl"

layout(local_size_x_id = 0) in;
