// engine: a model (GGUF file or decomposed directory) on a VM, turning prompt ids into next-token logits:
// chunked batched prefill, then one decode step per pass; layers that do not fit the VRAM budget stream.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "octo/model_file/tokenizer.hpp"
#include "octo/models/model_config.hpp"
#include "octo/runtime/model_source.hpp"
#include "octo/runtime/residency_plan.hpp"
#include "octo/runtime/sampler.hpp"
#include "octo/vm/vulkan_vm.hpp"

namespace octo::runtime {

/// Message passing between the stages of a pipeline that run in different processes (one MPI rank per
/// stage: octo/runtime/mpi_link.hpp), docs/multi-gpu.md. Stage r sends the residual stream of its last
/// layer to stage r + 1; the last stage sends the logits (or the greedy token) back to every other.
class stage_link {
 public:
  virtual ~stage_link() = default;
  virtual int rank() const = 0;  // the stage this process runs
  virtual int size() const = 0;  // stages in all
  /// Sends `message` to stage `to`; returns once the memory may be reused. octo::error past the link's timeout.
  virtual void send(int to, std::span<const std::byte> message) = 0;
  /// Receives exactly message.size() bytes from stage `from`. octo::error past the link's timeout (the peer
  /// failed, hangs or is gone) or on a message of another size.
  virtual void receive(int from, std::span<std::byte> message) = 0;
  /// This stage failed (`why`, one line): ends every stage (MPI: prints `why` and aborts the job).
  virtual void fail(std::string_view why) = 0;
};

enum class backend : std::uint8_t {
  vulkan,     // the Vulkan VM (any Vulkan device, lavapipe included)
  reference,  // the CPU reference VM: slow, the oracle (it emulates the Vulkan VM's streaming API)
};

struct engine_options {
  backend vm = backend::vulkan;
  /// KV cache positions. 0: with every layer resident on the Vulkan VM, the most the device memory budget
  /// holds beside the weights and activations, up to the model's trained context (announced through
  /// `progress`); otherwise (the reference VM, a VRAM budget, a pipeline) the model's context_length, at
  /// most 4096.
  std::int64_t ctx = 0;
  ir::dtype kv_type = default_kv_dtype;  // the KV caches' type: F32, F16 or Q8_0 (docs/precision.md)
  /// Most prompt tokens per prefill pass (longer prompts go in chunks; each streamed layer is uploaded
  /// once per pass). 0: with every layer resident, as many as three quarters of the device memory left
  /// after the weights and the KV cache hold (the prefill program's activation bytes per token), at most
  /// the context: one pass for most prompts; with layers streamed, 512 (the activations count in
  /// vram_budget).
  std::int64_t prefill_chunk = 0;
  std::uint64_t vram_budget = 0;     // bytes for weights, KV cache, activations and the ring; 0: all resident
  /// Pinned host memory for the warm tier of streamed layers (whole slots of plan().slot_bytes). Unset
  /// (the default): automatic, auto_ram_budget of the memory available, re-read between passes at most
  /// every memory_check_ms so the tier shrinks under memory pressure and grows back; 0: no tier (every
  /// pass reads the streamed layers from the GGUF file / the layer files). engine::set_ram_budget
  /// changes it at run time.
  std::optional<std::uint64_t> ram_budget;
  /// The memory available to the automatic RAM tier, in bytes (nullopt: unknown, no automatic tier);
  /// empty: MemAvailable of /proc/meminfo (read_mem_available). Tests give a fixed or changing value.
  std::function<std::optional<std::uint64_t>()> host_memory_available;
  std::uint32_t memory_check_ms = 1000;  // automatic RAM budget: least time between re-reads; 0: every pass
  std::uint32_t ring_depth = 2;      // device slots streamed layers cycle through (>= 1)
  std::int64_t resident_layers = -1; // -1: as the plan decides; else the chain of segment programs with
                                     // exactly this many resident, in the plan's order (first and last
                                     // first) -- for tests and experiments
  /// Greedy decode steps generate() keeps submitted ahead of the host when every layer is resident: the
  /// token loop on the device (each step's argmax becomes the next step's input token and position on
  /// the device; the host reads the tokens behind, and nothing past a stop -- on_token returning false,
  /// the token count, the context -- is emitted). 0: the host loop, each token read back and written as
  /// the next step's input before that step is submitted (streamed models and pipelines always decode this way).
  /// Tokens are the same either way; sampling with a temperature always samples on the host.
  std::uint32_t decode_in_flight = 4;
  vm::vulkan_options vulkan;         // device choice, memory budget, timeouts, validation, profiling
  /// Layers to skip: each passes its input to its output unchanged and its kernels read no weights
  /// (control words, docs/vulkan.md "Control words"; a non-empty list turns vulkan.control_words on).
  /// engine::set_skipped_layers changes the set between passes. The effect on a model's output is
  /// measured in docs/vulkan.md.
  std::vector<std::int64_t> skip_layers;
  // ---- a pipeline (docs/multi-gpu.md): the layers split into contiguous ranges, one VM per stage; the
  // first stage also runs the embedding, the last the head; vram_budget, ram_budget and ring_depth apply
  // to each stage. Prefill runs in micro-batches of prefill_chunk tokens (0: 256) that flow through the
  // stages at once; decode passes one token through all.
  std::vector<std::string> devices;  // one Vulkan device (index or name) per stage; empty: vulkan.device
  std::uint32_t stages = 0;          // stages, all on the same device(s) (tests); 0: devices.size(), at least 1
  std::vector<std::int64_t> split;   // layers per stage, summing to the model's; empty: as even as possible
  /// Set: this process runs stage link->rank() of link->size() and talks to the others through it.
  std::shared_ptr<stage_link> link;
  /// Load progress (the residency plan, "loading: 12 of 30 programs", ...), one line per call; may be empty.
  std::function<void(std::string_view)> progress;
};

/// Where the bytes of the streamed layers came from and how long the host waited for them (zeros but
/// `passes` when every layer is resident).
struct streaming_stats {
  std::uint64_t passes = 0;             // decode steps and prefill chunks
  std::uint64_t layer_uploads = 0;      // streamed layer uploads into ring slots
  std::uint64_t bytes_uploaded = 0;     // bytes of those uploads
  std::uint64_t ram_hits = 0, ram_misses = 0;  // warm-tier lookups of streamed layers
  std::uint64_t ram_evictions = 0;      // tier blobs evicted (for a more vital layer, or the tier shrinking)
  std::uint64_t ram_resizes = 0;        // times the tier changed size (set_ram_budget, memory pressure)
  std::uint64_t bytes_from_source = 0;  // bytes read from the GGUF file or the layer files
  double source_ms = 0.0;               // time the reader spent filling staging / tier memory
  double fetch_wait_ms = 0.0;           // time the host waited for a read before it could upload
  double upload_wait_ms = 0.0;          // time the host waited for an upload to finish (staging reuse)
  double compute_wait_ms = 0.0;         // time the host waited for compute (end of a pass)
};

/// The warm RAM tier as it stands (engine::tier_state).
struct ram_tier_state {
  bool automatic = false;         // sized from the available memory (engine_options::ram_budget unset)
  std::uint64_t budget = 0;       // bytes it may use now: the set budget, or the automatic one
  std::uint64_t bytes = 0;        // pinned bytes it holds: slots x slot_bytes (<= budget)
  std::uint64_t slots = 0, slot_bytes = 0;
  std::uint64_t wanted = 0;       // bytes that hold every streamed layer (the cap)
  std::vector<std::int64_t> layers;  // resident layers, the next to be evicted first
};

/// The automatic RAM tier budget: half of what is available beyond a 1 GiB margin, capped by `wanted`
/// (the bytes that hold every streamed layer). Pinned memory cannot be swapped or reclaimed, so the
/// other half stays for the page cache, the OS and other processes.
std::uint64_t auto_ram_budget(std::uint64_t available, std::uint64_t wanted);
/// MemAvailable of a /proc/meminfo-format file, in bytes (the kernel's estimate of what can be allocated
/// without swapping, reclaimable page cache included); nullopt when it cannot be read or parsed.
std::optional<std::uint64_t> read_mem_available(const std::filesystem::path& meminfo = "/proc/meminfo");

/// One model on one VM, or split into pipeline stages on several (engine_options::devices / stages /
/// split / link, docs/multi-gpu.md: each stage is what follows for its layers, with the same results).
/// The residency plan decides the segments: when every layer is resident (no
/// budget, or the whole model's buffers fit it) the
/// model is one program (the decode program, T = 1 with a GPU argmax, recorded once; each decode step
/// submits once: greedy steps chain on the device, several in flight (engine_options::decode_in_flight),
/// other steps are written the token and its position by the host) and the prefill program for T prompt tokens is a
/// second one sharing the weights and the KV caches by name. Otherwise the model is a chain of programs
/// (embedding, one per layer, head) whose streamed layers flow through an N-deep ring of device slots,
/// read ahead by a reader thread and uploaded on the transfer queue; logits and tokens are bit-identical
/// to the resident run for every budget.
/// @code
///   octo::runtime::engine_options o;
///   o.vram_budget = octo::runtime::parse_bytes("4GiB");   // 0 (the default): every layer resident
///   octo::runtime::engine e("model.gguf", o);             // or a directory made by `octo decompose`
///   auto ids = e.model().tokenizer().encode("Once upon a time", true);
///   std::vector<float> logits = e.prefill(ids);
///   std::int32_t next = octo::runtime::argmax(logits);
///   next = e.decode_greedy(next);  // the following token, argmax on the device
/// @endcode
class engine {
 public:
  /// `model`: a GGUF file or a decomposed directory. octo::error on a bad model or when the budget
  /// cannot hold even the minimum (the message names the sizes).
  engine(const std::filesystem::path& model, const engine_options& options = {});
  ~engine();
  engine(engine&&) noexcept;
  engine& operator=(engine&&) noexcept;

  /// The model's config, tokenizer, architecture and tensors.
  const model_source& model() const;
  const residency_plan& plan() const;
  /// Per pipeline stage run by this process: its first layer and one past its last (one entry, the
  /// whole model, without a pipeline).
  std::vector<std::pair<std::int64_t, std::int64_t>> stage_layers() const;
  /// "reference VM (CPU)" or the Vulkan device's name (a pipeline's: each stage's, joined by " | ").
  std::string device_name() const;
  std::int64_t context() const;   // KV cache positions
  std::int64_t position() const;  // tokens in the KV cache so far
  /// Bytes of streamed layer weights uploaded per decode step (0 when every layer is resident).
  std::uint64_t streamed_bytes_per_token() const;

  /// Forgets the sequence (position 0); the KV cache is overwritten as the next one goes.
  void reset();
  /// Runs `ids` at positions position()..: batched (GEMM) in windows of at most prefill_chunk tokens,
  /// also when it continues a sequence (a chat's next turn attends to the cache the earlier ones left).
  /// Returns the logits of the last id. octo::error if they do not fit the context.
  std::vector<float> prefill(std::span<const std::int32_t> ids);
  /// One decode step of `id` at position(); returns its logits [vocab].
  std::vector<float> decode(std::int32_t id);
  /// One decode step returning only the argmax of the logits, computed on the device.
  std::int32_t decode_greedy(std::int32_t id);
  /// Builds (and records) the prefill programs for a prompt of `n` tokens now, outside a timed pass.
  void prepare_prefill(std::int64_t n);

  /// Prefill of `prompt`, then up to `n` tokens chosen by `s` (greedy ones without reading the logits
  /// back; with every layer resident, several steps in flight: engine_options::decode_in_flight).
  /// `on_token(id)` sees each; returning false stops, and that token is the last one returned and the
  /// position stays where the host loop leaves it (a following generate() continues the sequence).
  /// Stops early when the context is full.
  /// `prompt_logits`, when given, receives the logits of the last prompt position.
  std::vector<std::int32_t> generate(std::span<const std::int32_t> prompt, std::int64_t n, const sampling_params& s,
                                     const std::function<bool(std::int32_t)>& on_token = {},
                                     std::vector<float>* prompt_logits = nullptr);

  /// Wall time of the last generate(): prefill and decode (tokens after the first) separately.
  struct timing {
    std::int64_t prompt_tokens = 0, decode_tokens = 0;
    double prefill_ms = 0.0, decode_ms = 0.0;
    /// Most decode steps that were submitted and not yet read at once: engine_options::decode_in_flight
    /// (or fewer, near the end) with the token loop on the device, 1 with the host loop, 0 if none ran.
    std::uint32_t most_in_flight = 0;
    bool token_loop_on_device = false;  // the greedy token loop ran on the device (decode_in_flight)
  };
  const timing& last_timing() const;
  /// Changes the RAM tier's budget now, between passes (nullopt: automatic, 0: no tier): a smaller one
  /// evicts the least vital layers (lowest recency + frequency score) and frees their pinned memory, a
  /// larger one allocates more (as much as can be allocated: the line through progress says so). Reads
  /// and uploads in flight finish first; tokens are unchanged.
  void set_ram_budget(std::optional<std::uint64_t> bytes);
  ram_tier_state tier_state() const;
  /// Streaming counters since construction or the last reset_stats().
  const streaming_stats& stats() const;
  void reset_stats();

  /// The decode programs' Vulkan statistics (dispatches, barriers, recordings and submits summed over the
  /// decode pass's programs; the VM's memory); zeros on the reference VM.
  vm::vulkan_stats decode_stats() const;
  /// Khronos validation messages reported by the engine's Vulkan VM so far (0 on the reference VM).
  std::uint64_t validation_messages() const;
  /// Per-task GPU times of the last pass the engine ran (a decode step, or the last prefill chunk), when
  /// engine_options::vulkan.profile (or OCTO_PROFILE=1) is on; empty otherwise and on the reference VM.
  std::vector<vm::task_profile> profile() const;
  /// Every layer's output statistics (RMS, max |x|, NaN / Inf count) in the last pass the engine read:
  /// the last decode step (with steps in flight, the one whose token was delivered last) or the last
  /// prefill chunk; one entry per layer this process runs, in layer order. Observed on the device after
  /// every pass (vm::vulkan_options::observe_layers; empty when that is off). A non-finite value stops
  /// the pass with octo::error naming the layer and the position, before its logits or token are used.
  std::vector<vm::layer_stats> layer_statistics() const;

  /// Skips exactly `layers` from the next pass on (empty: none), without recording anything again. On
  /// the Vulkan VM this needs the control words (engine_options::skip_layers given at construction, or
  /// vulkan.control_words). A skipped layer writes no KV rows: change the set between sequences (after
  /// reset()) for a consistent model. octo::error for a layer the model does not have.
  void set_skipped_layers(std::span<const std::int64_t> layers);
  std::vector<std::int64_t> skipped_layers() const;
  /// The prefill GEMMs' precision (vm::matmul_precision) from the next pass on, without recording again
  /// (Vulkan: needs vulkan.control_words; the reference VM computes in f32 either way).
  void set_precision(vm::matmul_precision p);

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace octo::runtime
