// See memory.hpp. Budget accounting counts buddy blocks (what a request really occupies), not requests.
#include "memory.hpp"

#include <algorithm>
#include <bit>

#include "octo/error.hpp"

namespace octo::vm::vulkan {
namespace {

std::string mib(std::uint64_t bytes) {
  return std::to_string(bytes) + " bytes (" + std::to_string((bytes + (1 << 19)) >> 20) + " MiB)";
}

std::uint32_t find_type(const vk::PhysicalDeviceMemoryProperties& mp, std::uint32_t bits, memory_class cls) {
  using F = vk::MemoryPropertyFlagBits;
  std::vector<vk::MemoryPropertyFlags> prefs;
  if (cls == memory_class::device_local)
    prefs = {F::eDeviceLocal, vk::MemoryPropertyFlags{}};
  else if (cls == memory_class::host_visible)  // small, read and written by the host: BAR memory first
    prefs = {F::eHostVisible | F::eHostCoherent | F::eDeviceLocal, F::eHostVisible | F::eHostCoherent};
  else  // staging: plain (cached when possible) host memory, so large uploads never eat the BAR heap
    prefs = {F::eHostVisible | F::eHostCoherent | F::eHostCached, F::eHostVisible | F::eHostCoherent};
  for (auto want : prefs)
    for (std::uint32_t i = 0; i < mp.memoryTypeCount; ++i)
      if ((bits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & want) == want) return i;
  throw octo::error("octo: the device has no suitable memory type");
}

}  // namespace

device_memory::device_memory(const device& dev, std::uint64_t budget, std::uint64_t block_size)
    : dev_(dev), budget_(budget), block_size_(block_size) {
  if (budget_ == 0) {
    std::uint64_t largest = 0;
    const auto& mp = dev.memory_properties();
    for (std::uint32_t i = 0; i < mp.memoryHeapCount; ++i)
      if (mp.memoryHeaps[i].flags & vk::MemoryHeapFlagBits::eDeviceLocal)
        largest = std::max<std::uint64_t>(largest, mp.memoryHeaps[i].size);
    budget_ = largest / 10 * 9;
  }
  if (block_size_ == 0) block_size_ = std::uint64_t{256} << 20;
  std::uint64_t cap = dev.max_allocation_size() ? dev.max_allocation_size() : block_size_;
  block_size_ = std::bit_floor(std::min(block_size_, cap));
}

device_memory::~device_memory() {
  for (auto& b : blocks_)
    if (b && b->mapped) b->memory.unmapMemory();
}

void device_memory::back(block& b, std::uint64_t bytes, std::span<const std::uint32_t> families, bool indirect) const {
  std::vector<std::uint32_t> unique(families.begin(), families.end());
  std::sort(unique.begin(), unique.end());
  unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
  const auto& d = dev_.logical();
  using U = vk::BufferUsageFlagBits;
  vk::BufferUsageFlags usage = U::eStorageBuffer | U::eShaderDeviceAddress | U::eTransferSrc | U::eTransferDst;
  if (indirect) usage |= U::eIndirectBuffer;
  vk::BufferCreateInfo bci({}, bytes, usage,
                           unique.size() > 1 ? vk::SharingMode::eConcurrent : vk::SharingMode::eExclusive);
  if (unique.size() > 1) bci.setQueueFamilyIndices(unique);
  b.buffer = vk::raii::Buffer(d, bci);
  auto req = b.buffer.getMemoryRequirements();
  vk::StructureChain<vk::MemoryAllocateInfo, vk::MemoryAllocateFlagsInfo> mai(
      vk::MemoryAllocateInfo(req.size, find_type(dev_.memory_properties(), req.memoryTypeBits, b.cls)),
      vk::MemoryAllocateFlagsInfo(vk::MemoryAllocateFlagBits::eDeviceAddress));
  b.memory = vk::raii::DeviceMemory(d, mai.get<vk::MemoryAllocateInfo>());
  b.buffer.bindMemory(*b.memory, 0);
  b.address = d.getBufferAddress(vk::BufferDeviceAddressInfo(*b.buffer));
  if (b.cls != memory_class::device_local) b.mapped = static_cast<std::byte*>(b.memory.mapMemory(0, VK_WHOLE_SIZE));
}

device_memory::block& device_memory::new_block(std::string_view name, std::uint64_t size, memory_class cls) {
  std::uint64_t bytes = std::max(block_size_, std::bit_ceil(size));
  // Small host-visible pools: one full block each would waste budget on metrics-sized data.
  if (cls != memory_class::device_local) bytes = std::max<std::uint64_t>(std::bit_ceil(size), std::uint64_t{16} << 20);
  if (dev_.max_allocation_size() && bytes > dev_.max_allocation_size())
    throw octo::error("octo: '" + std::string(name) + "' needs " + mib(size) +
                      ", more than the device's largest allocation (" + mib(dev_.max_allocation_size()) + ")");
  auto b = std::make_unique<block>();
  b->cls = cls;
  try {
    back(*b, bytes, {}, true);
  } catch (const vk::SystemError& e) {
    throw octo::error("octo: out of device memory allocating a " + mib(bytes) + " block for '" + std::string(name) +
                      "' (" + e.code().message() + ")");
  }
  b->buddy = std::make_unique<octo::detail::buddy_allocator>(bytes, 256);
  blocks_.push_back(std::move(b));
  return *blocks_.back();
}

allocation device_memory::allocate(std::string_view name, std::uint64_t size, memory_class cls,
                                   std::uint64_t alignment) {
  if (size == 0) size = 4;
  alignment = std::max<std::uint64_t>(alignment, 256);
  // Large buffers (weight matrices, embeddings, streaming regions) get their own exactly sized memory:
  // the buddy blocks would round them up to a power of two, up to twice the bytes (a 1.02 GiB
  // embedding took a 2 GiB block and 2 GiB of the budget).
  // Rounded to the alignment: callers fill and copy whole 4-byte words of what they get.
  if (size > block_size_ / 4 && alignment <= 256) return allocate_dedicated(name, (size + 255) / 256 * 256, cls, {});
  std::uint64_t need = std::bit_ceil(std::max(size, alignment));
  const bool counted = cls == memory_class::device_local || cls == memory_class::host_visible;  // device memory's
  if (counted && in_use_ + need > budget_)
    throw octo::error("octo: device memory budget exceeded: '" + std::string(name) + "' needs " + mib(size) +
                      " with " + mib(in_use_) + " of the " + mib(budget_) + " budget in use");
  block* chosen = nullptr;
  std::uint32_t index = 0;
  std::optional<std::uint64_t> offset;
  for (std::uint32_t i = 0; i < blocks_.size() && !offset; ++i)
    if (blocks_[i] && blocks_[i]->buddy && blocks_[i]->cls == cls) {
      offset = blocks_[i]->buddy->allocate(size, alignment);
      if (offset) {
        chosen = blocks_[i].get();
        index = i;
      }
    }
  if (!offset) {
    chosen = &new_block(name, need, cls);
    index = static_cast<std::uint32_t>(blocks_.size() - 1);
    offset = chosen->buddy->allocate(size, alignment);
    if (!offset) throw octo::error("octo: internal: a fresh memory block refused '" + std::string(name) + "'");
  }
  if (counted) in_use_ += chosen->buddy->allocated_block(*offset);
  allocation a;
  a.block = index;
  a.offset = *offset;
  a.size = size;
  a.address = chosen->address + *offset;
  a.buffer = *chosen->buffer;
  a.mapped = chosen->mapped ? chosen->mapped + *offset : nullptr;
  return a;
}

void device_memory::free(const allocation& a) {
  if (!a || a.block >= blocks_.size() || !blocks_[a.block]) return;
  auto& b = *blocks_[a.block];
  if (!b.buddy) return free_dedicated(a);
  if (b.cls == memory_class::device_local || b.cls == memory_class::host_visible)
    in_use_ -= b.buddy->allocated_block(a.offset);
  b.buddy->free(a.offset);
}

memory_statistics device_memory::stats() const {
  memory_statistics s;
  s.budget = budget_;
  s.in_use = in_use_;
  std::uint64_t free_total = 0;
  for (const auto& b : blocks_) {
    if (!b) continue;
    if (!b->buddy) {
      s.block_bytes += b->dedicated_bytes;
      ++s.blocks;
      continue;
    }
    auto bs = b->buddy->stats();
    s.block_bytes += bs.capacity;
    ++s.blocks;
    s.largest_free = std::max(s.largest_free, bs.largest_free);
    s.allocations += bs.allocations;
    free_total += bs.free;
  }
  s.fragmentation = free_total == 0 ? 0.0 : 1.0 - static_cast<double>(s.largest_free) / static_cast<double>(free_total);
  return s;
}

}  // namespace octo::vm::vulkan

namespace octo::vm::vulkan {

allocation device_memory::allocate_dedicated(std::string_view name, std::uint64_t size, memory_class cls,
                                             std::span<const std::uint32_t> families) {
  if (size == 0) throw octo::error("octo: '" + std::string(name) + "' needs at least one byte");
  const bool counted = cls == memory_class::device_local || cls == memory_class::host_visible;
  if (counted && in_use_ + size > budget_)
    throw octo::error("octo: device memory budget exceeded: '" + std::string(name) + "' needs " + mib(size) +
                      " with " + mib(in_use_) + " of the " + mib(budget_) + " budget in use");
  if (dev_.max_allocation_size() && size > dev_.max_allocation_size())
    throw octo::error("octo: '" + std::string(name) + "' needs " + mib(size) +
                      ", more than the device's largest allocation (" + mib(dev_.max_allocation_size()) + ")");
  auto b = std::make_unique<block>();
  b->cls = cls;
  b->dedicated_bytes = size;
  try {
    back(*b, size, families, false);
  } catch (const vk::SystemError& e) {
    throw octo::error("octo: out of memory allocating " + mib(size) + " for '" + std::string(name) + "' (" +
                      e.code().message() + ")");
  }
  if (counted) in_use_ += size;
  allocation a;
  a.block = static_cast<std::uint32_t>(blocks_.size());
  a.offset = 0;
  a.size = size;
  a.address = b->address;
  a.buffer = *b->buffer;
  a.mapped = b->mapped;
  blocks_.push_back(std::move(b));
  return a;
}

void device_memory::free_dedicated(const allocation& a) {
  if (!a || a.block >= blocks_.size() || !blocks_[a.block] || blocks_[a.block]->buddy) return;
  auto& b = *blocks_[a.block];
  if (b.cls == memory_class::device_local || b.cls == memory_class::host_visible) in_use_ -= b.dedicated_bytes;
  if (b.mapped) b.memory.unmapMemory();
  blocks_[a.block].reset();  // slots are never reused
}

}  // namespace octo::vm::vulkan
