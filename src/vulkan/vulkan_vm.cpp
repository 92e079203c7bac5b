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
};

struct instance_state {
  ir::program program;
  std::vector<placed> buffers;   // by buffer id
  std::vector<allocation> owned; // freed on reload
  std::map<std::string, std::int32_t, std::less<>> by_name;
};

/// A task's pair of timestamps in the profiling query pool (queries 2q and 2q+1).
struct profile_slot {
  std::int32_t task = 0;
  std::uint32_t instance = 0;
  std::string opcode, output;
  std::uint32_t query = 0;
};

bool env_profile() {
  const char* v = std::getenv("OCTO_PROFILE");
  return v && *v && std::string_view(v) != "0";
}

}  // namespace

struct vulkan_vm::impl {
  vulkan_options options;
  std::unique_ptr<vulkan::device> dev;
  std::unique_ptr<device_memory> memory;
  std::unique_ptr<vulkan::pipelines> pipes;
  vk::raii::CommandPool pool{nullptr};
  vk::raii::CommandBuffer program_cb{nullptr};
  vk::raii::CommandBuffer transfer_cb{nullptr};
  vk::raii::Fence fence{nullptr};
  vk::raii::Fence transfer_fence{nullptr};

  allocation registers, metrics, control, globals, staging;
  std::vector<instance_state> instances;
  bool loaded = false;
  bool pending = false;  // a submit whose fence has not been seen signalled (after a timeout)
  bool lost = false;
  vulkan_stats st;

  // Profiling (vulkan_options::profile / OCTO_PROFILE): nothing of this exists when it is off.
  bool profiling = false;
  double ns_per_tick = 1.0;
  std::uint64_t timestamp_mask = ~std::uint64_t{0};
  vk::raii::QueryPool queries{nullptr};
  std::vector<profile_slot> slots;
  bool profiled_run = false;  // an execute since the last recording

  ~impl() { release(); }

  void release() {
    if (dev) {
      try {
        dev->logical().waitIdle();
      } catch (...) {
      }
    }
    program_cb = nullptr;
    transfer_cb = nullptr;
    queries = nullptr;
    slots.clear();
    profiled_run = false;
    pool = nullptr;
    fence = nullptr;
    transfer_fence = nullptr;
    pipes.reset();
    instances.clear();
    memory.reset();
    dev.reset();
    loaded = false;
    pending = false;
  }

  void check_usable(const char* what) const {
    if (!dev) throw octo::error(std::string("octo: vulkan_vm::") + what + " before boot");
    if (lost) throw octo::error(std::string("octo: vulkan_vm::") + what + ": the Vulkan device was lost earlier");
  }

  std::uint64_t register_bytes() const { return std::uint64_t{options.register_floats} * 4; }
  std::uint64_t register_address(std::uint32_t inst, std::uint32_t reg) const {
    return registers.address + (std::uint64_t{inst} * register_count + reg) * register_bytes();
  }

  // ---- host <-> device ------------------------------------------------------------------------
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

  void finish_pending() {
    if (!pending) return;
    wait(fence, "the previous execute");
    pending = false;
  }

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
    } catch (const vk::DeviceLostError&) {
      lost = true;
      throw octo::error(std::string("octo: the Vulkan device was lost during ") + what);
    } catch (...) {
      rethrow_vulkan(what);
    }
    wait(transfer_fence, what);
  }

  void upload(std::uint64_t dst_address_unused, vk::Buffer dst, std::uint64_t dst_offset, const void* src,
              std::uint64_t bytes) {
    (void)dst_address_unused;
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
      vk::raii::CommandBuffers cbs(d, vk::CommandBufferAllocateInfo(*pool, vk::CommandBufferLevel::ePrimary, 2));
      program_cb = std::move(cbs[0]);
      transfer_cb = std::move(cbs[1]);
      fence = vk::raii::Fence(d, vk::FenceCreateInfo());
      transfer_fence = vk::raii::Fence(d, vk::FenceCreateInfo());
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

  // ---- load -------------------------------------------------------------------------------------
  void place(instance_state& is, std::uint32_t inst) {
    const auto& p = is.program;
    is.buffers.assign(p.buffers.size(), {});
    for (const auto& b : p.buffers) {
      auto& pl = is.buffers[static_cast<std::size_t>(b.id)];
      pl.bytes = static_cast<std::uint64_t>(b.nbytes());
      is.by_name.emplace(b.name.str(), b.id);
      std::string label = b.name.str();
      if (options.instances > 1) label = "instance " + std::to_string(inst) + " " + label;
      if (auto r = register_index(b.name)) {
        if (b.kind == ir::buffer_kind::weight || b.kind == ir::buffer_kind::constant ||
            b.kind == ir::buffer_kind::kv_cache)
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
      auto a = memory->allocate(label, std::max<std::uint64_t>(pl.bytes, 4), memory_class::device_local);
      is.owned.push_back(a);
      pl.address = a.address;
      pl.buffer = a.buffer;
      pl.offset = a.offset;
      pl.binding = binding;
    }
  }

  void load(std::span<const ir::program> programs) {
    check_usable("load");
    if (programs.empty()) throw octo::error("octo: vulkan_vm::load needs at least one program");
    if (programs.size() > options.instances)
      throw octo::error("octo: " + std::to_string(programs.size()) + " programs but the VM was booted with " +
                        std::to_string(options.instances) + " instances");
    for (std::size_t i = 0; i < programs.size(); ++i) {
      auto r = octo::ir::validate(programs[i]);
      if (!r.ok) {
        std::string first = r.errors.empty() ? std::string("(no detail)") : r.errors.front().str();
        throw octo::error("octo: program " + std::to_string(i) + " refused (validate found " +
                          std::to_string(r.errors.size()) + " errors): " + first);
      }
    }
    finish_pending();
    try {
      dev->logical().waitIdle();
    } catch (...) {
      rethrow_vulkan("waiting for the device before a load");
    }
    unload();
    try {
      instances.resize(programs.size());
      for (std::size_t i = 0; i < programs.size(); ++i) {
        instances[i].program = programs[i];
        place(instances[i], static_cast<std::uint32_t>(i));
      }
      // Zero every placed buffer (and the registers: a new program starts from a clean machine).
      one_shot(
          [&](const vk::raii::CommandBuffer& cb) {
            cb.fillBuffer(registers.buffer, registers.offset, registers.size / 4 * 4, 0);
            for (auto& is : instances)
              for (auto& a : is.owned) cb.fillBuffer(a.buffer, a.offset, (a.size + 3) / 4 * 4, 0);
          },
          "zeroing the program's buffers");
      std::memset(metrics.mapped, 0, std::uint64_t{options.instances} * metrics_floats * 4);
      reset_control();
      auto* m = reinterpret_cast<float*>(metrics.mapped);
      for (std::size_t i = 0; i < instances.size(); ++i) {
        std::uint64_t weights = 0;
        for (const auto& b : instances[i].program.buffers)
          if (b.kind == ir::buffer_kind::weight) weights += static_cast<std::uint64_t>(b.nbytes());
        m[i * metrics_floats + 3] = static_cast<float>(weights);  // memory_used
        m[i * metrics_floats + 4] = static_cast<float>(i);        // layer_idx
      }
      record();
      loaded = true;
    } catch (...) {
      unload();
      throw;
    }
  }

  void unload() {
    loaded = false;
    for (auto& is : instances)
      for (auto& a : is.owned) memory->free(a);
    instances.clear();
  }

  // ---- recording ---------------------------------------------------------------------------------
  void record() {
    const auto& facts = dev->facts();
    std::uint64_t barriers = 0, dispatches = 0, task_dispatches = 0;
    bool dirty = false;  // a dispatch since the last barrier
    vk::Pipeline bound;
    auto& cb = program_cb;

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

    slots.clear();
    profiled_run = false;
    std::uint32_t query_capacity = 0;
    if (profiling) {
      for (const auto& is : instances) query_capacity += 2 * static_cast<std::uint32_t>(is.program.tasks.size());
      query_capacity = std::max<std::uint32_t>(query_capacity, 2);
      try {
        queries = vk::raii::QueryPool(dev->logical(), vk::QueryPoolCreateInfo({}, vk::QueryType::eTimestamp, query_capacity));
      } catch (...) {
        rethrow_vulkan("creating the profiling query pool");
      }
    }

    try {
      cb.reset();
      cb.begin(vk::CommandBufferBeginInfo());
      if (profiling) cb.resetQueryPool(*queries, 0, query_capacity);
      // Host writes (globals record, control) and transfers before this submit -> kernels.
      {
        vk::MemoryBarrier mb(vk::AccessFlagBits::eHostWrite | vk::AccessFlagBits::eTransferWrite,
                             vk::AccessFlagBits::eShaderRead | vk::AccessFlagBits::eShaderWrite);
        cb.pipelineBarrier(vk::PipelineStageFlagBits::eHost | vk::PipelineStageFlagBits::eTransfer,
                           vk::PipelineStageFlagBits::eComputeShader, {}, mb, {}, {});
      }
      std::uint32_t n_inst = static_cast<std::uint32_t>(instances.size());
      for (std::uint32_t i = 0; i < n_inst; ++i) {
        auto& is = instances[i];
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
          task_context ctx{p, t, addresses, globals.address, facts};
          const kernel_launch launch = planner(ctx);
          if (profiling && !launch.shader.empty()) {
            // Serialized: the barrier makes the first stamp the end of everything before this task.
            barrier();
            profile_slot slot;
            slot.task = t.id;
            slot.instance = i;
            slot.opcode = std::string(ir::name(t.op));
            if (!t.outputs.empty()) slot.output = p.buffers[static_cast<std::size_t>(t.outputs.front())].name.str();
            slot.query = static_cast<std::uint32_t>(slots.size());
            cb.writeTimestamp(vk::PipelineStageFlagBits::eBottomOfPipe, *queries, 2 * slot.query);
            const bool dispatched = dispatch(launch, who);
            cb.writeTimestamp(vk::PipelineStageFlagBits::eBottomOfPipe, *queries, 2 * slot.query + 1);
            if (dispatched) {
              ++task_dispatches;
              slots.push_back(std::move(slot));
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
      // Kernels -> host reads of the host-visible records and later transfers.
      vk::MemoryBarrier mb(vk::AccessFlagBits::eShaderWrite,
                           vk::AccessFlagBits::eHostRead | vk::AccessFlagBits::eTransferRead);
      cb.pipelineBarrier(vk::PipelineStageFlagBits::eComputeShader,
                         vk::PipelineStageFlagBits::eHost | vk::PipelineStageFlagBits::eTransfer, {}, mb, {}, {});
      cb.end();
    } catch (const octo::error&) {
      throw;
    } catch (...) {
      rethrow_vulkan("recording the program's command buffer");
    }
    st.barriers = barriers;
    st.dispatches = dispatches;
    st.task_dispatches = task_dispatches;
    ++st.recordings;
  }

  // ---- execute ----------------------------------------------------------------------------------
  void execute() {
    check_usable("execute");
    if (!loaded) throw octo::error("octo: vulkan_vm::execute before load");
    finish_pending();
    try {
      dev->logical().resetFences({*fence});
      vk::CommandBuffer cb = *program_cb;
      dev->compute_queue().submit(vk::SubmitInfo({}, {}, cb), *fence);
    } catch (const vk::DeviceLostError&) {
      lost = true;
      throw octo::error("octo: the Vulkan device was lost submitting the program");
    } catch (...) {
      rethrow_vulkan("submitting the program");
    }
    ++st.submits;
    pending = true;
    wait(fence, "execute");
    pending = false;
    profiled_run = profiling;
  }

  std::vector<task_profile> profile() {
    std::vector<task_profile> out;
    if (!profiling || !profiled_run || slots.empty()) return out;
    finish_pending();
    const auto n = static_cast<std::uint32_t>(2 * slots.size());
    std::vector<std::uint64_t> ticks;
    try {
      auto r = queries.getResults<std::uint64_t>(0, n, n * sizeof(std::uint64_t), sizeof(std::uint64_t),
                                                 vk::QueryResultFlagBits::e64 | vk::QueryResultFlagBits::eWait);
      ticks = std::move(r.second);
    } catch (...) {
      rethrow_vulkan("reading the profiling timestamps");
    }
    out.reserve(slots.size());
    for (const auto& s : slots) {
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

  // ---- buffers by name ----------------------------------------------------------------------------
  const placed& find(std::string_view name, std::uint32_t inst, const ir::buffer** info) {
    check_usable("read/write");
    if (!loaded) throw octo::error("octo: no program loaded (buffer '" + std::string(name) + "')");
    if (inst >= instances.size())
      throw octo::error("octo: instance " + std::to_string(inst) + " has no program (" +
                        std::to_string(instances.size()) + " loaded)");
    auto& is = instances[inst];
    auto it = is.by_name.find(name);
    if (it == is.by_name.end()) throw octo::error("octo: the program has no buffer named '" + std::string(name) + "'");
    *info = &is.program.buffers[static_cast<std::size_t>(it->second)];
    return is.buffers[static_cast<std::size_t>(it->second)];
  }
  std::string name_of(std::int32_t id, std::uint32_t inst) {
    if (inst >= instances.size() || id < 0 || static_cast<std::size_t>(id) >= instances[inst].program.buffers.size())
      throw octo::error("octo: no buffer with id " + std::to_string(id));
    return instances[inst].program.buffers[static_cast<std::size_t>(id)].name.str();
  }

  void write_bytes(std::string_view name, std::span<const std::byte> bytes, std::uint32_t inst) {
    const ir::buffer* b = nullptr;
    const auto& pl = find(name, inst, &b);
    if (bytes.size() != pl.bytes)
      throw octo::error("octo: buffer '" + std::string(name) + "' holds " + std::to_string(pl.bytes) + " bytes, got " +
                        std::to_string(bytes.size()));
    upload(pl.address, pl.buffer, pl.offset, bytes.data(), bytes.size());
  }
  void write_f32(std::string_view name, std::span<const float> v, std::uint32_t inst) {
    const ir::buffer* b = nullptr;
    find(name, inst, &b);
    if (b->dtype != ir::dtype::f32)
      throw octo::error("octo: buffer '" + std::string(name) + "' is " + std::string(ir::name(b->dtype)) +
                        ", not F32 (use write_bytes)");
    write_bytes(name, std::as_bytes(v), inst);
  }
  std::vector<std::byte> read_bytes(std::string_view name, std::uint32_t inst) {
    const ir::buffer* b = nullptr;
    const auto& pl = find(name, inst, &b);
    std::vector<std::byte> out(pl.bytes);
    download(pl.buffer, pl.offset, out.data(), out.size());
    return out;
  }
  std::vector<float> read_f32(std::string_view name, std::uint32_t inst) {
    const ir::buffer* b = nullptr;
    find(name, inst, &b);
    if (b->dtype != ir::dtype::f32)
      throw octo::error("octo: buffer '" + std::string(name) + "' is " + std::string(ir::name(b->dtype)) +
                        ", not F32 (use read_bytes)");
    auto bytes = read_bytes(name, inst);
    std::vector<float> out(bytes.size() / 4);
    std::memcpy(out.data(), bytes.data(), out.size() * 4);
    return out;
  }

  void check_register(std::uint32_t inst, std::uint32_t reg, std::size_t count) {
    check_usable("register access");
    if (inst >= options.instances || reg >= register_count || count > options.register_floats)
      throw octo::error("octo: register R" + std::to_string(reg) + " of instance " + std::to_string(inst) + " (" +
                        std::to_string(count) + " floats) is outside the " + std::to_string(options.instances) +
                        " instances x 32 registers x " + std::to_string(options.register_floats) + " floats");
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
  impl_->upload(addr, impl_->registers.buffer, impl_->registers.offset + (addr - impl_->registers.address),
                values.data(), values.size_bytes());
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
  impl_->execute();
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
  s = impl_->st;
  s.validation_messages = impl_->dev->validation_messages();
  auto m = impl_->memory->stats();
  s.memory_in_use = m.in_use;
  s.memory_budget = m.budget;
  s.memory_blocks = m.blocks;
  s.memory_block_bytes = m.block_bytes;
  s.largest_free_block = m.largest_free;
  s.fragmentation = m.fragmentation;
  s.pipelines = impl_->pipes->size();
  s.pipeline_cache_loaded = impl_->pipes->cache_loaded();
  return s;
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
  return impl_->profile();
}

void vulkan_vm::shutdown() {
  if (impl_) impl_->release();
}

}  // namespace octo::vm
