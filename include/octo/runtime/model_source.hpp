// model_source: one model's weights, config and tokenizer, from a GGUF file or a directory made by
// `octo decompose`, and the one place a model graph's weights are bound to them (types, shapes, bytes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "octo/ir/program.hpp"
#include "octo/model_file/gguf.hpp"
#include "octo/model_file/tokenizer.hpp"
#include "octo/models/decoder.hpp"
#include "octo/models/model_config.hpp"

namespace octo::runtime {

/// The model_config of a GGUF file (architectures llama, qwen2, qwen3; llama.cpp key conventions).
/// `ctx` is the KV cache length to plan for (0: the file's context_length, at most 4096). Throws
/// octo::error with one line naming the file and the problem (unknown architecture, missing key, ...).
models::model_config config_from_gguf(const model_file::gguf_file& file, std::int64_t ctx = 0);

/// One tensor of the source.
struct tensor_info {
  std::uint32_t ggml_type = 0;
  std::vector<std::int64_t> dims;  // GGUF order: fastest first
  std::uint64_t bytes = 0;
  std::int64_t layer = -1;         // block index ("blk.N."), -1 outside the blocks
  std::uint64_t offset = 0;        // inside its layer blob (layers only)
};

/// A model to run. A layer is also one blob (the layer file's layout: the layer's tensors in table order
/// at 4096-aligned offsets), which is what a streamed layer's device slot holds.
/// @code
///   auto m = octo::runtime::model_source::open("stories260K.gguf", 512);  // or a decomposed directory
///   ir::program step = m->decode_program(true);   // validated; weights typed as in the source
///   m->for_each_weight(step, [&](auto name, auto bytes) { vm.write_bytes(name, bytes); });
/// @endcode
/// The KV cache type when none is asked for: F16 halves the cache of F32 for a logit error well below
/// the weights' quantisation error (docs/precision.md, "KV cache").
inline constexpr ir::dtype default_kv_dtype = ir::dtype::f16;

/// Parses "f32", "f16" or "q8_0" (a --kv-type value); octo::error naming the accepted values otherwise.
ir::dtype parse_kv_type(std::string_view text);

class model_source {
 public:
  /// A GGUF file (tensors from its mapping) or a decomposed directory (manifest.json, meta.gguf, layer
  /// files read with O_DIRECT). Checks the config, the tokenizer and every tensor the model graph reads
  /// (octo::error naming the file and the tensor otherwise).
  /// `kv_dtype`: the KV caches' type in every program (F32, F16 or Q8_0; docs/precision.md).
  static std::unique_ptr<model_source> open(const std::filesystem::path& path, std::int64_t ctx = 0,
                                            ir::dtype kv_dtype = default_kv_dtype);
  virtual ~model_source() = default;

  const models::model_config& config() const { return config_; }
  /// The KV caches' type (open's kv_dtype).
  ir::dtype kv_dtype() const { return kv_dtype_; }
  const model_file::tokenizer& tokenizer() const { return *tokenizer_; }
  /// "llama", "qwen2", "qwen3": the file's general.architecture.
  const std::string& architecture() const { return arch_; }
  /// The file or directory name, for messages.
  const std::string& label() const { return label_; }
  /// nullptr when the model has no tensor of that name.
  const tensor_info* find(std::string_view name) const {
    const auto it = tensors_.find(name);
    return it == tensors_.end() ? nullptr : &it->second;
  }
  /// Bytes of layer `l`'s blob (a multiple of 4096).
  virtual std::uint64_t layer_blob_bytes(std::int64_t l) const = 0;
  /// Fills dst[0, layer_blob_bytes(l)) with layer l's blob; returns the bytes read from the source. One
  /// call at a time (the engine's reader thread).
  virtual std::uint64_t read_layer(std::int64_t l, std::span<std::byte> dst) const = 0;
  /// Calls `use(bytes)` with tensor `name`'s bytes (resident weights, at load); a composite source (keys
  /// joined by '|', ir::source_parts) gets its parts' bytes one after another. A composite is never part
  /// of a layer's blob (find gives nullptr): it stays resident where its layer streams.
  void with_tensor(std::string_view name, const std::function<void(std::span<const std::byte>)>& use) const;

  /// The weight binding: `p`'s WEIGHT buffers take the source's types (quantized blocks kept), their
  /// shapes and byte sizes are checked, the program is validated. octo::error naming the tensor.
  ir::program bind(ir::program p) const;
  /// One decode step (T = 1) of `part` of the model; with `argmax`, also the output "next_token".
  ir::program decode_program(bool argmax, models::segment part = {}) const;
  /// A prefill pass over `tokens` prompt positions (GEMM), logits [tokens, vocab].
  ir::program prefill_program(std::int64_t tokens, bool argmax = false, models::segment part = {}) const;
  /// Calls `write(buffer name, bytes)` for every WEIGHT buffer of `p`, in the source's encoding.
  void for_each_weight(const ir::program& p,
                       const std::function<void(std::string_view, std::span<const std::byte>)>& write) const;

 protected:
  explicit model_source(std::string label) : label_(std::move(label)) {}
  /// One tensor of the file or directory (a key find knows).
  virtual void with_file_tensor(std::string_view name,
                                const std::function<void(std::span<const std::byte>)>& use) const = 0;

  // Filled by the source's constructor (a GGUF file or a decomposed directory).
  std::string label_, arch_;
  models::model_config config_;
  ir::dtype kv_dtype_ = default_kv_dtype;  // set by open
  std::unique_ptr<model_file::tokenizer> tokenizer_;
  std::map<std::string, tensor_info, std::less<>> tensors_;
};

}  // namespace octo::runtime
