// streaming_engine: a model larger than the VRAM budget, run as a chain of programs in one VM (embedding,
// one program per layer, head) whose non-resident layers stream through an N-deep ring of device slots.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "octo/models/model_config.hpp"
#include "octo/model_file/tokenizer.hpp"
#include "octo/runtime/engine.hpp"
#include "octo/runtime/residency_plan.hpp"
#include "octo/runtime/sampler.hpp"
#include "octo/vm/vulkan_vm.hpp"

namespace octo::runtime {

struct streaming_options {
  backend vm = backend::vulkan;      // the reference backend emulates the VM's streaming API on the CPU
  std::int64_t ctx = 0;              // KV cache positions; 0: the model's context_length, at most 4096
  std::int64_t prefill_chunk = 128;  // most prompt tokens per prefill pass (each streamed layer is
                                     // uploaded once per pass)
  std::uint64_t vram_budget = 0;     // bytes for weights, KV cache, activations and the ring; 0: all resident
  std::uint64_t ram_budget = 0;      // pinned host memory for the warm tier of streamed layers; 0: none
                                     // (every pass reads them from the GGUF mapping / the layer files)
  std::uint32_t ring_depth = 2;      // device slots streamed layers cycle through (>= 1)
  std::int64_t resident_layers = -1; // -1: as the plan decides; else exactly this many, in the plan's
                                     // order (first and last first) -- for tests and experiments
  vm::vulkan_options vulkan;         // device choice, timeouts, validation
  /// Load progress ("loading weights: 12 of 30 tensors", the plan, ...), one line per call; may be empty.
  std::function<void(std::string_view)> progress;
};

/// Where the bytes of the last generate() came from and how long the host waited for them.
struct streaming_stats {
  std::uint64_t passes = 0;             // decode steps and prefill chunks
  std::uint64_t layer_uploads = 0;      // streamed layer uploads into ring slots
  std::uint64_t bytes_uploaded = 0;     // bytes of those uploads
  std::uint64_t ram_hits = 0, ram_misses = 0;  // warm-tier lookups of streamed layers
  std::uint64_t bytes_from_source = 0;  // bytes read from the GGUF mapping or the layer files
  double source_ms = 0.0;               // time the reader spent filling staging / tier memory
  double fetch_wait_ms = 0.0;           // time the host waited for a read before it could upload
  double upload_wait_ms = 0.0;          // time the host waited for an upload to finish (staging reuse)
  double compute_wait_ms = 0.0;         // time the host waited for compute (end of a pass)
};

/// The same public shape as octo::runtime::engine (prefill, decode, decode_greedy, generate,
/// last_timing); logits and tokens are bit-identical to it for every budget.
/// @code
///   octo::runtime::streaming_options o;
///   o.vram_budget = octo::runtime::parse_bytes("4GiB");
///   octo::runtime::streaming_engine e("model.gguf", o);   // or a directory made by `octo decompose`
///   std::fputs(e.plan().describe().c_str(), stderr);
///   auto ids = e.tokenizer().encode("Once upon a time", true);
///   auto next = octo::runtime::argmax(e.prefill(ids));
/// @endcode
class streaming_engine {
 public:
  /// `model`: a GGUF file (its tensors read with pread: a file cut short is an error, never SIGBUS) or a
  /// decomposed directory (its layer files stream through the O_DIRECT reader). octo::error on a bad
  /// file or when the budget cannot hold even the minimum (the message names the sizes).
  streaming_engine(const std::filesystem::path& model, const streaming_options& options = {});
  ~streaming_engine();
  streaming_engine(streaming_engine&&) noexcept;
  streaming_engine& operator=(streaming_engine&&) noexcept;

  const models::model_config& config() const;
  const model_file::tokenizer& tokenizer() const;
  const std::string& architecture() const;
  const residency_plan& plan() const;
  std::string device_name() const;
  std::int64_t context() const;
  std::int64_t position() const;
  /// Bytes of streamed layer weights uploaded per decode step.
  std::uint64_t streamed_bytes_per_token() const;

  void reset();
  std::vector<float> prefill(std::span<const std::int32_t> ids);
  std::vector<float> decode(std::int32_t id);
  std::int32_t decode_greedy(std::int32_t id);
  std::vector<std::int32_t> generate(std::span<const std::int32_t> prompt, std::int64_t n, const sampling_params& s,
                                     const std::function<bool(std::int32_t)>& on_token = {},
                                     std::vector<float>* prompt_logits = nullptr);
  const engine::timing& last_timing() const;
  /// Counters since construction or the last reset_stats().
  const streaming_stats& stats() const;
  void reset_stats();
  /// Khronos validation messages the VM reported so far (0 on the reference backend).
  std::uint64_t validation_messages() const;
  /// Builds the prefill programs for prompts of `n` tokens now (outside a timed pass).
  void prepare_prefill(std::int64_t n);

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace octo::runtime
