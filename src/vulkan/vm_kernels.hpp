// The VM's own kernels (shaders/vm_*.comp): the regulator and message passing between instances, plus
// f32 COPY / ADD / GEMV_TILE planners used for an opcode only when src/vulkan/kernels/ has no planner.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernel_registry.hpp"

namespace octo::vm::vulkan {

/// std430 push constants: 64-bit addresses first (8-byte aligned), then 32-bit scalars.
class push_packer {
 public:
  push_packer& addr(std::uint64_t a) { return put(&a, 8, 8); }
  push_packer& u32(std::uint32_t v) { return put(&v, 4, 4); }
  push_packer& f32(float v) { return put(&v, 4, 4); }
  std::vector<std::byte> take() { return std::move(bytes_); }

 private:
  push_packer& put(const void* p, std::size_t n, std::size_t align) {
    while (bytes_.size() % align) bytes_.push_back(std::byte{0});
    const auto* b = static_cast<const std::byte*>(p);
    bytes_.insert(bytes_.end(), b, b + n);
    return *this;
  }
  std::vector<std::byte> bytes_;
};

/// The VM's fallback planner for `op` (COPY, ADD, GEMV_TILE in f32), or nullptr.
kernel_planner find_vm_planner(ir::opcode op);

kernel_launch plan_vm_regulator(std::uint64_t outbox, std::uint64_t metrics, std::uint64_t control, std::uint32_t n,
                                std::uint32_t instance, std::uint32_t n_instances, bool regulate, float target_norm,
                                const device_facts& d);
kernel_launch plan_vm_message(std::uint64_t outbox, std::uint64_t inbox, std::uint64_t control, std::uint32_t n,
                              std::uint32_t receiver);

}  // namespace octo::vm::vulkan
