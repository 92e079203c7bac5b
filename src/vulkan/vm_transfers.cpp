// Transfers: staging copies between host and device memory, and streaming: regions, pinned host memory
// and asynchronous uploads on the transfer queue ordered by timeline semaphores.
#include "vm_impl.hpp"

namespace octo::vm {

using namespace octo::vm::vulkan;

std::byte* vulkan_vm::impl::staging_for(std::uint64_t bytes) {
  bytes = std::min(bytes, staging_chunk);
  if (staging.size < bytes) {
    if (staging) memory->free(staging);
    staging = {};
    staging = memory->allocate("staging", std::max<std::uint64_t>(bytes, 1 << 20), memory_class::staging);
  }
  return staging.mapped;
}

void vulkan_vm::impl::upload(vk::Buffer dst, std::uint64_t dst_offset, const void* src, std::uint64_t bytes) {
  const auto* from = static_cast<const std::byte*>(src);
  for (std::uint64_t done = 0; done < bytes;) {
    std::uint64_t n = std::min(bytes - done, staging_chunk);
    std::memcpy(staging_for(n), from + done, n);
    one_shot(
        [&](const vk::raii::CommandBuffer& cb) {
          cb.copyBuffer(staging.buffer, dst, vk::BufferCopy(staging.offset, dst_offset + done, n));
        },
        "a host-to-device copy");
    done += n;
  }
}

void vulkan_vm::impl::download(vk::Buffer src, std::uint64_t src_offset, void* dst, std::uint64_t bytes) {
  auto* to = static_cast<std::byte*>(dst);
  for (std::uint64_t done = 0; done < bytes;) {
    std::uint64_t n = std::min(bytes - done, staging_chunk);
    staging_for(n);
    one_shot(
        [&](const vk::raii::CommandBuffer& cb) {
          cb.copyBuffer(src, staging.buffer, vk::BufferCopy(src_offset + done, staging.offset, n));
          vk::MemoryBarrier mb(vk::AccessFlagBits::eTransferWrite, vk::AccessFlagBits::eHostRead);
          cb.pipelineBarrier(vk::PipelineStageFlagBits::eTransfer, vk::PipelineStageFlagBits::eHost, {}, mb, {}, {});
        },
        "a device-to-host copy");
    std::memcpy(to + done, staging.mapped, n);
    done += n;
  }
}

std::vector<std::uint32_t> vulkan_vm::impl::sharing_families() const {
  std::vector<std::uint32_t> f{dev->compute_family()};
  if (dev->transfer_family()) f.push_back(*dev->transfer_family());
  return f;
}

void vulkan_vm::impl::create_region(std::string_view name, std::uint64_t bytes) {
  check_usable("create_region");
  if (name.empty()) throw octo::error("octo: create_region: a region needs a name");
  if (bytes == 0) throw octo::error("octo: create_region: region '" + std::string(name) + "' needs at least one byte");
  if (regions.count(name)) throw octo::error("octo: create_region: a region named '" + std::string(name) + "' exists already");
  const auto families = sharing_families();
  region_state r;
  r.bytes = bytes;
  r.a = memory->allocate_dedicated("region " + std::string(name), (bytes + 3) / 4 * 4, memory_class::device_local,
                                   families);
  try {
    one_shot([&](const vk::raii::CommandBuffer& cb) { cb.fillBuffer(r.a.buffer, r.a.offset, r.a.size, 0); },
             "zeroing a region");
  } catch (...) {
    memory->free_dedicated(r.a);
    throw;
  }
  regions.emplace(std::string(name), r);
}

const region_state& vulkan_vm::impl::region(std::string_view name, const char* what) const {
  check_usable(what);
  auto it = regions.find(name);
  if (it == regions.end())
    throw octo::error("octo: vulkan_vm::" + std::string(what) + ": no region named '" + std::string(name) + "'");
  return it->second;
}

vulkan_vm::pinned vulkan_vm::impl::allocate_pinned(std::uint64_t bytes) {
  check_usable("allocate_pinned");
  if (bytes == 0) throw octo::error("octo: allocate_pinned needs at least one byte");
  constexpr std::uint64_t align = 4096;
  pinned_state ps;
  ps.bytes = bytes;
  const auto families = sharing_families();
  ps.a = memory->allocate_dedicated("pinned host memory", bytes + align, memory_class::staging, families);
  if (!ps.a.mapped) {
    memory->free_dedicated(ps.a);
    throw octo::error("octo: allocate_pinned: the memory could not be mapped");
  }
  const auto addr = reinterpret_cast<std::uintptr_t>(ps.a.mapped);
  ps.pad = (align - addr % align) % align;
  const std::uint32_t id = next_pinned++;
  pinned_blocks.emplace(id, ps);
  return {id, ps.a.mapped + ps.pad, bytes};
}

void vulkan_vm::impl::free_pinned(std::uint32_t id) {
  check_usable("free_pinned");
  auto it = pinned_blocks.find(id);
  if (it == pinned_blocks.end()) throw octo::error("octo: free_pinned: no pinned memory with id " + std::to_string(id));
  if (timeline() && transfer_value > 0)
    wait_timeline(transfer_timeline, transfer_value, "the uploads before free_pinned");
  memory->free_dedicated(it->second.a);
  pinned_blocks.erase(it);
}

std::uint64_t vulkan_vm::impl::upload_async(std::uint32_t src, std::uint64_t src_offset, std::string_view region_name,
                                            std::uint64_t dst_offset, std::uint64_t bytes,
                                            std::uint64_t after_compute) {
  need_timeline("upload_async");
  const auto& r = region(region_name, "upload_async");
  auto it = pinned_blocks.find(src);
  if (it == pinned_blocks.end()) throw octo::error("octo: upload_async: no pinned memory with id " + std::to_string(src));
  const auto& pm = it->second;
  if (bytes == 0) throw octo::error("octo: upload_async: nothing to copy (0 bytes)");
  if (src_offset > pm.bytes || bytes > pm.bytes - src_offset)
    throw octo::error("octo: upload_async: " + std::to_string(bytes) + " bytes at offset " + std::to_string(src_offset) +
                      " do not fit pinned memory " + std::to_string(src) + " (" + std::to_string(pm.bytes) + " bytes)");
  if (dst_offset > r.bytes || bytes > r.bytes - dst_offset)
    throw octo::error("octo: upload_async: " + std::to_string(bytes) + " bytes at offset " + std::to_string(dst_offset) +
                      " do not fit region '" + std::string(region_name) + "' (" + std::to_string(r.bytes) + " bytes)");
  if (after_compute > compute_value)
    throw octo::error("octo: upload_async: after_compute " + std::to_string(after_compute) + " but only " +
                      std::to_string(compute_value) + " program runs were submitted");
  // A command buffer whose last upload is done, or a new one.
  const std::uint64_t done = counter(transfer_timeline);
  upload_slot* slot = nullptr;
  for (auto& u : upload_slots)
    if (u.value <= done) {
      slot = &u;
      break;
    }
  const std::uint64_t signal = transfer_value + 1;
  try {
    if (!slot) {
      vk::raii::CommandBuffers cbs(dev->logical(),
                                   vk::CommandBufferAllocateInfo(*upload_pool, vk::CommandBufferLevel::ePrimary, 1));
      upload_slots.push_back({std::move(cbs[0]), 0});
      slot = &upload_slots.back();
    }
    slot->cb.reset();
    slot->cb.begin(vk::CommandBufferBeginInfo(vk::CommandBufferUsageFlagBits::eOneTimeSubmit));
    slot->cb.copyBuffer(pm.a.buffer, r.a.buffer,
                        vk::BufferCopy(pm.a.offset + pm.pad + src_offset, r.a.offset + dst_offset, bytes));
    slot->cb.end();
    const auto& q = dev->transfer_family() ? dev->transfer_queue() : dev->compute_queue();
    const vk::CommandBuffer cb = *slot->cb;
    submit_on_timelines(q, {&cb, 1}, *compute_timeline, after_compute, *transfer_timeline, signal);
  } catch (const vk::DeviceLostError&) {
    lost = true;
    throw octo::error("octo: the Vulkan device was lost submitting an upload");
  } catch (...) {
    rethrow_vulkan("submitting an upload");
  }
  slot->value = signal;
  transfer_value = signal;
  return signal;
}

}  // namespace octo::vm
