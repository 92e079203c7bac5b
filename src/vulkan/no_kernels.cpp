// Built only while src/vulkan/kernels/ defines no find_planner (see CMakeLists.txt): no opcode has a
// kernel yet, so the VM uses its own vm_* kernels or refuses the program naming the opcode.
#include "kernel_registry.hpp"

namespace octo::vm::vulkan {
kernel_planner find_planner(ir::opcode) { return nullptr; }
}  // namespace octo::vm::vulkan
