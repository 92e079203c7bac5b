// Shared by the VM's own kernels (shaders/vm_*.comp). The buffer-reference types of their push-constant
// addresses (f32_buf, u32_buf), the globals record (globals_buf) and the dtype codes come from octo.glsl,
// like every kernel's. Push-constant convention: 64-bit addresses first, then 32-bit scalars.
#include "octo.glsl"

layout(local_size_x_id = 0) in;
