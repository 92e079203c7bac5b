// Device memory: large VkDeviceMemory blocks per memory type, each spanned by one buffer with a device
// address and carved up by a buddy allocator; a budget turns an over-budget request into an error.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "device.hpp"
#include "octo/detail/buddy_allocator.hpp"

namespace octo::vm::vulkan {

enum class memory_class : std::uint8_t {
  device_local,  // kernels' data; the host reaches it through staging copies
  host_visible,  // mapped and coherent, device-local (BAR) memory first: globals record, metrics, control
  staging,       // mapped host memory (cached if possible) for transfers; not counted in the budget
  readback,      // like staging, for small IO_OUTPUT buffers kernels write and the host reads (cached reads)
};

/// A piece of a block. `address` is the device address of its first byte.
struct allocation {
  std::uint32_t block = 0;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  std::uint64_t address = 0;
  vk::Buffer buffer;        // the block's buffer (for copies); offset is within it
  std::byte* mapped = nullptr;  // host pointer, host_visible only
  explicit operator bool() const { return size != 0; }
};

struct memory_statistics {
  std::uint64_t budget = 0;
  std::uint64_t in_use = 0;          // bytes in allocated buddy blocks
  std::uint64_t block_bytes = 0;     // bytes of VkDeviceMemory held
  std::uint32_t blocks = 0;          // vkAllocateMemory calls alive
  std::uint64_t largest_free = 0;    // in any block
  double fragmentation = 0.0;        // of the free space in all blocks
  std::uint64_t allocations = 0;
};

class device_memory {
 public:
  /// budget 0: 90% of the largest device-local heap; block_size 0: 256 MiB (clamped to the device).
  device_memory(const device& dev, std::uint64_t budget, std::uint64_t block_size);
  ~device_memory();
  device_memory(const device_memory&) = delete;
  device_memory& operator=(const device_memory&) = delete;

  /// Throws octo::error naming `name`, its size and the budget when the budget or the device refuses.
  allocation allocate(std::string_view name, std::uint64_t size, memory_class cls, std::uint64_t alignment = 256);
  void free(const allocation& a);
  /// A VkDeviceMemory block of its own (regions, pinned host memory): exactly `size` bytes, never shared
  /// with other allocations; with two or more distinct `families` its buffer is shared concurrently
  /// between them (compute and transfer queues, no ownership transfers). Freed with free_dedicated.
  allocation allocate_dedicated(std::string_view name, std::uint64_t size, memory_class cls,
                                std::span<const std::uint32_t> families);
  void free_dedicated(const allocation& a);
  memory_statistics stats() const;

 private:
  struct block {
    memory_class cls;
    vk::raii::DeviceMemory memory{nullptr};
    vk::raii::Buffer buffer{nullptr};
    std::uint64_t address = 0;
    std::byte* mapped = nullptr;
    std::unique_ptr<octo::detail::buddy_allocator> buddy;  // null for a dedicated block
    std::uint64_t dedicated_bytes = 0;
  };
  block& new_block(std::string_view name, std::uint64_t size, memory_class cls);
  /// Gives `b` (its class set) a buffer of `bytes` bound to memory of its own, its device address and,
  /// unless device-local, a mapping; shared CONCURRENT between `families` when they are several.
  /// `indirect`: also usable as an indirect dispatch's arguments (pool blocks; dedicated allocations,
  /// the large weights, keep the usage they were measured with).
  /// Throws vk::SystemError (the callers name what was being allocated).
  void back(block& b, std::uint64_t bytes, std::span<const std::uint32_t> families, bool indirect) const;

  const device& dev_;
  std::uint64_t budget_;
  std::uint64_t block_size_;
  std::uint64_t in_use_ = 0;
  std::vector<std::unique_ptr<block>> blocks_;  // slots are never reused, so allocation::block stays valid
};

}  // namespace octo::vm::vulkan
