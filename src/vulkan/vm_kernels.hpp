// The VM's own kernels (shaders/vm_*.comp): the regulator and message passing between chained instances.
// Every opcode's kernel is planned by src/vulkan/kernels/ (kernel_for).
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernel_registry.hpp"

namespace octo::vm::vulkan {

kernel_launch plan_vm_regulator(std::uint64_t outbox, std::uint64_t metrics, std::uint64_t control, std::uint32_t n,
                                std::uint32_t instance, std::uint32_t n_instances, bool regulate, float target_norm,
                                const device_facts& d);
kernel_launch plan_vm_message(std::uint64_t outbox, std::uint64_t inbox, std::uint64_t control, std::uint32_t n,
                              std::uint32_t receiver);

}  // namespace octo::vm::vulkan
