// The Vulkan VM's state (vulkan_vm::impl) and the records it keeps, shared by the files of its concerns:
// vulkan_vm.cpp (boot, waiting, the public face), vm_placement.cpp, vm_recording.cpp, vm_transfers.cpp,
// vm_host_io.cpp.
#pragma once

#include "octo/vm/vulkan_vm.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

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

namespace vm_detail {

constexpr std::uint32_t register_count = 32;
constexpr std::uint32_t metrics_floats = 8;  // per instance (regulator.comp)
constexpr std::uint32_t control_floats = 4;  // per instance

inline std::optional<std::uint32_t> register_index(std::string_view name) {
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

/// The greedy token loop of one decode program (vm_token_loop.cpp): the tail command buffer submitted
/// after the program's own (shaders/vm_token_loop.comp), the ring of tokens it writes, and the steps
/// whose token the host has not read yet, oldest first.
struct token_loop_state {
  vk::raii::CommandBuffer tail{nullptr};
  allocation ring;  // readback memory: ring_slots i32, slot = position % ring_slots
  std::uint32_t ring_slots = 0;
  struct step {
    std::uint64_t value = 0;  // compute-timeline value its submit signals
    std::uint32_t slot = 0;
  };
  std::deque<step> unread;
};

/// One program: a chain of instances (load(span)) or one (add_program), with its recorded command buffer.
struct program_state {
  std::vector<instance_state> instances;
  vk::raii::CommandBuffer cb{nullptr};
  std::unique_ptr<token_loop_state> loop;  // enable_token_loop
  vk::raii::QueryPool queries{nullptr};
  std::vector<profile_slot> slots;
  bool profiled_run = false;  // submitted since it was recorded
  std::uint64_t dispatches = 0, task_dispatches = 0, exclusive_dispatches = 0, indirect_dispatches = 0, barriers = 0,
                submits = 0;
  // Layer statistics (shaders/vm_observe.comp): the observed layers in record order, the table the
  // observer reads ({address, values, layer} each), the readback ring it writes and its workgroups'
  // partials (with a counter per layer).
  std::vector<std::int32_t> observed_layers;
  allocation observe_table, observe_ring, observe_partials;
  // Control words: the layers recorded with gates, and whether each can be bypassed (ir::layer_spans).
  std::vector<std::pair<std::int32_t, bool>> gated_layers;
  // The weights' f16 copies its kernels read (weight_copies_for), by shared name: the ones a run checks
  // for staleness (a decode program reads none, so its per-token submits check nothing).
  std::vector<std::string> weight_copies;
};

/// The shared buffer that holds the f16 copy of the shared weight `weight` ('#' is in no IR buffer name).
inline std::string weight_copy_name(std::string_view weight) { return "#f16 copy " + std::string(weight); }

/// A WEIGHT / CONST / KV_CACHE buffer shared by name between programs, or the shared scratch, or a
/// weight's f16 copy (weight_copies_for).
struct shared_buffer {
  allocation a;
  std::uint64_t bytes = 0;
  ir::buffer_kind kind{};
  std::uint32_t users = 0;
  // A weight's f16 copy: `fill` rewrites it from the weight at `source` (of `source_bytes`); stale until
  // it ran, and again after a host write into the weight (write_placed).
  std::optional<kernel_launch> fill;
  std::uint64_t source = 0, source_bytes = 0;
  bool stale = false;
  bool written = false;  // a host write reached it since it was placed (a weight: its copy is worth filling)
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

inline bool env_profile() {
  const char* v = std::getenv("OCTO_PROFILE");
  return v && *v && std::string_view(v) != "0";
}

// OCTO_INDIRECT=0 records launches with a device-computed group count (kernel_launch::indirect) as
// direct dispatches of their largest count: the comparison for benchmarks and tests.
inline bool env_indirect() {
  const char* v = std::getenv("OCTO_INDIRECT");
  if (!v || !*v || std::string_view(v) == "1") return true;
  if (std::string_view(v) == "0") return false;
  throw octo::error("octo: OCTO_INDIRECT must be 0 or 1, not '" + std::string(v) + "'");
}

// OCTO_PRECISION=fast|accurate overrides vulkan_options::precision (benchmarks and tests).
inline matmul_precision env_precision(matmul_precision given) {
  const char* v = std::getenv("OCTO_PRECISION");
  if (!v || !*v) return given;
  const std::string_view s(v);
  if (s == "fast") return matmul_precision::fast;
  if (s == "accurate") return matmul_precision::accurate;
  throw octo::error("octo: OCTO_PRECISION must be fast or accurate, not '" + std::string(s) + "'");
}

// Submits `cbs` (in order) on `queue`, signalling the timeline `signal_sem` to `signal_value`; when `wait_value` is
// nonzero it first waits (all commands) for the timeline `wait_sem` to reach it. Program runs wait for
// uploads this way and uploads for the compute that last used their slot.
inline void submit_on_timelines(const vk::raii::Queue& queue, std::span<const vk::CommandBuffer> cbs,
                                vk::Semaphore wait_sem, std::uint64_t wait_value, vk::Semaphore signal_sem,
                                std::uint64_t signal_value) {
  const vk::PipelineStageFlags wait_stage = vk::PipelineStageFlagBits::eAllCommands;
  vk::TimelineSemaphoreSubmitInfo tsi;
  vk::SubmitInfo si;
  si.setCommandBufferCount(static_cast<std::uint32_t>(cbs.size()));
  si.setPCommandBuffers(cbs.data());
  si.setSignalSemaphores(signal_sem);
  tsi.setSignalSemaphoreValues(signal_value);
  if (wait_value > 0) {
    si.setWaitSemaphores(wait_sem);
    si.setWaitDstStageMask(wait_stage);
    tsi.setWaitSemaphoreValues(wait_value);
  }
  si.pNext = &tsi;
  queue.submit(si);
}

inline bool shared_kind(ir::buffer_kind k) {
  return k == ir::buffer_kind::weight || k == ir::buffer_kind::constant || k == ir::buffer_kind::kv_cache;
}

}  // namespace vm_detail

using namespace vm_detail;

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
  // globals.pos as the host last wrote it (set_position) plus the token-loop steps submitted since: the
  // position the next loop step computes at.
  std::uint32_t position = 0;
  std::vector<upload_slot> upload_slots;

  allocation registers, metrics, control, globals, staging;
  allocation layer_control;  // the layers' skip words (vm_kernels.hpp layer_control_words), host-visible
  std::vector<std::unique_ptr<program_state>> programs;  // by program_id; null once removed
  std::map<std::string, shared_buffer, std::less<>> shared;
  std::map<std::string, region_state, std::less<>> regions;
  std::map<std::uint32_t, pinned_state> pinned_blocks;
  std::uint32_t next_pinned = 1;
  std::optional<program_id> last_run;
  bool pending = false;  // fence path: a submit whose fence has not been seen signalled (after a timeout)
  bool lost = false;
  vulkan_stats st;

  // Keeping the clock up while a model loads (vm_keep_awake.cpp; nothing of it exists until asked for).
  // queue_mutex: the keep-awake thread holds it while it submits, the host while the device waits idle
  // (vkDeviceWaitIdle needs every queue of the device externally synchronized).
  std::mutex queue_mutex;
  std::thread awake_thread;
  std::atomic<bool> awake_run{false};
  std::uint32_t awake_holds = 0;
  vk::raii::CommandPool awake_pool{nullptr};
  vk::raii::CommandBuffer awake_cb{nullptr};
  vk::raii::Fence awake_fence{nullptr};
  allocation awake_sink;

  // Profiling (vulkan_options::profile / OCTO_PROFILE): nothing of this exists when it is off.
  bool profiling = false;
  double ns_per_tick = 1.0;
  std::uint64_t timestamp_mask = ~std::uint64_t{0};

  ~impl() { release(); }

  void release();

  void check_usable(const char* what) const;
  bool timeline() const { return dev->timeline_semaphores(); }
  void need_timeline(const char* what) const;

  std::uint64_t register_bytes() const { return std::uint64_t{options.register_floats} * 4; }
  std::uint64_t register_address(std::uint32_t inst, std::uint32_t reg) const;

  // ---- waiting (vulkan_vm.cpp) ----------------------------------------------------------------------
  void wait(const vk::raii::Fence& f, const char* what);

  void wait_timeline(const vk::raii::Semaphore& sem, std::uint64_t value, const std::string& what);

  std::uint64_t counter(const vk::raii::Semaphore& sem) const;

  void wait_compute(std::uint64_t v);
  void wait_upload(std::uint64_t v);

  /// Before the host touches memory a program may use: every submitted program has finished.
  void finish_pending();
  /// vkDeviceWaitIdle with the keep-awake queue's submissions held off; `what` names the caller in errors.
  void wait_device_idle(const char* what);

  // ---- keep-awake (vm_keep_awake.cpp) ---------------------------------------------------------------
  bool keep_awake(bool on);
  void awake_loop();
  void stop_awake();
  void free_awake_objects();  // its command buffer, fence and sink; the work stopped and finished

  // ---- host <-> device (staging) (vm_transfers.cpp) -------------------------------------------------
  static constexpr std::uint64_t staging_chunk = std::uint64_t{64} << 20;  // transfers larger than this loop

  std::byte* staging_for(std::uint64_t bytes);

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

  void upload(vk::Buffer dst, std::uint64_t dst_offset, const void* src, std::uint64_t bytes);

  void download(vk::Buffer src, std::uint64_t src_offset, void* dst, std::uint64_t bytes);

  // ---- boot (vulkan_vm.cpp) -------------------------------------------------------------------------
  void boot(const vulkan_options& o);

  void reset_control();
  void probe_coop_layout();  // device_facts::coop_mma_layout (vulkan_vm.cpp)
  void write_precision_mode();
  void set_layer_skipped(std::int32_t layer, bool skipped);
  void set_precision(matmul_precision p);

  // ---- placing a program's buffers (vm_placement.cpp) -----------------------------------------------
  // `share`: WEIGHT / CONST / KV_CACHE buffers come from (or go into) the shared map. `fresh` collects
  // allocations made here (to be zeroed), `fresh_shared` the names added to the shared map.
  void place(instance_state& is, std::uint32_t inst, bool share, std::span<const buffer_placement> placements,
             std::vector<allocation>& fresh, std::vector<std::string>& fresh_shared);

  /// A task's weight copies' addresses (task_context::weight_copy_address).
  using task_copies = std::array<std::uint64_t, vulkan::kMaxWeightCopies>;

  /// The shared scratch the program's kernels ask for (kernel_launch::shared_scratch_bytes), as each
  /// task's address (0: none). The tasks of one wavefront (barrier_plan.hpp) run together and get parts
  /// of their own; wavefronts reuse it. The smallest one already made for another program that is large
  /// enough, else a new one where the memory leaves room; none (all 0) when nothing asks or there is no
  /// room (the planners then keep their direct launches). Counted as a shared buffer of the program's
  /// first instance, freed with its last user. Programs never overlap on the device (each begins with a
  /// barrier), so one scratch serves them all. A task asking for transient scratch too (kernel_launch::
  /// transient_scratch_bytes) gets a second part of its own in the same wavefront.
  struct scratch_parts {
    std::uint64_t shared = 0, transient = 0;  // task_context::shared_scratch_address, transient_scratch_address
  };
  std::vector<std::vector<scratch_parts>> shared_scratch_for(program_state& ps,
                                                              const std::vector<std::vector<barrier_step>>& steps,
                                                              const std::vector<std::vector<task_copies>>& copies);

  /// The f16 copies of resident quantized weights the program's kernels ask for (kernel_launch::
  /// weight_copies), as each task's copy addresses (0: none). A copy is a shared buffer named
  /// weight_copy_name(weight), made once, read by every program that reads the weight and freed with
  /// the weight (not with the program: a prefill program of another length finds it again). The program's
  /// new copies are made all together where a quarter of the free memory covers them, else none
  /// (OCTO_WEIGHT_COPIES=0: never; =1: always). Weights in regions (streamed layers) get none. New
  /// copies of weights already written are filled here; the others at their weight's first write.
  std::vector<std::vector<task_copies>> weight_copies_for(program_state& ps);
  /// Runs the fills of the program's stale copies before a run (a weight never written, or a write that failed).
  void refresh_weight_copies(const program_state& ps);
  /// Runs the copies' fills in one one-shot command buffer; they are fresh after it.
  void fill_weight_copies(std::span<shared_buffer* const> copies);
  /// Binds `l`'s pipeline and push constants and records its dispatch into `cb`.
  void record_launch(const vk::raii::CommandBuffer& cb, const kernel_launch& l);
  /// Records `l`'s push constants (padded to whole words) into `cb`.
  void push_constants(const vk::raii::CommandBuffer& cb, const kernel_launch& l);

  void release_instance(instance_state& is);

  void release_program(program_state& ps);

  static void validate_program(const ir::program& p, const std::string& which);

  void zero(const std::vector<allocation>& fresh, bool registers_too);

  void load(std::span<const ir::program> progs);

  program_id add_program(const ir::program& p, std::span<const buffer_placement> placements);

  void remove_program(program_id id);

  std::size_t program_count() const;

  void unload();

  program_state& program(program_id id, const char* what);
  const program_state& program(program_id id, const char* what) const;

  // ---- recording (vm_recording.cpp) -----------------------------------------------------------------
  void record(program_state& ps);

  // ---- running (vm_recording.cpp) -------------------------------------------------------------------
  std::uint64_t submit(program_id id, std::uint64_t after_upload);

  void execute(program_id id);

  std::vector<task_profile> profile(program_id id);
  std::vector<layer_stats> observed_stats(program_id id, std::uint32_t position);

  // ---- the greedy token loop (vm_token_loop.cpp) -----------------------------------------------------
  void enable_token_loop(program_id id, std::uint32_t ring_slots);
  std::uint64_t submit_token_step(program_id id);
  std::int32_t token_step_result(program_id id, std::uint64_t value);

  // ---- streaming (vm_transfers.cpp) -----------------------------------------------------------------
  std::vector<std::uint32_t> sharing_families() const;

  void create_region(std::string_view name, std::uint64_t bytes);

  const region_state& region(std::string_view name, const char* what) const;

  vulkan_vm::pinned allocate_pinned(std::uint64_t bytes);

  void free_pinned(std::uint32_t id);

  std::uint64_t upload_async(std::uint32_t src, std::uint64_t src_offset, std::string_view region_name,
                             std::uint64_t dst_offset, std::uint64_t bytes, std::uint64_t after_compute);

  // ---- buffers by name (vm_host_io.cpp) -------------------------------------------------------------
  const placed& find(std::string_view name, std::uint32_t inst, const ir::buffer** info);
  const placed& find(program_id id, std::string_view name, const ir::buffer** info);
  static const placed& find_in(instance_state& is, std::string_view name, const ir::buffer** info);
  std::string name_of(std::int32_t id, std::uint32_t inst);

  void write_placed(const placed& pl, std::string_view name, std::span<const std::byte> bytes);
  void read_placed(const placed& pl, std::span<std::byte> dst, std::uint64_t from = 0);
  static void require_f32(const ir::buffer* b, std::string_view name, const char* use);
  static std::vector<float> as_floats(const std::vector<std::byte>& bytes);

  void write_bytes(std::string_view name, std::span<const std::byte> bytes, std::uint32_t inst);
  void write_f32(std::string_view name, std::span<const float> v, std::uint32_t inst);
  std::vector<std::byte> read_bytes(std::string_view name, std::uint32_t inst);
  std::vector<float> read_f32(std::string_view name, std::uint32_t inst);

  void check_register(std::uint32_t inst, std::uint32_t reg, std::size_t count);

  vulkan_stats stats_of(const program_state* ps) const;
};

}  // namespace octo::vm
