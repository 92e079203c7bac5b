// The Vulkan VM (seeds/000): boot a device, load IR programs as one recorded command buffer, write and
// read buffers and registers, execute with one submit per pass. No Vulkan types here (pimpl).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "octo/ir/program.hpp"

namespace octo::vm {

enum class regulator_mode : std::uint8_t {
  observe,   // metrics only (the default)
  regulate,  // also writes the next instance's control.scale_factor toward target_norm
};

/// How a prefill's matrix products round (the precision contract, docs/precision.md).
enum class matmul_precision : std::uint8_t {
  /// The default. Where the device has cooperative matrices (tensor cores), GEMMs over many rows
  /// multiply f16-rounded factors and sum in f32: last-row logits within relative L2 5e-3 of `accurate`.
  /// Elsewhere (no cooperative matrices, F32 weights, decode's GEMVs) the same as `accurate`.
  fast,
  /// f32 products and sums everywhere (the SIMT kernels): every op within 1e-4 of the CPU reference VM.
  accurate,
};

struct vulkan_options {
  std::string device;                  // index or name substring; empty: $OCTO_DEVICE, then the best device
  std::uint64_t memory_budget = 0;     // bytes of device memory octo may use; 0: 90% of the device-local heap
  std::uint64_t block_size = 0;        // bytes per VkDeviceMemory block; 0: 256 MiB (clamped to the device)
  std::uint32_t instances = 1;         // VM instances: each has 32 registers and a metrics record
  std::uint32_t register_floats = 4096;
  std::uint32_t timeout_ms = 60000;    // execute() and transfers wait this long, then throw octo::error
  bool validation = false;             // Khronos validation layers (also OCTO_VALIDATION=1)
  regulator_mode regulator = regulator_mode::observe;
  float target_norm = 0.0f;            // the regulator's target L2 norm; 0: anomalies are only non-finite values
  std::string pipeline_cache_dir;      // empty: $XDG_CACHE_HOME/octo or ~/.cache/octo; "-": no disk cache
  /// GPU timestamps around every task dispatch (also OCTO_PROFILE=1); read them with profile(). Tasks
  /// are then serialized (a barrier before each), so each time is the kernel's own. Off: no cost at all.
  bool profile = false;
  matmul_precision precision = matmul_precision::fast;  // see matmul_precision (also OCTO_PRECISION=fast|accurate)
  /// Observe every layer's output at the end of each run of a program whose tasks carry layer indices
  /// (layer_statistics(id, position)): one extra dispatch per run. OCTO_LAYER_STATS=0 turns it off.
  bool observe_layers = true;
  /// Record the gates the control words drive (docs/vulkan.md "Control words"): every layer task as an
  /// indirect dispatch whose group count is zero while its layer is skipped (set_layer_skipped), plus a
  /// copy that carries the layer's input to its output meanwhile; GEMMs whose kernel depends on the
  /// precision recorded for both, one running per the precision word (set_precision). Both act between
  /// runs without recording again. Off (the default): none of it is recorded, and those calls refuse.
  bool control_words = false;
};

/// One task's GPU time in the last execute (vulkan_options::profile).
struct task_profile {
  std::int32_t task = 0;      // task id in its program
  std::uint32_t instance = 0; // chained instance (0 for single programs)
  std::string opcode;         // e.g. "GEMV_TILE"
  std::string output;         // name of the task's first output buffer ("" if none)
  double microseconds = 0.0;
};

/// One Vulkan physical device, as `list_vulkan_devices` reports it.
struct vulkan_device_info {
  std::uint32_t index = 0;
  std::string name;
  std::string type;  // discrete, integrated, virtual, cpu, other
  std::string api_version;
  std::uint64_t device_local_bytes = 0;
  bool suitable = false;
  std::string why_not;
};

/// Every Vulkan device the loader sees (throws octo::error when there is no loader).
std::vector<vulkan_device_info> list_vulkan_devices();

/// What the booted device supports (a copy of the kernels' device facts).
struct vulkan_device_facts {
  std::string name;
  std::string type;
  std::uint32_t subgroup_size = 0;
  bool subgroup_arithmetic = false, subgroup_shuffle = false;
  bool float16_arithmetic = false, int8_arithmetic = false;
  bool storage_8bit = false, storage_16bit = false;
  bool timeline_semaphores = false, buffer_device_address = false, cooperative_matrix_nv = false;
  bool cooperative_matrix_mma_layout = false;  // its elements held as NVIDIA's mma fragments (probed at boot)
  // Where the probe ran and found another order: the element (row * columns + column) each invocation
  // holds, "16x8 (length 4): l0 [e0 e1 e2 e3] l1 [...] ...; 16x16 (length 8): l0 [...] ...", for
  // adapting the kernels to it.
  std::string cooperative_matrix_layout;
  bool int_dot = false, int_dot_accelerated = false;  // packed int8 dot products; the hardware runs them
  bool separate_transfer_queue = false;
  bool spare_compute_queue = false;  // a second compute queue: keep_awake's work can run
  std::uint32_t max_push_constants = 0, max_shared_memory = 0;
  std::uint64_t max_allocation_size = 0;
};

/// Per-instance telemetry the regulator writes (seeds/000 LayerMetrics).
struct layer_metrics {
  float activation_norm = 0, max_abs = 0, compute_ticks = 0, memory_used = 0, layer_idx = 0;
  std::uint32_t status_flags = 0;  // bit 0 anomaly, bit 1 NaN seen, bit 2 Inf seen
  bool has_nan = false, has_inf = false;
};

/// One layer's output in one pass (its residual stream, every row of the pass), observed on the device
/// after the pass's last task (vulkan_options::observe_layers; docs/vulkan.md "Layer statistics").
struct layer_stats {
  std::int32_t layer = 0;
  float rms = 0;                 // root mean square of the finite values
  float max_abs = 0;             // largest |x| of the finite values
  std::uint32_t non_finite = 0;  // NaN and infinite values
  std::uint32_t values = 0;      // values observed (rows x width)
};

/// Passes whose layer statistics a program keeps (slot = position % this): the statistics of a position
/// are readable until this many later positions have run.
inline constexpr std::uint32_t layer_stats_slots = 256;

using program_id = std::uint32_t;

/// Put buffer `buffer` of a program `offset` bytes into region `region` instead of its own allocation.
struct buffer_placement {
  std::string buffer;
  std::string region;
  std::uint64_t offset = 0;  // a multiple of 16 (kernels load vec4s)
};

struct vulkan_stats {
  std::uint64_t dispatches = 0;        // recorded: kernels of tasks plus the VM's own (regulator, messages)
  std::uint64_t task_dispatches = 0;   // of which tasks
  // Of those, a task's kernels for other positions (alternatives) or the other precision: a task runs
  // one of its main kernel and these a step, so task_dispatches - exclusive_dispatches run every step.
  std::uint64_t exclusive_dispatches = 0;
  std::uint64_t indirect_dispatches = 0;  // of those, group counts computed on the device (kernel_launch::indirect)
  std::uint64_t barriers = 0;          // compute -> compute barriers in the recorded command buffer
  // VM-wide: dispatches / task_dispatches / exclusive_dispatches / indirect_dispatches / barriers are program 0's;
  // stats(id) gives one program's.
  std::uint64_t recordings = 0;        // command buffers recorded since boot (one per load / add_program)
  std::uint64_t submits = 0;           // program submits (execute() and submit())
  std::uint64_t transfers = 0;         // staging copies (host <-> device), each its own submit + wait
  std::uint64_t validation_messages = 0;
  std::uint64_t memory_in_use = 0, memory_budget = 0, memory_blocks = 0, memory_block_bytes = 0;
  std::uint64_t largest_free_block = 0;
  double fragmentation = 0.0;
  std::uint64_t pipelines = 0;
  bool pipeline_cache_loaded = false;  // the on-disk pipeline cache was found and accepted
  // The quantized weights' f16 copies the VM keeps for prefill GEMMs (docs/vulkan.md "Kernel scratch"),
  // part of memory_in_use.
  std::uint64_t weight_copies = 0, weight_copy_bytes = 0;
};

class vulkan_vm {
 public:
  vulkan_vm();
  explicit vulkan_vm(const vulkan_options& options);  // boots
  ~vulkan_vm();
  vulkan_vm(vulkan_vm&&) noexcept;
  vulkan_vm& operator=(vulkan_vm&&) noexcept;

  /// Opens the device and allocates the bindings: registers, metrics, heap, globals, control.
  void boot(const vulkan_options& options = {});
  bool booted() const;

  /// Keeps the GPU's clock up while the host loads a model: from keep_awake(true) to the matching
  /// keep_awake(false) (calls nest) one workgroup spins on the device's second compute queue, at the
  /// lowest priority, so the first pass after the load does not run while an idle-dropped clock ramps
  /// back (docs/vulkan.md "Keeping the clock up while loading"). It touches nothing a program uses and
  /// neither waits for the VM's work nor holds it up. Returns whether that work runs after the call:
  /// false on a device without a second compute queue (lavapipe), with OCTO_KEEP_AWAKE=0, or where it
  /// could not be set up (never an error: it only speeds up the first pass).
  bool keep_awake(bool on);

  /// Validates `p` (refusing what octo::ir::validate rejects), removes every program (and shared
  /// buffer) loaded before, places its buffers and records its command buffer: it becomes program 0. Buffers named R0..R31 are the instance's registers; weights and constants go to
  /// the heap, KV caches to globals, other activations and IO to scratch in the register arena.
  void load(const ir::program& p);
  /// Chained instances: program i runs as instance i; after each, the regulator observes its R30 and
  /// its R30 (outbox) is passed to instance i+1's R31 (inbox).
  void load(std::span<const ir::program> programs);

  void write(std::string_view buffer, std::span<const float> values, std::uint32_t instance = 0);
  void write(std::int32_t buffer_id, std::span<const float> values, std::uint32_t instance = 0);
  void write_bytes(std::string_view buffer, std::span<const std::byte> bytes, std::uint32_t instance = 0);
  std::vector<float> read_f32(std::string_view buffer, std::uint32_t instance = 0);
  std::vector<float> read_f32(std::int32_t buffer_id, std::uint32_t instance = 0);
  std::vector<std::byte> read_bytes(std::string_view buffer, std::uint32_t instance = 0);
  void write_register(std::uint32_t instance, std::uint32_t reg, std::span<const float> values);
  std::vector<float> read_register(std::uint32_t instance, std::uint32_t reg, std::size_t count);

  // ---- several programs on one VM (weights and KV caches shared by name) ----------------------------
  /// Adds a program beside the loaded ones (load() clears them all first, add_program does not). Its
  /// command buffer is recorded once, here. Buffers of kind WEIGHT, CONST and KV_CACHE are shared by
  /// name with programs added earlier (same kind and byte size required, else octo::error); other
  /// buffers are the program's own, except those listed in `placements`, which live in the named
  /// region (and are never shared). It runs as instance 0 (registers of instance 0).
  program_id add_program(const ir::program& p, std::span<const buffer_placement> placements = {});
  /// Frees a program's own buffers and command buffer; shared buffers stay while another program uses
  /// them. Its id is not reused.
  void remove_program(program_id id);
  std::size_t program_count() const;  // live programs

  /// By-name IO on one program's buffers (weights are shared, so writing them once is enough).
  void write_bytes(program_id id, std::string_view buffer, std::span<const std::byte> bytes);
  std::vector<std::byte> read_bytes(program_id id, std::string_view buffer);
  std::vector<float> read_f32(program_id id, std::string_view buffer);
  /// dst.size() bytes of a buffer from byte `offset` on (a memcpy for host-visible IO buffers: no
  /// staging copy). The engine reads the last prompt row of a prefill's logits this way.
  void read_into(program_id id, std::string_view buffer, std::span<std::byte> dst, std::uint64_t offset = 0);
  /// One submit of that program's command buffer, then waits (like execute()).
  void execute(program_id id);
  /// One program's dispatches, barriers, recordings (1) and submits, with the VM-wide memory figures.
  vulkan_stats stats(program_id id) const;
  /// Per-task GPU times of that program's last run (profiling on).
  std::vector<task_profile> profile(program_id id) const;
  /// The layer statistics of the program's finished run at `position` (the pass's first position:
  /// set_position's, or a token-loop step's), one entry per layer the program holds, in layer order;
  /// empty when the program has no layer-tagged tasks or layer statistics are off. The caller makes sure
  /// that run finished (execute returned, token_step_result read it) and that fewer than
  /// layer_stats_slots runs followed it.
  std::vector<layer_stats> layer_statistics(program_id id, std::uint32_t position) const;

  // ---- streaming: regions, pinned host memory, asynchronous uploads and submits --------------------
  /// Device-local memory the caller lays out itself (streamed layer slots, hidden-state ping-pong).
  /// Usable by compute and by uploads on the transfer queue (concurrent sharing). Zeroed.
  void create_region(std::string_view name, std::uint64_t bytes);
  std::uint64_t region_bytes(std::string_view name) const;

  /// Persistently mapped host memory usable as a copy source, start aligned to 4096 bytes (O_DIRECT).
  struct pinned {
    std::uint32_t id = 0;
    std::byte* data = nullptr;
    std::uint64_t bytes = 0;
  };
  pinned allocate_pinned(std::uint64_t bytes);
  /// Waits for every upload submitted so far, then frees it.
  void free_pinned(std::uint32_t id);
  /// Copies `bytes` from pinned `src` (+src_offset) into region `region` (+dst_offset) on the transfer
  /// queue (the compute queue when the device has none), after the compute timeline reaches
  /// `after_compute` (0: no wait). Returns the transfer-timeline value signalled when the copy is done.
  std::uint64_t upload_async(std::uint32_t src, std::uint64_t src_offset, std::string_view region,
                             std::uint64_t dst_offset, std::uint64_t bytes, std::uint64_t after_compute = 0);
  /// Submits program `id` after the transfer timeline reaches `after_upload` (0: no wait); does not
  /// wait on the host. Returns the compute-timeline value signalled when it finishes. Programs
  /// submitted this way run in submission order on the compute queue. Host IO by name (write, read,
  /// set_position) first waits for every submitted program.
  std::uint64_t submit(program_id id, std::uint64_t after_upload = 0);
  /// Host waits (with the VM's timeout -> octo::error naming what was waited for).
  void wait_compute(std::uint64_t value);
  void wait_upload(std::uint64_t value);
  std::uint64_t completed_compute() const;  // the compute timeline's current value
  std::uint64_t completed_upload() const;   // the transfer timeline's current value

  // ---- the greedy token loop: decode steps chained on the device ---------------------------------------
  /// Prepares program `id` -- a decode step with one-element I32 buffers "tokens" and "pos" (inputs) and
  /// "next_token" (its argmax) -- for submit_token_step: after each such step the device itself writes
  /// next_token into tokens, advances pos and the globals position by one, and stores the token in ring
  /// slot (position % ring_slots), so steps can follow one another with no host round trip. Records a
  /// small second command buffer; calling it again with the same ring is a no-op.
  void enable_token_loop(program_id id, std::uint32_t ring_slots);
  /// One step: submits the program and the loop's tail (no host wait), computing at the position
  /// set_position gave plus the steps submitted since. Returns its compute-timeline value. At most
  /// ring_slots steps may be unread (octo::error beyond).
  std::uint64_t submit_token_step(program_id id);
  /// The token of the oldest unread step (`value`, as submit_token_step returned it): waits for that step
  /// (with the timeout) and reads its ring slot -- later steps stay in flight.
  std::int32_t token_step_result(program_id id, std::uint64_t value);

  /// Position of the pass's first token (and its token count), read by kernels from globals.
  void set_position(std::uint32_t pos, std::uint32_t n_tokens = 1);
  /// One vkQueueSubmit of the recorded command buffer; waits with the timeout (octo::error past it).
  void execute();
  /// Changes the timeout execute() and transfers wait (milliseconds).
  void set_timeout(std::uint32_t ms);

  /// Control words (vulkan_options::control_words): skip a layer in every program (its kernels get zero
  /// workgroups and read no weights; its input passes to its output) or run it again. Waits for submitted
  /// passes. A layer that nothing could carry the residual stream past is refused, as is a VM without
  /// control words.
  void set_layer_skipped(std::int32_t layer, bool skipped);
  /// Control words: the precision of the GEMMs whose kernel depends on it, from the next run on.
  void set_precision(matmul_precision p);

  layer_metrics metrics(std::uint32_t instance) const;
  float scale_factor(std::uint32_t instance) const;
  vulkan_stats stats() const;
  vulkan_device_facts device() const;
  /// Per-task GPU times of the last program run (execute or submit), in recording order; empty unless
  /// profiling is on.
  std::vector<task_profile> profile() const;

  void shutdown();

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace octo::vm
