// Keeping the clock up while a model loads (docs/vulkan.md "Keeping the clock up while loading"). An
// idle GPU drops its clock within seconds (the H200: 1980 -> 345 MHz), and a model's load is mostly the
// host reading files, so the first pass after it ran at the low clock while the clock ramped back (a 7B's
// 550-token prompt at 2.1k tok/s against 6k+ later: benchmarks/results/2026-11-29-h200-head, call1).
// While held, a thread of the VM keeps one workgroup of vm_keep_awake busy on the device's second compute
// queue (lowest priority), so the clock is up when the first pass comes. It reads and writes nothing any
// program uses and never waits for the VM's own work, nor the VM for it: loading goes on beside it.
#include "vm_impl.hpp"

namespace octo::vm {

using namespace octo::vm::vulkan;

namespace {
// About 2 ms of dependent multiply-adds at the H200's 1980 MHz (12 ms at its idle 345 MHz): short enough
// that stopping waits little, long enough that the thread wakes rarely.
constexpr std::uint32_t kAwakeIterations = 1u << 20;
}  // namespace

bool vulkan_vm::impl::keep_awake(bool on) {
  if (!on) {  // releasing works whatever the device's state: the work stops, quietly
    if (awake_holds > 0 && --awake_holds == 0) stop_awake();
    return awake_thread.joinable();
  }
  check_usable("keep_awake");
  if (awake_holds > 0) {
    ++awake_holds;
    return awake_thread.joinable();
  }
  const char* env = std::getenv("OCTO_KEEP_AWAKE");
  if (env && *env && std::string_view(env) != "0" && std::string_view(env) != "1")
    throw octo::error(std::string("octo: OCTO_KEEP_AWAKE must be 0 or 1, not '") + env + "'");
  awake_holds = 1;
  if ((env && std::string_view(env) == "0") || !dev->spare_compute_queue()) return false;
  try {
    if (!*awake_cb) {
      const auto& d = dev->logical();
      awake_sink = memory->allocate("keep-awake sink", 128, memory_class::device_local);
      awake_pool = vk::raii::CommandPool(d, vk::CommandPoolCreateInfo({}, dev->compute_family()));
      vk::raii::CommandBuffers cbs(d, vk::CommandBufferAllocateInfo(*awake_pool, vk::CommandBufferLevel::ePrimary, 1));
      awake_cb = std::move(cbs[0]);
      awake_cb.begin(vk::CommandBufferBeginInfo());
      record_launch(awake_cb, plan_vm_keep_awake(awake_sink.address, kAwakeIterations));
      awake_cb.end();
      awake_fence = vk::raii::Fence(d, vk::FenceCreateInfo(vk::FenceCreateFlagBits::eSignaled));
    }
  } catch (...) {
    // The work only speeds up the first pass: not having it (no memory for its 128 bytes, a driver
    // error) never fails the load it would have covered.
    free_awake_objects();
    return false;
  }
  try {
    awake_run = true;
    awake_thread = std::thread([this] { awake_loop(); });
  } catch (...) {  // no thread to be had
    awake_run = false;
    return false;
  }
  return true;
}

void vulkan_vm::impl::awake_loop() {
  const auto& d = dev->logical();
  const vk::CommandBuffer cb = *awake_cb;
  const vk::raii::Queue& q = *dev->spare_compute_queue();  // raii: its own dispatcher (no default one)
  const std::uint64_t timeout_ns = std::uint64_t{options.timeout_ms} * 1000000ull;
  // Any failure (a lost device, a wait that times out) ends the work quietly: the VM's own next wait
  // reports the device's state, and nothing the VM computes depends on this.
  try {
    while (awake_run.load()) {
      d.resetFences({*awake_fence});
      {
        std::lock_guard<std::mutex> lock(queue_mutex);
        q.submit(vk::SubmitInfo({}, {}, cb), *awake_fence);
      }
      if (d.waitForFences({*awake_fence}, VK_TRUE, timeout_ns) != vk::Result::eSuccess) break;
    }
  } catch (...) {
  }
}

void vulkan_vm::impl::stop_awake() {
  awake_holds = 0;
  awake_run = false;
  if (awake_thread.joinable()) awake_thread.join();
  // A submission the loop stopped waiting for (a timeout) must finish before its objects go.
  if (const auto* q = dev ? dev->spare_compute_queue() : nullptr) {
    try {
      std::lock_guard<std::mutex> lock(queue_mutex);
      q->waitIdle();
    } catch (...) {
    }
  }
}

void vulkan_vm::impl::free_awake_objects() {
  awake_cb = nullptr;
  awake_pool = nullptr;
  awake_fence = nullptr;
  if (awake_sink && memory) memory->free(awake_sink);
  awake_sink = {};
}

void vulkan_vm::impl::wait_device_idle(const char* what) {
  try {
    std::lock_guard<std::mutex> lock(queue_mutex);
    dev->logical().waitIdle();
  } catch (...) {
    rethrow_vulkan(what);
  }
}

bool vulkan_vm::keep_awake(bool on) { return impl_->keep_awake(on); }

}  // namespace octo::vm
