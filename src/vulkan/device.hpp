// The Vulkan device octo runs on: instance (with validation layers on request), the chosen physical
// device, a logical device with compute (+ transfer) queues, and the facts kernels are planned against.
#pragma once

#include <atomic>
#include <memory>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernel_registry.hpp"
#include "vk.hpp"

namespace octo::vm::vulkan {

/// One physical device as the listing shows it.
struct device_entry {
  std::uint32_t index = 0;
  std::string name;
  std::string type;  // discrete, integrated, virtual, cpu, other
  std::uint32_t api_version = 0;
  std::uint32_t driver_version = 0;
  std::uint64_t device_local_bytes = 0;  // the largest DEVICE_LOCAL heap
  bool suitable = false;                 // Vulkan >= 1.2 with buffer device address
  std::string why_not;                   // when not suitable
};

struct device_options {
  std::string selector;  // index or name substring; empty: OCTO_DEVICE, then the best device
  bool validation = false;
};

class device {
 public:
  explicit device(const device_options& options);
  device(const device&) = delete;
  device& operator=(const device&) = delete;

  /// All physical devices (opens its own instance).
  static std::vector<device_entry> enumerate();

  const vk::raii::Device& logical() const { return device_; }
  const vk::raii::PhysicalDevice& physical() const { return physical_; }
  const vk::raii::Queue& compute_queue() const { return compute_queue_; }
  std::uint32_t compute_family() const { return compute_family_; }
  std::optional<std::uint32_t> transfer_family() const { return transfer_family_; }
  /// The transfer-only queue; only valid when transfer_family() has a value.
  const vk::raii::Queue& transfer_queue() const { return transfer_queue_; }
  /// A second queue of the compute family, at the lowest priority, where the family has one (nullptr
  /// else): the keep-awake work's (vm_keep_awake.cpp), never the VM's own.
  const vk::raii::Queue* spare_compute_queue() const { return *spare_compute_queue_ ? &spare_compute_queue_ : nullptr; }
  const device_facts& facts() const { return facts_; }
  /// What the VM measured on the device after opening it (device_facts::coop_mma_layout).
  void set_coop_mma_layout(bool known, std::uint32_t factor_order) {
    facts_.coop_mma_layout = known;
    facts_.coop_factor_order = factor_order;
  }
  /// The probe's elements where they are not the mma order (vulkan_device_facts::cooperative_matrix_layout).
  void set_coop_layout_found(std::string text) { coop_layout_found_ = std::move(text); }
  const std::string& coop_layout_found() const { return coop_layout_found_; }
  const vk::PhysicalDeviceProperties& properties() const { return properties_; }
  const vk::PhysicalDeviceMemoryProperties& memory_properties() const { return memory_; }
  std::uint64_t max_allocation_size() const { return max_allocation_size_; }
  bool timeline_semaphores() const { return timeline_; }
  /// OCTO_PIPELINE_STATS=1 on a device with VK_KHR_pipeline_executable_properties: every pipeline is
  /// built capturing the driver's statistics (registers, ...), which pipelines.cpp prints.
  bool pipeline_statistics() const { return pipeline_statistics_; }
  const device_entry& entry() const { return entry_; }
  std::uint64_t validation_messages() const { return validation_messages_->load(); }

 private:
  std::string coop_layout_found_;
  std::unique_ptr<vk::raii::Context> context_;  // first: everything below is destroyed before it
  vk::raii::Instance instance_{nullptr};
  vk::raii::DebugUtilsMessengerEXT messenger_{nullptr};
  vk::raii::PhysicalDevice physical_{nullptr};
  vk::raii::Device device_{nullptr};
  vk::raii::Queue compute_queue_{nullptr};
  std::uint32_t compute_family_ = 0;
  std::optional<std::uint32_t> transfer_family_;
  vk::raii::Queue transfer_queue_{nullptr};
  vk::raii::Queue spare_compute_queue_{nullptr};
  device_facts facts_;
  vk::PhysicalDeviceProperties properties_;
  vk::PhysicalDeviceMemoryProperties memory_;
  std::uint64_t max_allocation_size_ = 0;
  bool timeline_ = false;
  bool pipeline_statistics_ = false;
  device_entry entry_;
  // Heap-allocated so the debug callback's pointer stays valid however `device` is held.
  std::unique_ptr<std::atomic<std::uint64_t>> validation_messages_ = std::make_unique<std::atomic<std::uint64_t>>(0);
};

/// Runs `f`, turning Vulkan-Hpp's exceptions into one-line octo::errors that say what was being done.
[[noreturn]] void rethrow_vulkan(const char* doing);

}  // namespace octo::vm::vulkan
