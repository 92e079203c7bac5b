// engine: a GGUF model on a VM, turning prompt ids into next-token logits: batched prefill (the
// prefill(config, T) graph, chunked), then one decode step per submit of one recorded program.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "octo/runtime/gguf_model.hpp"
#include "octo/runtime/sampler.hpp"
#include "octo/vm/vulkan_vm.hpp"

namespace octo::runtime {

enum class backend : std::uint8_t {
  vulkan,     // the Vulkan VM (any Vulkan device, lavapipe included)
  reference,  // the CPU reference VM: slow, the oracle
};

struct engine_options {
  backend vm = backend::vulkan;
  std::int64_t ctx = 0;             // KV cache positions; 0: the file's context_length, at most 4096
  /// Most prompt tokens per prefill pass (longer prompts go in chunks). 0: as many as the device memory
  /// left after the weights and the KV cache holds (the prefill program's activation bytes per token),
  /// at most the context: one pass for most prompts.
  std::int64_t prefill_chunk = 0;
  vm::vulkan_options vulkan;        // device choice, memory budget, ...
};

/// One model on one VM. The decode program (T = 1, with a GPU argmax) is loaded and recorded once;
/// each decode step writes the token and its position (host-visible memory: a memcpy), sets the VM's
/// position and submits once. On Vulkan the prefill program for T prompt tokens is a second program on
/// the same VM, sharing the weights and the KV caches by name (one copy, nothing copied after the
/// prompt); the reference VM runs it on a second VM and copies the KV cache over.
/// @code
///   octo::runtime::engine e("model.gguf", {});
///   auto ids = e.model().tokenizer().encode("Once upon a time", true);
///   std::vector<float> logits = e.prefill(ids);
///   std::int32_t next = octo::runtime::argmax(logits);
///   next = e.decode_greedy(next);  // the following token, argmax on the device
/// @endcode
class engine {
 public:
  engine(const std::filesystem::path& gguf, const engine_options& options = {});
  ~engine();
  engine(engine&&) noexcept;
  engine& operator=(engine&&) noexcept;

  const gguf_model& model() const;
  /// "reference VM (CPU)" or the Vulkan device's name.
  std::string device_name() const;
  std::int64_t context() const;   // KV cache positions
  std::int64_t position() const;  // tokens in the KV cache so far

  /// Forgets the sequence (position 0); the KV cache is overwritten as the next one goes.
  void reset();
  /// Runs `ids` at positions position()..: batched (GEMM) when the sequence is empty, else token by
  /// token. Returns the logits of the last id. octo::error if they do not fit the context.
  std::vector<float> prefill(std::span<const std::int32_t> ids);
  /// One decode step of `id` at position(); returns its logits [vocab].
  std::vector<float> decode(std::int32_t id);
  /// One decode step returning only the argmax of the logits, computed on the device.
  std::int32_t decode_greedy(std::int32_t id);

  /// Prefill of `prompt`, then up to `n` tokens chosen by `s` (greedy ones without reading the logits
  /// back). `on_token(id)` sees each; returning false stops. Stops early when the context is full.
  /// `prompt_logits`, when given, receives the logits of the last prompt position.
  std::vector<std::int32_t> generate(std::span<const std::int32_t> prompt, std::int64_t n, const sampling_params& s,
                                     const std::function<bool(std::int32_t)>& on_token = {},
                                     std::vector<float>* prompt_logits = nullptr);

  /// Wall time of the last generate(): prefill and decode (tokens after the first) separately.
  struct timing {
    std::int64_t prompt_tokens = 0, decode_tokens = 0;
    double prefill_ms = 0.0, decode_ms = 0.0;
  };
  const timing& last_timing() const;

  /// The decode program's Vulkan statistics (dispatches, barriers, its submits; the VM's memory); zeros
  /// on the reference VM.
  vm::vulkan_stats decode_stats() const;
  /// Khronos validation messages reported by the engine's Vulkan VM so far (0 on the reference VM).
  std::uint64_t validation_messages() const;
  /// Per-task GPU times of the last pass the engine ran (a decode step, or the last prefill chunk), when
  /// engine_options::vulkan.profile (or OCTO_PROFILE=1) is on; empty otherwise and on the reference VM.
  std::vector<vm::task_profile> profile() const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace octo::runtime
