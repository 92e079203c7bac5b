// hf_to_gguf: converts a Hugging Face checkpoint folder (safetensors + config.json + tokenizer files) of
// a llama, qwen2 or qwen3 model into a GGUF v3 file with llama.cpp's tensor names and metadata keys.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include "octo/ir/enums.hpp"

namespace octo::model_file {

struct hf_convert_options {
  /// Type of the 2-D weight matrices (f32, f16, bf16, or a GGUF block format such as q8_0 / q4_k).
  /// A matrix whose rows are not a whole number of blocks falls back to f16. Norms and biases stay f32.
  ir::dtype type = ir::dtype::f16;
  std::string name;  ///< general.name; empty: the folder's name
  /// Called with one line per tensor written (name, shape, type); may be empty.
  std::function<void(const std::string&)> log;
};

struct hf_convert_summary {
  std::string architecture;  ///< GGUF architecture: "llama", "qwen2" or "qwen3"
  std::int64_t tensors = 0;
  std::uint64_t file_bytes = 0;
};

/// Converts `folder` (config.json with architectures LlamaForCausalLM, Qwen2ForCausalLM or
/// Qwen3ForCausalLM; model.safetensors or a sharded index; tokenizer.json, or vocab.json + merges.txt)
/// into the GGUF file `out`. LlamaForCausalLM's q/k projections are permuted as llama.cpp's converter
/// does, so the file uses llama.cpp's interleaved RoPE layout; Qwen's are kept (NeoX RoPE).
/// Throws octo::error with one line naming the problem (unknown architecture, missing tensor, shape
/// mismatch, unsupported dtype, unreadable file).
/// @code
///   octo::model_file::hf_convert_options o;
///   o.type = octo::ir::dtype::q8_0;
///   octo::model_file::convert_hf_to_gguf("Qwen2.5-0.5B", "qwen.gguf", o);
/// @endcode
hf_convert_summary convert_hf_to_gguf(const std::filesystem::path& folder, const std::filesystem::path& out,
                                      const hf_convert_options& options = {});

/// "f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q2_k", "q3_k", "q4_k", "q5_k", "q6_k"
/// (case-insensitive) → the dtype; throws octo::error listing the choices otherwise.
ir::dtype parse_weight_type(std::string_view s);

}  // namespace octo::model_file
