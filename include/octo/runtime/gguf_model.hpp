// gguf_model: a GGUF model file turned into what the VMs need: the model_config read from llama.cpp's
// metadata keys, the tokenizer, and validated decode / prefill programs whose weights match the file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "octo/ir/program.hpp"
#include "octo/model_file/gguf.hpp"
#include "octo/model_file/tokenizer.hpp"
#include "octo/models/model_config.hpp"

namespace octo::runtime {

/// The model_config of a GGUF file (architectures llama, qwen2, qwen3; llama.cpp key conventions).
/// `ctx` is the KV cache length to plan for (0: the file's context_length, at most 4096). Throws
/// octo::error with one line naming the file and the problem (unknown architecture, missing key, ...).
models::model_config config_from_gguf(const model_file::gguf_file& file, std::int64_t ctx = 0);

/// An open model: the mapped file, its config, its tokenizer.
/// @code
///   octo::runtime::gguf_model m("stories260K.gguf", 512);
///   ir::program step = m.decode_program(true);     // validated; weights typed as in the file
///   m.for_each_weight(step, [&](auto name, auto bytes) { vm.write_bytes(name, bytes); });
/// @endcode
class gguf_model {
 public:
  /// Opens and checks the file: config, tokenizer, and every tensor the graph reads present with the
  /// right shape and a supported type (octo::error naming the tensor otherwise).
  explicit gguf_model(const std::filesystem::path& path, std::int64_t ctx = 0);

  const model_file::gguf_file& file() const { return *file_; }
  const models::model_config& config() const { return config_; }
  const model_file::tokenizer& tokenizer() const { return *tokenizer_; }
  const std::string& architecture() const { return arch_; }

  /// One decode step (T = 1); with `argmax`, also the output "next_token".
  ir::program decode_program(bool argmax) const;
  /// A prefill pass over `tokens` prompt positions (GEMM), logits [tokens, vocab].
  ir::program prefill_program(std::int64_t tokens) const;

  /// Calls `write(buffer name, raw bytes from the file)` for every WEIGHT buffer of `p` (kept in the
  /// file's encoding, quantized blocks included).
  void for_each_weight(const ir::program& p,
                       const std::function<void(std::string_view, std::span<const std::byte>)>& write) const;

 private:
  ir::program finish(ir::program p) const;  // weight dtypes from the file, checks, validate

  std::unique_ptr<model_file::gguf_file> file_;
  std::string arch_;
  models::model_config config_;
  std::unique_ptr<model_file::tokenizer> tokenizer_;
};

}  // namespace octo::runtime
