// hf_to_gguf: converts a Hugging Face checkpoint folder (safetensors + config.json + tokenizer files) of
// a llama, qwen2 or qwen3 model into a GGUF v3 file with llama.cpp's tensor names and metadata keys.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include "octo/ir/enums.hpp"

namespace octo::model_file {

/// How the weight matrices' types follow from hf_convert_options::type.
enum class weight_mix {
  /// Every 2-D matrix (embedding and head included) gets `type`.
  pure,
  /// llama.cpp's "_M" mixtures (Q4_K_M, Q5_K_M; `type` q4_k or q5_k): the output head (or the tied
  /// token embedding that serves as it) Q6_K, attn_v and ffn_down of the layers llama.cpp's
  /// use_more_bits picks (the first and last eighth, and every third between) Q6_K, all else `type`.
  k_medium,
};

/// A --type choice: the base type and the mixture ("q4_k_m" is {q4_k, k_medium}).
struct weight_scheme {
  ir::dtype type = ir::dtype::f16;
  weight_mix mix = weight_mix::pure;
};

/// One tensor written, for progress reports.
struct hf_convert_progress {
  std::size_t index = 0, count = 0;  ///< tensor index (0-based) and number of tensors
  std::string_view name;             ///< GGUF tensor name
  ir::dtype type = ir::dtype::f32;   ///< its type in the file
  std::uint64_t bytes_written = 0, file_bytes = 0;
};

struct hf_convert_options {
  /// Type of the 2-D weight matrices (f32, f16, bf16, or a GGUF block format such as q8_0 / q4_k),
  /// refined by `mix`. A matrix whose rows are not a whole number of the type's blocks falls back as
  /// llama.cpp's quantizer does (Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, Q2_K/Q3_K/IQ4_XS -> IQ4_NL;
  /// then F16). Norms and biases stay f32.
  ir::dtype type = ir::dtype::f16;
  weight_mix mix = weight_mix::pure;
  std::string name;  ///< general.name; empty: the folder's name
  /// Called with one line per tensor written (name, shape, type); may be empty.
  std::function<void(const std::string&)> log;
  /// Called after each tensor's data is in the file; may be empty.
  std::function<void(const hf_convert_progress&)> progress;
  /// Worker threads for converting rows; 0: the machine's hardware threads (at most 32).
  unsigned threads = 0;
};

struct hf_convert_summary {
  std::string architecture;  ///< GGUF architecture: "llama", "qwen2" or "qwen3"
  std::int64_t tensors = 0;
  std::uint64_t file_bytes = 0;
  std::uint32_t file_type = 0;  ///< general.file_type (llama.cpp's llama_ftype)
};

/// Converts `folder` (config.json with architectures LlamaForCausalLM, Qwen2ForCausalLM or
/// Qwen3ForCausalLM; model.safetensors or a sharded index; tokenizer.json, or vocab.json + merges.txt)
/// into the GGUF file `out`, streaming: the header goes out first, then each tensor as it is
/// converted, in chunks of rows, so memory stays far below the file's size. The file is written as
/// `out`.tmp and renamed at the end; on any error the .tmp is removed and an existing `out` is kept. LlamaForCausalLM's q/k projections are permuted as llama.cpp's converter
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

/// "f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q2_k", "q3_k", "q4_k", "q5_k", "q6_k",
/// "iq4_nl", "iq4_xs"
/// (case-insensitive) → the dtype; throws octo::error listing the choices otherwise.
ir::dtype parse_weight_type(std::string_view s);

/// parse_weight_type's names plus the mixtures "q4_k_m" and "q5_k_m" (case-insensitive).
weight_scheme parse_weight_scheme(std::string_view s);

/// general.file_type (llama.cpp's llama_ftype) of a file made with `type` and `mix`.
std::uint32_t gguf_file_type(ir::dtype type, weight_mix mix);

}  // namespace octo::model_file
