// The Vulkan VM (include/octo/vm/vulkan_vm.hpp): seeds/000's bindings over the buddy-allocated device
// memory, one command buffer recorded per load, one submit per execute.
#include "octo/vm/vulkan_vm.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>

#include "barrier_plan.hpp"
#include "device.hpp"
#include "kernel_registry.hpp"
#include "memory.hpp"
#include "octo/error.hpp"
#include "octo/ir/validate.hpp"
#include "pipelines.hpp"
#include "vm_kernels.hpp"

namespace octo::vm {

using namespace octo::vm::vulkan;

namespace {

constexpr std::uint32_t register_count = 32;
constexpr std::uint32_t metrics_floats = 8;  // per instance (regulator.comp)
constexpr std::uint32_t control_floats = 4;  // per instance

std::optional<std::uint32_t> register_index(std::string_view name) {
  if (name.size() < 2 || name.size() > 3 || name[0] != 'R') return std::nullopt;
  std::uint32_t v = 0;
  for (char c : name.substr(1)) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<std::uint32_t>(c - '0');
  }
  if (name.size() == 3 && name[1] == '0') return std::nullopt;
  return v < register_count ? std::optional<std::uint32_t>(v) : std::nullopt;
}

/// One placed IR buffer.
struct placed {
  std::uint64_t address = 0;
  vk::Buffer buffer;
  std::uint64_t offset = 0;  // within `buffer`
  std::uint64_t bytes = 0;
  const char* binding = "";
  std::byte* mapped = nullptr;  // host pointer of a host-visible IO buffer: writes and reads are a memcpy
};

// IO buffers up to this size live in host-visible memory, so the per-token writes (tokens, pos) and reads
// (next_token) are a memcpy instead of a staging copy with its own submit and fence wait (~40 us each).
// Inputs go to device-local BAR memory where the device has it (host writes are write-combined; kernels
// read at device speed); outputs go to host-cached memory (kernels write across the bus once, the host
// reads from its cache: uncached BAR reads are slow). Larger IO (logits: vocab x 4 bytes per position,
// e.g. 600 KB for Qwen2.5, 77 MB for a 128-token prefill) stays device-local: kernels writing it across
// PCIe would slow the pass more than one staging copy costs.
constexpr std::uint64_t host_io_limit = std::uint64_t{256} << 10;

struct instance_state {
  ir::program program;
  std::vector<placed> buffers;   // by buffer id
  std::vector<allocation> owned; // freed with the program
  std::vector<std::string> shared_names;  // shared buffers this instance uses (reference counts)
  std::map<std::string, std::int32_t, std::less<>> by_name;
};

/// A task's pair of timestamps in the profiling query pool (queries 2q and 2q+1).
struct profile_slot {
  std::int32_t task = 0;
  std::uint32_t instance = 0;
  std::string opcode, output;
  std::uint32_t query = 0;
};

/// One program: a chain of instances (load(span)) or one (add_program), with its recorded command buffer.
struct program_state {
  std::vector<instance_state> instances;
  vk::raii::CommandBuffer cb{nullptr};
  vk::raii::QueryPool queries{nullptr};
  std::vector<profile_slot> slots;
  bool profiled_run = false;  // submitted since it was recorded
  std::uint64_t dispatches = 0, task_dispatches = 0, barriers = 0, submits = 0;
};

/// A WEIGHT / CONST / KV_CACHE buffer shared by name between programs.
struct shared_buffer {
  allocation a;
  std::uint64_t bytes = 0;
  ir::buffer_kind kind{};
  std::uint32_t users = 0;
};

struct region_state {
  allocation a;
  std::uint64_t bytes = 0;
};

struct pinned_state {
  allocation a;
  std::uint64_t pad = 0;  // bytes skipped so the host pointer is 4096-aligned
  std::uint64_t bytes = 0;
};

struct upload_slot {
  vk::raii::CommandBuffer cb{nullptr};
  std::uint64_t value = 0;  // transfer-timeline value its last submit signals
};

bool env_profile() {
  const char* v = std::getenv("OCTO_PROFILE");
  return v && *v && std::string_view(v) != "0";
}

// OCTO_PRECISION=fast|accurate overrides vulkan_options::precision (benchmarks and tests).
matmul_precision env_precision(matmul_precision given) {
  const char* v = std::getenv("OCTO_PRECISION");
  if (!v || !*v) return given;
  const std::string_view s(v);
  if (s == "fast") return matmul_precision::fast;
  if (s == "accurate") return matmul_precision::accurate;
  throw octo::error("octo: OCTO_PRECISION must be fast or accurate, not '" + std::string(s) + "'");
}

bool shared_kind(ir::buffer_kind k) {
  return k == ir::buffer_kind::weight || k == ir::buffer_kind::constant || k == ir::buffer_kind::kv_cache;
}

}  // namespace

struct vulkan_vm::impl {
  vulkan_options options;
  std::unique_ptr<vulkan::device> dev;
  std::unique_ptr<device_memory> memory;
  std::unique_ptr<vulkan::pipelines> pipes;
  vk::raii::CommandPool pool{nullptr};           // compute family: programs and staging copies
  vk::raii::CommandPool upload_pool{nullptr};    // transfer family when the device has one
  vk::raii::CommandBuffer transfer_cb{nullptr};  // staging copies (one_shot)
  vk::raii::Fence fence{nullptr};                // execute() without timeline semaphores
  vk::raii::Fence transfer_fence{nullptr};
  vk::raii::Semaphore compute_timeline{nullptr}, transfer_timeline{nullptr};
  std::uint64_t compute_value = 0, transfer_value = 0;  // last values submitted to signal
  std::uint64_t compute_seen = 0;  // a compute value the host has seen reached (skips redundant waits)
  std::vector<upload_slot> upload_slots;

  allocation registers, metrics, control, globals, staging;
  std::vector<std::unique_ptr<program_state>> programs;  // by program_id; null once removed
  std::map<std::string, shared_buffer, std::less<>> shared;
  std::map<std::string, region_state, std::less<>> regions;
  std::map<std::uint32_t, pinned_state> pinned_blocks;
  std::uint32_t next_pinned = 1;
  std::optional<program_id> last_run;
  bool pending = false;  // fence path: a submit whose fence has not been seen signalled (after a timeout)
  bool lost = false;
  vulkan_stats st;

  // Profiling (vulkan_options::profile / OCTO_PROFILE): nothing of this exists when it is off.
  bool profiling = false;
  double ns_per_tick = 1.0;
  std::uint64_t timestamp_mask = ~std::uint64_t{0};

  ~impl() { release(); }

  void release() {
    if (dev) {
      try {
        dev->logical().waitIdle();
      } catch (...) {
      }
    }
    programs.clear();
    upload_slots.clear();
    transfer_cb = nullptr;
    pool = nullptr;
    upload_pool = nullptr;
    fence = nullptr;
    transfer_fence = nullptr;
    compute_timeline = nullptr;
    transfer_timeline = nullptr;
    compute_value = transfer_value = compute_seen = 0;
    pipes.reset();
    shared.clear();
    regions.clear();
    pinned_blocks.clear();
    last_run.reset();
    memory.reset();
    dev.reset();
    pending = false;
  }

  void check_usable(const char* what) const {
    if (!dev) throw octo::error(std::string("octo: vulkan_vm::") + what + " before boot");
    if (lost) throw octo::error(std::string("octo: vulkan_vm::") + what + ": the Vulkan device was lost earlier");
  }
  bool timeline() const { return dev->timeline_semaphores(); }
  void need_timeline(const char* what) const {
    check_usable(what);
    if (!timeline())
      throw octo::error(std::string("octo: vulkan_vm::") + what + " needs timeline semaphores, which " +
                        dev->entry().name + " does not have");
  }

  std::uint64_t register_bytes() const { return std::uint64_t{options.register_floats} * 4; }
  std::uint64_t register_address(std::uint32_t inst, std::uint32_t reg) const {
    return registers.address + (std::uint64_t{inst} * register_count + reg) * register_bytes();
  }

  // ---- waiting ------------------------------------------------------------------------------------
  void wait(const vk::raii::Fence& f, const char* what) {
    vk::Result r;
    try {
      r = dev->logical().waitForFences({*f}, VK_TRUE, std::uint64_t{options.timeout_ms} * 1000000ull);
    } catch (const vk::DeviceLostError&) {
      lost = true;
      throw octo::error(std::string("octo: the Vulkan device was lost during ") + what);
    } catch (...) {
      rethrow_vulkan(what);
    }
    if (r == vk::Result::eTimeout)
      throw octo::error(std::string("octo: ") + what + " did not finish within the " + std::to_string(options.timeout_ms) +
                        " ms timeout");
  }

  void wait_timeline(const vk::raii::Semaphore& sem, std::uint64_t value, const std::string& what) {
    vk::Result r;
    try {
      vk::Semaphore h = *sem;
      r = dev->logical().waitSemaphores(vk::SemaphoreWaitInfo({}, h, value), std::uint64_t{options.timeout_ms} * 1000000ull);
    } catch (const vk::DeviceLostError&) {
      lost = true;
      throw octo::error("octo: the Vulkan device was lost waiting for " + what);
    } catch (...) {
      rethrow_vulkan(what.c_str());
    }
    if (r == vk::Result::eTimeout)
      throw octo::error("octo: " + what + " did not finish within the " + std::to_string(options.timeout_ms) + " ms timeout");
  }

  std::uint64_t counter(const vk::raii::Semaphore& sem) const {
    if (!*sem) return 0;
    try {
      return sem.getCounterValue();
    } catch (...) {
      rethrow_vulkan("reading a timeline semaphore");
    }
  }

  void wait_compute(std::uint64_t v) {
    need_timeline("wait_compute");
    if (v > compute_value)
      throw octo::error("octo: wait_compute(" + std::to_string(v) + "): only " + std::to_string(compute_value) +
                        " program runs were submitted");
    if (v <= compute_seen) return;
    wait_timeline(compute_timeline, v, "program run " + std::to_string(v) + " (compute timeline)");
    compute_seen = v;
  }
  void wait_upload(std::uint64_t v) {
    need_timeline("wait_upload");
    if (v > transfer_value)
      throw octo::error("octo: wait_upload(" + std::to_string(v) + "): only " + std::to_string(transfer_value) +
                        " uploads were submitted");
    wait_timeline(transfer_timeline, v, "upload " + std::to_string(v) + " (transfer timeline)");
  }

  /// Before the host touches memory a program may use: every submitted program has finished.
  void finish_pending() {
    if (pending) {
      wait(fence, "the previous execute");
      pending = false;
    }
    if (dev && timeline() && compute_value > compute_seen) {
      wait_timeline(compute_timeline, compute_value, "the submitted programs (compute timeline)");
      compute_seen = compute_value;
    }
  }

  // ---- host <-> device (staging) --------------------------------------------------------------------
  static constexpr std::uint64_t staging_chunk = std::uint64_t{64} << 20;  // transfers larger than this loop

  std::byte* staging_for(std::uint64_t bytes) {
    bytes = std::min(bytes, staging_chunk);
    if (staging.size < bytes) {
      if (staging) memory->free(staging);
      staging = {};
      staging = memory->allocate("staging", std::max<std::uint64_t>(bytes, 1 << 20), memory_class::staging);
    }
    return staging.mapped;
  }

  template <class F>
  void one_shot(F&& record, const char* what) {
    finish_pending();
    try {
      transfer_cb.reset();
      transfer_cb.begin(vk::CommandBufferBeginInfo(vk::CommandBufferUsageFlagBits::eOneTimeSubmit));
      record(transfer_cb);
      transfer_cb.end();
      dev->logical().resetFences({*transfer_fence});
      vk::CommandBuffer cb = *transfer_cb;
      dev->compute_queue().submit(vk::SubmitInfo({}, {}, cb), *transfer_fence);
      ++st.transfers;
    } catch (const vk::DeviceLostError&) {
      lost = true;
      throw octo::error(std::string("octo: the Vulkan device was lost during ") + what);
    } catch (...) {
      rethrow_vulkan(what);
    }
    wait(transfer_fence, what);
  }

  void upload(vk::Buffer dst, std::uint64_t dst_offset, const void* src, std::uint64_t bytes) {
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

  void download(vk::Buffer src, std::uint64_t src_offset, void* dst, std::uint64_t bytes) {
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

  // ---- boot -------------------------------------------------------------------------------------
  void boot(const vulkan_options& o) {
    release();
    options = o;
    if (options.instances == 0) throw octo::error("octo: vulkan_options.instances must be at least 1");
    if (options.register_floats < 8) throw octo::error("octo: vulkan_options.register_floats must be at least 8");
    st = {};
    dev = std::make_unique<vulkan::device>(device_options{options.device, options.validation});
    profiling = options.profile || env_profile();
    options.precision = env_precision(options.precision);
    if (profiling) {
      auto families = dev->physical().getQueueFamilyProperties();
      std::uint32_t bits = families[dev->compute_family()].timestampValidBits;
      if (bits == 0)
        throw octo::error("octo: profiling needs GPU timestamps, which the compute queue of " + dev->entry().name +
                          " does not have");
      timestamp_mask = bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
      ns_per_tick = static_cast<double>(dev->properties().limits.timestampPeriod);
    }
    memory = std::make_unique<device_memory>(*dev, options.memory_budget, options.block_size);
    pipes = std::make_unique<vulkan::pipelines>(*dev, options.pipeline_cache_dir);
    try {
      const auto& d = dev->logical();
      pool = vk::raii::CommandPool(
          d, vk::CommandPoolCreateInfo(vk::CommandPoolCreateFlagBits::eResetCommandBuffer, dev->compute_family()));
      upload_pool = vk::raii::CommandPool(
          d, vk::CommandPoolCreateInfo(vk::CommandPoolCreateFlagBits::eResetCommandBuffer,
                                       dev->transfer_family().value_or(dev->compute_family())));
      vk::raii::CommandBuffers cbs(d, vk::CommandBufferAllocateInfo(*pool, vk::CommandBufferLevel::ePrimary, 1));
      transfer_cb = std::move(cbs[0]);
      fence = vk::raii::Fence(d, vk::FenceCreateInfo());
      transfer_fence = vk::raii::Fence(d, vk::FenceCreateInfo());
      if (timeline()) {
        vk::StructureChain<vk::SemaphoreCreateInfo, vk::SemaphoreTypeCreateInfo> sci(
            vk::SemaphoreCreateInfo(), vk::SemaphoreTypeCreateInfo(vk::SemaphoreType::eTimeline, 0));
        compute_timeline = vk::raii::Semaphore(d, sci.get<vk::SemaphoreCreateInfo>());
        transfer_timeline = vk::raii::Semaphore(d, sci.get<vk::SemaphoreCreateInfo>());
      }
    } catch (...) {
      rethrow_vulkan("creating command buffers");
    }
    // The five bindings of seeds/000. Registers live in device memory; the small records the host
    // reads or writes every pass (metrics, globals record, control) are host-visible.
    std::uint64_t n = options.instances;
    registers = memory->allocate("registers", n * register_count * register_bytes(), memory_class::device_local);
    metrics = memory->allocate("metrics", n * metrics_floats * 4, memory_class::host_visible);
    control = memory->allocate("control", n * control_floats * 4, memory_class::host_visible);
    globals = memory->allocate("globals", sizeof(globals_record), memory_class::host_visible);
    std::memset(metrics.mapped, 0, n * metrics_floats * 4);
    reset_control();
    globals_record g;
    std::memcpy(globals.mapped, &g, sizeof g);
    one_shot([&](const vk::raii::CommandBuffer& cb) { cb.fillBuffer(registers.buffer, registers.offset, registers.size, 0); },
             "zeroing the registers");
  }

  void reset_control() {
    auto* c = reinterpret_cast<float*>(control.mapped);
    for (std::uint32_t i = 0; i < options.instances; ++i) {
      c[i * control_floats + 0] = 1.0f;  // scale_factor
      c[i * control_floats + 1] = 0.0f;  // eviction_priority
      c[i * control_floats + 2] = 0.0f;  // precision_mode
      c[i * control_floats + 3] = 1.0f;  // active
    }
  }

  // ---- placing a program's buffers ----------------------------------------------------------------
  // `share`: WEIGHT / CONST / KV_CACHE buffers come from (or go into) the shared map. `fresh` collects
  // allocations made here (to be zeroed), `fresh_shared` the names added to the shared map.
  void place(instance_state& is, std::uint32_t inst, bool share, std::span<const buffer_placement> placements,
             std::vector<allocation>& fresh, std::vector<std::string>& fresh_shared) {
    const auto& p = is.program;
    is.buffers.assign(p.buffers.size(), {});
    for (const auto& b : p.buffers) is.by_name.emplace(b.name.str(), b.id);
    // Placements first: every one must name a buffer of the program and a region it fits.
    std::map<std::string_view, const buffer_placement*> placed_in;
    for (const auto& pm : placements) {
      auto it = is.by_name.find(pm.buffer);
      if (it == is.by_name.end())
        throw octo::error("octo: placement: the program has no buffer named '" + pm.buffer + "'");
      if (!placed_in.emplace(pm.buffer, &pm).second)
        throw octo::error("octo: placement: buffer '" + pm.buffer + "' is placed twice");
      auto r = regions.find(pm.region);
      if (r == regions.end())
        throw octo::error("octo: placement of buffer '" + pm.buffer + "': no region named '" + pm.region + "'");
      const auto& b = p.buffers[static_cast<std::size_t>(it->second)];
      const auto bytes = static_cast<std::uint64_t>(b.nbytes());
      if (register_index(b.name))
        throw octo::error("octo: placement: buffer '" + pm.buffer + "' is a register and cannot live in a region");
      if (pm.offset % 16 != 0)
        throw octo::error("octo: placement of buffer '" + pm.buffer + "': offset " + std::to_string(pm.offset) +
                          " in region '" + pm.region + "' is not a multiple of 16");
      if (pm.offset > r->second.bytes || bytes > r->second.bytes - pm.offset)
        throw octo::error("octo: placement of buffer '" + pm.buffer + "' (" + std::to_string(bytes) + " bytes) at offset " +
                          std::to_string(pm.offset) + " does not fit region '" + pm.region + "' (" +
                          std::to_string(r->second.bytes) + " bytes)");
    }
    for (const auto& b : p.buffers) {
      auto& pl = is.buffers[static_cast<std::size_t>(b.id)];
      pl.bytes = static_cast<std::uint64_t>(b.nbytes());
      std::string label = b.name.str();
      if (options.instances > 1 && !share) label = "instance " + std::to_string(inst) + " " + label;
      if (auto r = register_index(b.name)) {
        if (shared_kind(b.kind))
          throw octo::error("octo: buffer '" + label + "' is named like a register but is a " +
                            std::string(ir::name(b.kind)));
        std::uint64_t room = register_bytes() - (*r == 30 ? 16 : 0);  // R30 keeps 4 telemetry words
        if (pl.bytes > room)
          throw octo::error("octo: buffer '" + label + "' (" + std::to_string(pl.bytes) + " bytes) does not fit register R" +
                            std::to_string(*r) + " (" + std::to_string(room) + " bytes)");
        pl.address = register_address(inst, *r);
        pl.buffer = registers.buffer;
        pl.offset = registers.offset + (pl.address - registers.address);
        pl.binding = "registers";
        continue;
      }
      const char* binding = "registers";
      switch (b.kind) {
        case ir::buffer_kind::weight:
        case ir::buffer_kind::constant: binding = "heap"; break;
        case ir::buffer_kind::kv_cache: binding = "globals"; break;
        default: break;
      }
      pl.binding = binding;
      if (auto pm = placed_in.find(b.name.view()); pm != placed_in.end()) {
        const auto& reg = regions.find(pm->second->region)->second;
        pl.address = reg.a.address + pm->second->offset;
        pl.buffer = reg.a.buffer;
        pl.offset = reg.a.offset + pm->second->offset;
        pl.mapped = nullptr;
        pl.binding = "region";
        continue;
      }
      if (share && shared_kind(b.kind)) {
        auto it = shared.find(b.name.view());
        if (it != shared.end()) {
          if (it->second.bytes != pl.bytes || it->second.kind != b.kind)
            throw octo::error("octo: buffer '" + label + "' (" + std::string(ir::name(b.kind)) + ", " +
                              std::to_string(pl.bytes) + " bytes) is shared by name with an earlier program's " +
                              std::string(ir::name(it->second.kind)) + " of " + std::to_string(it->second.bytes) +
                              " bytes");
        } else {
          shared_buffer sb;
          sb.a = memory->allocate(label, std::max<std::uint64_t>(pl.bytes, 4), memory_class::device_local);
          sb.bytes = pl.bytes;
          sb.kind = b.kind;
          fresh.push_back(sb.a);
          it = shared.emplace(b.name.str(), sb).first;
          fresh_shared.push_back(b.name.str());
        }
        ++it->second.users;
        is.shared_names.push_back(b.name.str());
        pl.address = it->second.a.address;
        pl.buffer = it->second.a.buffer;
        pl.offset = it->second.a.offset;
        continue;
      }
      memory_class cls = memory_class::device_local;
      if (pl.bytes <= host_io_limit) {
        if (b.kind == ir::buffer_kind::io_input) cls = memory_class::host_visible;
        if (b.kind == ir::buffer_kind::io_output) cls = memory_class::readback;
      }
      auto a = memory->allocate(label, std::max<std::uint64_t>(pl.bytes, 4), cls);
      is.owned.push_back(a);
      fresh.push_back(a);
      pl.address = a.address;
      pl.buffer = a.buffer;
      pl.offset = a.offset;
      pl.mapped = a.mapped;
    }
  }

  void release_instance(instance_state& is) {
    for (auto& a : is.owned) memory->free(a);
    is.owned.clear();
    for (const auto& n : is.shared_names) {
      auto it = shared.find(n);
      if (it == shared.end()) continue;
      if (--it->second.users == 0) {
        memory->free(it->second.a);
        shared.erase(it);
      }
    }
    is.shared_names.clear();
  }

  void release_program(program_state& ps) {
    for (auto& is : ps.instances) release_instance(is);
    ps.instances.clear();
  }

  static void validate_program(const ir::program& p, const std::string& which) {
    auto r = octo::ir::validate(p);
    if (!r.ok) {
      std::string first = r.errors.empty() ? std::string("(no detail)") : r.errors.front().str();
      throw octo::error("octo: " + which + " refused (validate found " + std::to_string(r.errors.size()) +
                        " errors): " + first);
    }
  }

  void zero(const std::vector<allocation>& fresh, bool registers_too) {
    one_shot(
        [&](const vk::raii::CommandBuffer& cb) {
          if (registers_too) cb.fillBuffer(registers.buffer, registers.offset, registers.size / 4 * 4, 0);
          for (const auto& a : fresh) cb.fillBuffer(a.buffer, a.offset, (a.size + 3) / 4 * 4, 0);
        },
        "zeroing the program's buffers");
  }

  void load(std::span<const ir::program> progs) {
    check_usable("load");
    if (progs.empty()) throw octo::error("octo: vulkan_vm::load needs at least one program");
    if (progs.size() > options.instances)
      throw octo::error("octo: " + std::to_string(progs.size()) + " programs but the VM was booted with " +
                        std::to_string(options.instances) + " instances");
    for (std::size_t i = 0; i < progs.size(); ++i) validate_program(progs[i], "program " + std::to_string(i));
    finish_pending();
    try {
      dev->logical().waitIdle();
    } catch (...) {
      rethrow_vulkan("waiting for the device before a load");
    }
    unload();
    auto ps = std::make_unique<program_state>();
    try {
      // A single program shares its weights by name with programs added later; the instances of a
      // chain each have their own (they are different layers).
      const bool share = progs.size() == 1;
      std::vector<allocation> fresh;
      std::vector<std::string> fresh_shared;
      ps->instances.resize(progs.size());
      for (std::size_t i = 0; i < progs.size(); ++i) {
        ps->instances[i].program = progs[i];
        place(ps->instances[i], static_cast<std::uint32_t>(i), share, {}, fresh, fresh_shared);
      }
      // Zero every placed buffer (and the registers: a new program starts from a clean machine).
      zero(fresh, true);
      std::memset(metrics.mapped, 0, std::uint64_t{options.instances} * metrics_floats * 4);
      reset_control();
      auto* m = reinterpret_cast<float*>(metrics.mapped);
      for (std::size_t i = 0; i < ps->instances.size(); ++i) {
        std::uint64_t weights = 0;
        for (const auto& b : ps->instances[i].program.buffers)
          if (b.kind == ir::buffer_kind::weight) weights += static_cast<std::uint64_t>(b.nbytes());
        m[i * metrics_floats + 3] = static_cast<float>(weights);  // memory_used
        m[i * metrics_floats + 4] = static_cast<float>(i);        // layer_idx
      }
      record(*ps);
      programs.push_back(std::move(ps));
    } catch (...) {
      release_program(*ps);
      unload();
      throw;
    }
  }

  program_id add_program(const ir::program& p, std::span<const buffer_placement> placements) {
    check_usable("add_program");
    const auto id = static_cast<program_id>(programs.size());
    validate_program(p, "program " + std::to_string(id));
    auto ps = std::make_unique<program_state>();
    ps->instances.resize(1);
    ps->instances[0].program = p;
    try {
      std::vector<allocation> fresh;
      std::vector<std::string> fresh_shared;
      place(ps->instances[0], 0, true, placements, fresh, fresh_shared);
      zero(fresh, false);  // other programs' registers and shared buffers are left as they are
      record(*ps);
    } catch (...) {
      release_program(*ps);
      throw;
    }
    programs.push_back(std::move(ps));
    return id;
  }

  void remove_program(program_id id) {
    program_state& ps = program(id, "remove_program");
    finish_pending();
    try {
      dev->logical().waitIdle();  // its command buffer may still be pending
    } catch (...) {
      rethrow_vulkan("waiting for the device before removing a program");
    }
    release_program(ps);
    programs[id].reset();
    if (last_run == id) last_run.reset();
  }

  std::size_t program_count() const {
    return static_cast<std::size_t>(std::count_if(programs.begin(), programs.end(), [](const auto& p) { return p != nullptr; }));
  }

  void unload() {
    for (auto& ps : programs)
      if (ps) release_program(*ps);
    programs.clear();
    for (auto& [name, sb] : shared) memory->free(sb.a);
    shared.clear();
    last_run.reset();
  }

  program_state& program(program_id id, const char* what) {
    check_usable(what);
    if (id >= programs.size() || !programs[id])
      throw octo::error("octo: vulkan_vm::" + std::string(what) + ": no program with id " + std::to_string(id) + " (" +
                        std::to_string(program_count()) + " loaded)");
    return *programs[id];
  }
  const program_state& program(program_id id, const char* what) const {
    return const_cast<impl*>(this)->program(id, what);
  }

  // ---- recording ---------------------------------------------------------------------------------
  void record(program_state& ps) {
    const auto& facts = dev->facts();
    std::uint64_t barriers = 0, dispatches = 0, task_dispatches = 0;
    bool dirty = false;  // a dispatch since the last barrier
    vk::Pipeline bound;
    try {
      vk::raii::CommandBuffers cbs(dev->logical(),
                                   vk::CommandBufferAllocateInfo(*pool, vk::CommandBufferLevel::ePrimary, 1));
      ps.cb = std::move(cbs[0]);
    } catch (...) {
      rethrow_vulkan("allocating the program's command buffer");
    }
    auto& cb = ps.cb;

    auto barrier = [&] {
      if (!dirty) return;
      vk::MemoryBarrier mb(vk::AccessFlagBits::eShaderWrite, vk::AccessFlagBits::eShaderRead | vk::AccessFlagBits::eShaderWrite);
      cb.pipelineBarrier(vk::PipelineStageFlagBits::eComputeShader, vk::PipelineStageFlagBits::eComputeShader, {}, mb, {}, {});
      ++barriers;
      dirty = false;
    };
    auto dispatch = [&](const kernel_launch& l, const std::string& who) {
      if (l.shader.empty() || l.groups[0] == 0 || l.groups[1] == 0 || l.groups[2] == 0) return false;
      if (l.push_constants.size() > pipes->push_constant_bytes())
        throw octo::error("octo: " + who + ": " + std::to_string(l.push_constants.size()) +
                          " bytes of push constants, more than the " + std::to_string(pipes->push_constant_bytes()) +
                          " the pipeline layout has");
      vk::Pipeline pl = pipes->get(l.shader, l.spec_constants);
      if (pl != bound) {
        cb.bindPipeline(vk::PipelineBindPoint::eCompute, pl);
        bound = pl;
      }
      if (!l.push_constants.empty()) {
        std::vector<std::byte> pc = l.push_constants;
        pc.resize((pc.size() + 3) / 4 * 4, std::byte{0});
        cb.pushConstants<std::byte>(*pipes->layout(), vk::ShaderStageFlagBits::eCompute, 0, pc);
      }
      cb.dispatch(l.groups[0], l.groups[1], l.groups[2]);
      ++dispatches;
      dirty = true;
      return true;
    };

    ps.slots.clear();
    ps.profiled_run = false;
    std::uint32_t query_capacity = 0;
    if (profiling) {
      for (const auto& is : ps.instances) query_capacity += 2 * static_cast<std::uint32_t>(is.program.tasks.size());
      query_capacity = std::max<std::uint32_t>(query_capacity, 2);
      try {
        ps.queries =
            vk::raii::QueryPool(dev->logical(), vk::QueryPoolCreateInfo({}, vk::QueryType::eTimestamp, query_capacity));
      } catch (...) {
        rethrow_vulkan("creating the profiling query pool");
      }
    }

    try {
      // Simultaneous use: submit() may queue the same program again before its last run finished.
      cb.begin(vk::CommandBufferBeginInfo(vk::CommandBufferUsageFlagBits::eSimultaneousUse));
      if (profiling) cb.resetQueryPool(*ps.queries, 0, query_capacity);
      // Host writes (IO, globals record, control), transfers and earlier programs' kernels -> kernels.
      {
        vk::MemoryBarrier mb(
            vk::AccessFlagBits::eHostWrite | vk::AccessFlagBits::eTransferWrite | vk::AccessFlagBits::eShaderWrite,
            vk::AccessFlagBits::eShaderRead | vk::AccessFlagBits::eShaderWrite);
        cb.pipelineBarrier(vk::PipelineStageFlagBits::eHost | vk::PipelineStageFlagBits::eTransfer |
                               vk::PipelineStageFlagBits::eComputeShader,
                           vk::PipelineStageFlagBits::eComputeShader, {}, mb, {}, {});
      }
      std::uint32_t n_inst = static_cast<std::uint32_t>(ps.instances.size());
      for (std::uint32_t i = 0; i < n_inst; ++i) {
        auto& is = ps.instances[i];
        const auto& p = is.program;
        if (i > 0) barrier();  // R31 was written by the message kernel
        std::vector<std::uint64_t> addresses(p.buffers.size());
        for (std::size_t b = 0; b < p.buffers.size(); ++b) addresses[b] = is.buffers[b].address;
        for (const auto& step : plan_barriers(p)) {
          const auto& t = p.tasks[static_cast<std::size_t>(step.task)];
          if (step.barrier_before) barrier();
          std::string who = "task " + std::to_string(t.id) + " (" + std::string(ir::name(t.op)) + ")";
          if (n_inst > 1) who = "instance " + std::to_string(i) + " " + who;
          if (t.op == ir::opcode::nop) continue;
          kernel_planner planner = find_planner(t.op);
          if (!planner) planner = find_vm_planner(t.op);
          if (!planner) throw octo::error("octo: " + who + ": no Vulkan kernel for opcode " + std::string(ir::name(t.op)));
          task_context ctx{p, t, addresses, globals.address, facts, options.precision == matmul_precision::fast};
          const kernel_launch launch = planner(ctx);
          if (profiling && !launch.shader.empty()) {
            // Serialized: the barrier makes the first stamp the end of everything before this task.
            barrier();
            profile_slot slot;
            slot.task = t.id;
            slot.instance = i;
            slot.opcode = std::string(ir::name(t.op));
            if (!t.outputs.empty()) slot.output = p.buffers[static_cast<std::size_t>(t.outputs.front())].name.str();
            slot.query = static_cast<std::uint32_t>(ps.slots.size());
            cb.writeTimestamp(vk::PipelineStageFlagBits::eBottomOfPipe, *ps.queries, 2 * slot.query);
            const bool dispatched = dispatch(launch, who);
            cb.writeTimestamp(vk::PipelineStageFlagBits::eBottomOfPipe, *ps.queries, 2 * slot.query + 1);
            if (dispatched) {
              ++task_dispatches;
              ps.slots.push_back(std::move(slot));
            }
            continue;
          }
          if (dispatch(launch, who)) ++task_dispatches;
        }
        // seeds/000: after each instance, the regulator observes its outbox, then the message passes on.
        auto r30 = is.by_name.find("R30");
        std::uint32_t n = r30 != is.by_name.end()
                              ? static_cast<std::uint32_t>(p.buffers[static_cast<std::size_t>(r30->second)].numel())
                              : options.register_floats - 4;
        if (r30 != is.by_name.end()) {
          barrier();
          dispatch(plan_vm_regulator(register_address(i, 30), metrics.address, control.address, n, i, n_inst,
                                     options.regulator == regulator_mode::regulate, options.target_norm, facts),
                   "the regulator");
        }
        if (i + 1 < n_inst) {
          barrier();
          dispatch(plan_vm_message(register_address(i, 30), register_address(i + 1, 31), control.address, n, i + 1),
                   "the message from instance " + std::to_string(i));
        }
      }
      // Kernels -> host reads of host-visible memory, later transfers and the next program's kernels.
      vk::MemoryBarrier mb(vk::AccessFlagBits::eShaderWrite | vk::AccessFlagBits::eShaderRead,
                           vk::AccessFlagBits::eHostRead | vk::AccessFlagBits::eTransferRead |
                               vk::AccessFlagBits::eTransferWrite);
      cb.pipelineBarrier(vk::PipelineStageFlagBits::eComputeShader,
                         vk::PipelineStageFlagBits::eHost | vk::PipelineStageFlagBits::eTransfer, {}, mb, {}, {});
      cb.end();
    } catch (const octo::error&) {
      throw;
    } catch (...) {
      rethrow_vulkan("recording the program's command buffer");
    }
    ps.barriers = barriers;
    ps.dispatches = dispatches;
    ps.task_dispatches = task_dispatches;
    ++st.recordings;
  }

  // ---- running ----------------------------------------------------------------------------------
  std::uint64_t submit(program_id id, std::uint64_t after_upload) {
    need_timeline("submit");
    auto& ps = program(id, "submit");
    if (after_upload > transfer_value)
      throw octo::error("octo: vulkan_vm::submit: after_upload " + std::to_string(after_upload) + " but only " +
                        std::to_string(transfer_value) + " uploads were submitted");
    if (pending) {  // a fence-path execute that timed out
      wait(fence, "the previous execute");
      pending = false;
    }
    const std::uint64_t signal = compute_value + 1;
    try {
      vk::Semaphore wait_sem = *transfer_timeline, signal_sem = *compute_timeline;
      vk::PipelineStageFlags wait_stage = vk::PipelineStageFlagBits::eAllCommands;
      const std::uint64_t wait_value = after_upload;
      vk::TimelineSemaphoreSubmitInfo tsi;
      vk::SubmitInfo si;
      vk::CommandBuffer cb = *ps.cb;
      si.setCommandBuffers(cb);
      si.setSignalSemaphores(signal_sem);
      tsi.setSignalSemaphoreValues(signal);
      if (after_upload > 0) {
        si.setWaitSemaphores(wait_sem);
        si.setWaitDstStageMask(wait_stage);
        tsi.setWaitSemaphoreValues(wait_value);
      }
      si.pNext = &tsi;
      dev->compute_queue().submit(si);
    } catch (const vk::DeviceLostError&) {
      lost = true;
      throw octo::error("octo: the Vulkan device was lost submitting program " + std::to_string(id));
    } catch (...) {
      rethrow_vulkan("submitting a program");
    }
    compute_value = signal;
    ++st.submits;
    ++ps.submits;
    ps.profiled_run = profiling;
    last_run = id;
    return signal;
  }

  void execute(program_id id) {
    auto& ps = program(id, "execute");
    if (timeline()) {
      finish_pending();  // host-visible memory written before this pass must not race an older one
      const auto v = submit(id, 0);
      wait_timeline(compute_timeline, v, "execute");
      compute_seen = v;
      return;
    }
    finish_pending();
    try {
      dev->logical().resetFences({*fence});
      vk::CommandBuffer cb = *ps.cb;
      dev->compute_queue().submit(vk::SubmitInfo({}, {}, cb), *fence);
    } catch (const vk::DeviceLostError&) {
      lost = true;
      throw octo::error("octo: the Vulkan device was lost submitting the program");
    } catch (...) {
      rethrow_vulkan("submitting the program");
    }
    ++st.submits;
    ++ps.submits;
    pending = true;
    ps.profiled_run = profiling;
    last_run = id;
    wait(fence, "execute");
    pending = false;
  }

  std::vector<task_profile> profile(program_id id) {
    std::vector<task_profile> out;
    auto& ps = program(id, "profile");
    if (!profiling || !ps.profiled_run || ps.slots.empty()) return out;
    finish_pending();
    const auto n = static_cast<std::uint32_t>(2 * ps.slots.size());
    std::vector<std::uint64_t> ticks;
    try {
      auto r = ps.queries.getResults<std::uint64_t>(0, n, n * sizeof(std::uint64_t), sizeof(std::uint64_t),
                                                    vk::QueryResultFlagBits::e64 | vk::QueryResultFlagBits::eWait);
      ticks = std::move(r.second);
    } catch (...) {
      rethrow_vulkan("reading the profiling timestamps");
    }
    out.reserve(ps.slots.size());
    for (const auto& s : ps.slots) {
      const std::uint64_t a = ticks[2 * s.query] & timestamp_mask, b = ticks[2 * s.query + 1] & timestamp_mask;
      task_profile tp;
      tp.task = s.task;
      tp.instance = s.instance;
      tp.opcode = s.opcode;
      tp.output = s.output;
      tp.microseconds = static_cast<double>((b - a) & timestamp_mask) * ns_per_tick / 1000.0;
      out.push_back(std::move(tp));
    }
    return out;
  }

  // ---- streaming ------------------------------------------------------------------------------------
  std::vector<std::uint32_t> sharing_families() const {
    std::vector<std::uint32_t> f{dev->compute_family()};
    if (dev->transfer_family()) f.push_back(*dev->transfer_family());
    return f;
  }

  void create_region(std::string_view name, std::uint64_t bytes) {
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

  const region_state& region(std::string_view name, const char* what) const {
    check_usable(what);
    auto it = regions.find(name);
    if (it == regions.end())
      throw octo::error("octo: vulkan_vm::" + std::string(what) + ": no region named '" + std::string(name) + "'");
    return it->second;
  }

  vulkan_vm::pinned allocate_pinned(std::uint64_t bytes) {
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

  void free_pinned(std::uint32_t id) {
    check_usable("free_pinned");
    auto it = pinned_blocks.find(id);
    if (it == pinned_blocks.end()) throw octo::error("octo: free_pinned: no pinned memory with id " + std::to_string(id));
    if (timeline() && transfer_value > 0)
      wait_timeline(transfer_timeline, transfer_value, "the uploads before free_pinned");
    memory->free_dedicated(it->second.a);
    pinned_blocks.erase(it);
  }

  std::uint64_t upload_async(std::uint32_t src, std::uint64_t src_offset, std::string_view region_name,
                             std::uint64_t dst_offset, std::uint64_t bytes, std::uint64_t after_compute) {
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
      vk::Semaphore wait_sem = *compute_timeline, signal_sem = *transfer_timeline;
      vk::PipelineStageFlags wait_stage = vk::PipelineStageFlagBits::eAllCommands;
      vk::TimelineSemaphoreSubmitInfo tsi;
      vk::SubmitInfo si;
      vk::CommandBuffer cb = *slot->cb;
      si.setCommandBuffers(cb);
      si.setSignalSemaphores(signal_sem);
      tsi.setSignalSemaphoreValues(signal);
      if (after_compute > 0) {
        si.setWaitSemaphores(wait_sem);
        si.setWaitDstStageMask(wait_stage);
        tsi.setWaitSemaphoreValues(after_compute);
      }
      si.pNext = &tsi;
      const auto& q = dev->transfer_family() ? dev->transfer_queue() : dev->compute_queue();
      q.submit(si);
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

  // ---- buffers by name ----------------------------------------------------------------------------
  const placed& find(std::string_view name, std::uint32_t inst, const ir::buffer** info) {
    check_usable("read/write");
    if (programs.empty() || !programs[0]) throw octo::error("octo: no program loaded (buffer '" + std::string(name) + "')");
    auto& ps = *programs[0];
    if (inst >= ps.instances.size())
      throw octo::error("octo: instance " + std::to_string(inst) + " has no program (" +
                        std::to_string(ps.instances.size()) + " loaded)");
    return find_in(ps.instances[inst], name, info);
  }
  const placed& find(program_id id, std::string_view name, const ir::buffer** info) {
    return find_in(program(id, "read/write").instances[0], name, info);
  }
  static const placed& find_in(instance_state& is, std::string_view name, const ir::buffer** info) {
    auto it = is.by_name.find(name);
    if (it == is.by_name.end()) throw octo::error("octo: the program has no buffer named '" + std::string(name) + "'");
    *info = &is.program.buffers[static_cast<std::size_t>(it->second)];
    return is.buffers[static_cast<std::size_t>(it->second)];
  }
  std::string name_of(std::int32_t id, std::uint32_t inst) {
    if (programs.empty() || !programs[0] || inst >= programs[0]->instances.size() || id < 0 ||
        static_cast<std::size_t>(id) >= programs[0]->instances[inst].program.buffers.size())
      throw octo::error("octo: no buffer with id " + std::to_string(id));
    return programs[0]->instances[inst].program.buffers[static_cast<std::size_t>(id)].name.str();
  }

  void write_placed(const placed& pl, std::string_view name, std::span<const std::byte> bytes) {
    if (bytes.size() != pl.bytes)
      throw octo::error("octo: buffer '" + std::string(name) + "' holds " + std::to_string(pl.bytes) + " bytes, got " +
                        std::to_string(bytes.size()));
    if (pl.mapped) {
      finish_pending();  // the GPU may still read it
      std::memcpy(pl.mapped, bytes.data(), bytes.size());
      return;
    }
    upload(pl.buffer, pl.offset, bytes.data(), bytes.size());
  }
  void read_placed(const placed& pl, std::span<std::byte> dst, std::uint64_t from = 0) {
    if (pl.mapped) {
      finish_pending();
      std::memcpy(dst.data(), pl.mapped + from, dst.size());
      return;
    }
    download(pl.buffer, pl.offset + from, dst.data(), dst.size());
  }
  static void require_f32(const ir::buffer* b, std::string_view name, const char* use) {
    if (b->dtype != ir::dtype::f32)
      throw octo::error("octo: buffer '" + std::string(name) + "' is " + std::string(ir::name(b->dtype)) + ", not F32 (use " +
                        use + ")");
  }
  static std::vector<float> as_floats(const std::vector<std::byte>& bytes) {
    std::vector<float> out(bytes.size() / 4);
    std::memcpy(out.data(), bytes.data(), out.size() * 4);
    return out;
  }

  void write_bytes(std::string_view name, std::span<const std::byte> bytes, std::uint32_t inst) {
    const ir::buffer* b = nullptr;
    write_placed(find(name, inst, &b), name, bytes);
  }
  void write_f32(std::string_view name, std::span<const float> v, std::uint32_t inst) {
    const ir::buffer* b = nullptr;
    const auto& pl = find(name, inst, &b);
    require_f32(b, name, "write_bytes");
    write_placed(pl, name, std::as_bytes(v));
  }
  std::vector<std::byte> read_bytes(std::string_view name, std::uint32_t inst) {
    const ir::buffer* b = nullptr;
    const auto& pl = find(name, inst, &b);
    std::vector<std::byte> out(pl.bytes);
    read_placed(pl, out);
    return out;
  }
  std::vector<float> read_f32(std::string_view name, std::uint32_t inst) {
    const ir::buffer* b = nullptr;
    find(name, inst, &b);
    require_f32(b, name, "read_bytes");
    return as_floats(read_bytes(name, inst));
  }

  void check_register(std::uint32_t inst, std::uint32_t reg, std::size_t count) {
    check_usable("register access");
    if (inst >= options.instances || reg >= register_count || count > options.register_floats)
      throw octo::error("octo: register R" + std::to_string(reg) + " of instance " + std::to_string(inst) + " (" +
                        std::to_string(count) + " floats) is outside the " + std::to_string(options.instances) +
                        " instances x 32 registers x " + std::to_string(options.register_floats) + " floats");
  }

  vulkan_stats stats_of(const program_state* ps) const {
    vulkan_stats s = st;
    s.dispatches = s.task_dispatches = s.barriers = 0;
    if (ps) {
      s.dispatches = ps->dispatches;
      s.task_dispatches = ps->task_dispatches;
      s.barriers = ps->barriers;
    }
    s.validation_messages = dev->validation_messages();
    auto m = memory->stats();
    s.memory_in_use = m.in_use;
    s.memory_budget = m.budget;
    s.memory_blocks = m.blocks;
    s.memory_block_bytes = m.block_bytes;
    s.largest_free_block = m.largest_free;
    s.fragmentation = m.fragmentation;
    s.pipelines = pipes->size();
    s.pipeline_cache_loaded = pipes->cache_loaded();
    return s;
  }
};

// ---- the public face -----------------------------------------------------------------------------

std::vector<vulkan_device_info> list_vulkan_devices() {
  std::vector<vulkan_device_info> out;
  for (const auto& e : vulkan::device::enumerate()) {
    vulkan_device_info i;
    i.index = e.index;
    i.name = e.name;
    i.type = e.type;
    i.api_version = std::to_string(VK_API_VERSION_MAJOR(e.api_version)) + "." +
                    std::to_string(VK_API_VERSION_MINOR(e.api_version)) + "." +
                    std::to_string(VK_API_VERSION_PATCH(e.api_version));
    i.device_local_bytes = e.device_local_bytes;
    i.suitable = e.suitable;
    i.why_not = e.why_not;
    out.push_back(std::move(i));
  }
  return out;
}

vulkan_vm::vulkan_vm() : impl_(std::make_unique<impl>()) {}
vulkan_vm::vulkan_vm(const vulkan_options& options) : vulkan_vm() { boot(options); }
vulkan_vm::~vulkan_vm() = default;
vulkan_vm::vulkan_vm(vulkan_vm&&) noexcept = default;
vulkan_vm& vulkan_vm::operator=(vulkan_vm&&) noexcept = default;

void vulkan_vm::boot(const vulkan_options& options) {
  if (!impl_) impl_ = std::make_unique<impl>();
  try {
    impl_->boot(options);
  } catch (...) {
    impl_->release();
    throw;
  }
}
bool vulkan_vm::booted() const { return impl_ && impl_->dev; }

void vulkan_vm::load(const ir::program& p) { load(std::span<const ir::program>(&p, 1)); }
void vulkan_vm::load(std::span<const ir::program> programs) {
  if (!impl_) throw octo::error("octo: vulkan_vm::load before boot");
  impl_->load(programs);
}

program_id vulkan_vm::add_program(const ir::program& p, std::span<const buffer_placement> placements) {
  if (!impl_) throw octo::error("octo: vulkan_vm::add_program before boot");
  return impl_->add_program(p, placements);
}
void vulkan_vm::remove_program(program_id id) {
  if (!impl_) throw octo::error("octo: vulkan_vm::remove_program before boot");
  impl_->remove_program(id);
}
std::size_t vulkan_vm::program_count() const { return impl_ ? impl_->program_count() : 0; }

void vulkan_vm::write_bytes(program_id id, std::string_view buffer, std::span<const std::byte> bytes) {
  if (!impl_) throw octo::error("octo: vulkan_vm::write_bytes before boot");
  const ir::buffer* b = nullptr;
  impl_->write_placed(impl_->find(id, buffer, &b), buffer, bytes);
}
std::vector<std::byte> vulkan_vm::read_bytes(program_id id, std::string_view buffer) {
  if (!impl_) throw octo::error("octo: vulkan_vm::read_bytes before boot");
  const ir::buffer* b = nullptr;
  const auto& pl = impl_->find(id, buffer, &b);
  std::vector<std::byte> out(pl.bytes);
  impl_->read_placed(pl, out);
  return out;
}
std::vector<float> vulkan_vm::read_f32(program_id id, std::string_view buffer) {
  if (!impl_) throw octo::error("octo: vulkan_vm::read_f32 before boot");
  const ir::buffer* b = nullptr;
  impl_->find(id, buffer, &b);
  impl::require_f32(b, buffer, "read_bytes");
  return impl::as_floats(read_bytes(id, buffer));
}
void vulkan_vm::read_into(program_id id, std::string_view buffer, std::span<std::byte> dst, std::uint64_t offset) {
  if (!impl_) throw octo::error("octo: vulkan_vm::read_into before boot");
  const ir::buffer* b = nullptr;
  const auto& pl = impl_->find(id, buffer, &b);
  if (offset > pl.bytes || dst.size() > pl.bytes - offset)
    throw octo::error("octo: read_into: buffer '" + std::string(buffer) + "' holds " + std::to_string(pl.bytes) +
                      " bytes, " + std::to_string(dst.size()) + " asked for from byte " + std::to_string(offset));
  impl_->read_placed(pl, dst, offset);
}
void vulkan_vm::execute(program_id id) {
  if (!impl_) throw octo::error("octo: vulkan_vm::execute before boot");
  impl_->execute(id);
}
vulkan_stats vulkan_vm::stats(program_id id) const {
  if (!impl_ || !impl_->dev) throw octo::error("octo: vulkan_vm::stats before boot");
  const auto& ps = impl_->program(id, "stats");
  auto s = impl_->stats_of(&ps);
  s.recordings = 1;
  s.submits = ps.submits;
  return s;
}
std::vector<task_profile> vulkan_vm::profile(program_id id) const {
  if (!impl_ || !impl_->dev) throw octo::error("octo: vulkan_vm::profile before boot");
  return impl_->profile(id);
}

void vulkan_vm::create_region(std::string_view name, std::uint64_t bytes) {
  if (!impl_) throw octo::error("octo: vulkan_vm::create_region before boot");
  impl_->create_region(name, bytes);
}
std::uint64_t vulkan_vm::region_bytes(std::string_view name) const {
  if (!impl_ || !impl_->dev) throw octo::error("octo: vulkan_vm::region_bytes before boot");
  return impl_->region(name, "region_bytes").bytes;
}
vulkan_vm::pinned vulkan_vm::allocate_pinned(std::uint64_t bytes) {
  if (!impl_) throw octo::error("octo: vulkan_vm::allocate_pinned before boot");
  return impl_->allocate_pinned(bytes);
}
void vulkan_vm::free_pinned(std::uint32_t id) {
  if (!impl_) throw octo::error("octo: vulkan_vm::free_pinned before boot");
  impl_->free_pinned(id);
}
std::uint64_t vulkan_vm::upload_async(std::uint32_t src, std::uint64_t src_offset, std::string_view region,
                                      std::uint64_t dst_offset, std::uint64_t bytes, std::uint64_t after_compute) {
  if (!impl_) throw octo::error("octo: vulkan_vm::upload_async before boot");
  return impl_->upload_async(src, src_offset, region, dst_offset, bytes, after_compute);
}
std::uint64_t vulkan_vm::submit(program_id id, std::uint64_t after_upload) {
  if (!impl_) throw octo::error("octo: vulkan_vm::submit before boot");
  return impl_->submit(id, after_upload);
}
void vulkan_vm::wait_compute(std::uint64_t value) {
  if (!impl_) throw octo::error("octo: vulkan_vm::wait_compute before boot");
  impl_->wait_compute(value);
}
void vulkan_vm::wait_upload(std::uint64_t value) {
  if (!impl_) throw octo::error("octo: vulkan_vm::wait_upload before boot");
  impl_->wait_upload(value);
}
std::uint64_t vulkan_vm::completed_compute() const {
  if (!impl_ || !impl_->dev) throw octo::error("octo: vulkan_vm::completed_compute before boot");
  return impl_->counter(impl_->compute_timeline);
}
std::uint64_t vulkan_vm::completed_upload() const {
  if (!impl_ || !impl_->dev) throw octo::error("octo: vulkan_vm::completed_upload before boot");
  return impl_->counter(impl_->transfer_timeline);
}

void vulkan_vm::write(std::string_view buffer, std::span<const float> values, std::uint32_t instance) {
  if (!impl_) throw octo::error("octo: vulkan_vm::write before boot");
  impl_->write_f32(buffer, values, instance);
}
void vulkan_vm::write(std::int32_t id, std::span<const float> values, std::uint32_t instance) {
  if (!impl_) throw octo::error("octo: vulkan_vm::write before boot");
  impl_->write_f32(impl_->name_of(id, instance), values, instance);
}
void vulkan_vm::write_bytes(std::string_view buffer, std::span<const std::byte> bytes, std::uint32_t instance) {
  if (!impl_) throw octo::error("octo: vulkan_vm::write_bytes before boot");
  impl_->write_bytes(buffer, bytes, instance);
}
std::vector<float> vulkan_vm::read_f32(std::string_view buffer, std::uint32_t instance) {
  if (!impl_) throw octo::error("octo: vulkan_vm::read_f32 before boot");
  return impl_->read_f32(buffer, instance);
}
std::vector<float> vulkan_vm::read_f32(std::int32_t id, std::uint32_t instance) {
  if (!impl_) throw octo::error("octo: vulkan_vm::read_f32 before boot");
  return impl_->read_f32(impl_->name_of(id, instance), instance);
}
std::vector<std::byte> vulkan_vm::read_bytes(std::string_view buffer, std::uint32_t instance) {
  if (!impl_) throw octo::error("octo: vulkan_vm::read_bytes before boot");
  return impl_->read_bytes(buffer, instance);
}

void vulkan_vm::write_register(std::uint32_t instance, std::uint32_t reg, std::span<const float> values) {
  if (!impl_) throw octo::error("octo: vulkan_vm::write_register before boot");
  impl_->check_register(instance, reg, values.size());
  auto addr = impl_->register_address(instance, reg);
  impl_->upload(impl_->registers.buffer, impl_->registers.offset + (addr - impl_->registers.address), values.data(),
                values.size_bytes());
}
std::vector<float> vulkan_vm::read_register(std::uint32_t instance, std::uint32_t reg, std::size_t count) {
  if (!impl_) throw octo::error("octo: vulkan_vm::read_register before boot");
  impl_->check_register(instance, reg, count);
  auto addr = impl_->register_address(instance, reg);
  std::vector<float> out(count);
  impl_->download(impl_->registers.buffer, impl_->registers.offset + (addr - impl_->registers.address), out.data(),
                  count * 4);
  return out;
}

void vulkan_vm::set_position(std::uint32_t pos, std::uint32_t n_tokens) {
  if (!impl_ || !impl_->dev) throw octo::error("octo: vulkan_vm::set_position before boot");
  impl_->finish_pending();  // the GPU may still read the record
  globals_record g;
  g.pos = pos;
  g.n_tokens = n_tokens;
  std::memcpy(impl_->globals.mapped, &g, sizeof g);
}

void vulkan_vm::execute() {
  if (!impl_) throw octo::error("octo: vulkan_vm::execute before boot");
  impl_->check_usable("execute");
  if (impl_->programs.empty() || !impl_->programs[0]) throw octo::error("octo: vulkan_vm::execute before load");
  impl_->execute(0);
}

void vulkan_vm::set_timeout(std::uint32_t ms) {
  if (!impl_) throw octo::error("octo: vulkan_vm::set_timeout before boot");
  impl_->options.timeout_ms = ms;
}

layer_metrics vulkan_vm::metrics(std::uint32_t instance) const {
  if (!impl_ || !impl_->dev) throw octo::error("octo: vulkan_vm::metrics before boot");
  if (instance >= impl_->options.instances)
    throw octo::error("octo: no instance " + std::to_string(instance) + " (" + std::to_string(impl_->options.instances) + " booted)");
  impl_->finish_pending();
  const auto* m = reinterpret_cast<const float*>(impl_->metrics.mapped) + std::size_t{instance} * metrics_floats;
  layer_metrics r;
  r.activation_norm = m[0];
  r.max_abs = m[1];
  r.compute_ticks = m[2];
  r.memory_used = m[3];
  r.layer_idx = m[4];
  r.status_flags = static_cast<std::uint32_t>(m[5]);
  r.has_nan = m[6] != 0.0f;
  r.has_inf = m[7] != 0.0f;
  return r;
}

float vulkan_vm::scale_factor(std::uint32_t instance) const {
  if (!impl_ || !impl_->dev) throw octo::error("octo: vulkan_vm::scale_factor before boot");
  if (instance >= impl_->options.instances) throw octo::error("octo: no instance " + std::to_string(instance));
  impl_->finish_pending();
  return reinterpret_cast<const float*>(impl_->control.mapped)[std::size_t{instance} * control_floats];
}

vulkan_stats vulkan_vm::stats() const {
  vulkan_stats s;
  if (!impl_ || !impl_->dev) return s;
  const auto& ps = impl_->programs;
  return impl_->stats_of(!ps.empty() && ps[0] ? ps[0].get() : nullptr);
}

vulkan_device_facts vulkan_vm::device() const {
  if (!impl_ || !impl_->dev) throw octo::error("octo: vulkan_vm::device before boot");
  const auto& d = *impl_->dev;
  const auto& f = d.facts();
  vulkan_device_facts r;
  r.name = d.entry().name;
  r.type = d.entry().type;
  r.subgroup_size = f.subgroup_size;
  r.subgroup_arithmetic = f.subgroup_arithmetic;
  r.subgroup_shuffle = f.subgroup_shuffle;
  r.float16_arithmetic = f.float16_arithmetic;
  r.int8_arithmetic = f.int8_arithmetic;
  r.storage_8bit = f.storage_8bit;
  r.storage_16bit = f.storage_16bit;
  r.timeline_semaphores = d.timeline_semaphores();
  r.buffer_device_address = f.buffer_device_address;
  r.cooperative_matrix_nv = f.cooperative_matrix_nv;
  r.separate_transfer_queue = d.transfer_family().has_value();
  r.max_push_constants = f.max_push_constants;
  r.max_shared_memory = f.max_shared_memory;
  r.max_allocation_size = d.max_allocation_size();
  return r;
}

std::vector<task_profile> vulkan_vm::profile() const {
  if (!impl_ || !impl_->dev) throw octo::error("octo: vulkan_vm::profile before boot");
  if (!impl_->last_run) return {};
  return impl_->profile(*impl_->last_run);
}

void vulkan_vm::shutdown() {
  if (impl_) impl_->release();
}

}  // namespace octo::vm
