// vocabulary: a tokenizer's vocabulary described independently of the file it came from (Hugging Face
// vocab.json + merges.txt, or GGUF metadata), so that one tokenizer implementation serves both.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace octo::model_file {

class gguf_file;

// Token types, numbered as GGUF's tokenizer.ggml.token_type stores them (and llama.cpp reads them).
namespace token_type {
inline constexpr int32_t undefined = 0;
inline constexpr int32_t normal = 1;
inline constexpr int32_t unknown = 2;
inline constexpr int32_t control = 3;       // <|im_start|>, <s>: split out of text, rendered only on request
inline constexpr int32_t user_defined = 4;  // added tokens matched literally in text
inline constexpr int32_t unused = 5;
inline constexpr int32_t byte = 6;  // SentencePiece byte fallback, text "<0xAB>"
}  // namespace token_type

struct vocabulary {
  enum class model {
    gpt2_bpe,   // byte-level BPE with merges (GPT-2, Qwen2, llama 3)
    llama_spm,  // SentencePiece-style BPE by scores with byte fallback (llama 1/2, stories260K)
  };

  model kind = model::gpt2_bpe;
  std::vector<std::string> tokens;  // as stored: byte-level text for gpt2 (Ġ for space), ▁ for SPM
  std::vector<float> scores;        // SPM merge priorities; empty when the format has none
  std::vector<int32_t> token_types; // token_type::*, one per token; empty means all normal
  std::vector<std::string> merges;  // gpt2 only: "left right", highest priority first
  std::string pre = "default";      // pre-tokenizer: "default" (GPT-2), "qwen2", "llama-bpe", "smollm", aliases
  int32_t bos = -1, eos = -1, pad = -1;  // -1 if none
  bool add_bos = false;
  bool add_space_prefix = true;     // SPM: text gets a leading space (SentencePiece's dummy prefix)
  std::string chat_template;        // Jinja source as shipped; octo applies ChatML itself

  int32_t size() const { return int32_t(tokens.size()); }
  int32_t type_of(int32_t id) const {
    return token_types.empty() ? token_type::normal : token_types[size_t(id)];
  }
};

// Loads vocab.json, merges.txt and, where present, added_tokens.json, tokenizer_config.json and
// special_tokens_map.json from a Hugging Face tokenizer folder (byte-level BPE tokenizers).
// Throws octo::error naming the file and the problem.
vocabulary load_hf_vocabulary(const std::filesystem::path& folder);

// Reads the tokenizer.ggml.* metadata of a GGUF file (model "gpt2" or "llama"; tokens, scores,
// token_type, merges, pre, special ids, add_bos_token, add_space_prefix, tokenizer.chat_template).
// Throws octo::error naming the file and the key.
vocabulary load_gguf_vocabulary(const gguf_file& file);

// Reads a Hugging Face fast-tokenizer file (tokenizer.json, model type BPE): byte-level BPE becomes
// gpt2_bpe (merges as "a b" strings or [a, b] pairs; pre from the Split regex: qwen2, llama-bpe or
// default); BPE with byte fallback and ▁ becomes llama_spm, with scores -rank of the merge that makes
// each token. added_tokens: special ones control, others user-defined. BOS/add_bos come from a
// TemplateProcessing post-processor; EOS/pad live in other files and stay -1 here.
// Throws octo::error naming the file and the problem.
vocabulary load_tokenizer_json(const std::filesystem::path& path);

}  // namespace octo::model_file
