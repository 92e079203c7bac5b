// GGUF metadata → vocabulary: the tokenizer.ggml.* keys as llama.cpp's converters write them.
#include "octo/error.hpp"
#include "octo/model_file/gguf.hpp"
#include "octo/model_file/vocabulary.hpp"

namespace octo::model_file {

vocabulary load_gguf_vocabulary(const gguf_file& file) {
  const auto fail = [&](const std::string& problem) -> error {
    return error("tokenizer: '" + file.path() + "': " + problem);
  };
  vocabulary v;
  const std::string model = file.get_string_or("tokenizer.ggml.model", "");
  if (model == "gpt2") v.kind = vocabulary::model::gpt2_bpe;
  else if (model == "llama") v.kind = vocabulary::model::llama_spm;
  else if (model.empty()) throw fail("no tokenizer (tokenizer.ggml.model is missing)");
  else throw fail("unsupported tokenizer model '" + model + "' (supported: gpt2, llama)");

  for (const auto token : file.get_string_array("tokenizer.ggml.tokens")) v.tokens.emplace_back(token);
  if (v.tokens.empty()) throw fail("tokenizer.ggml.tokens is empty");
  const auto n = v.tokens.size();
  if (file.contains("tokenizer.ggml.scores")) {
    v.scores = file.get_f32_array("tokenizer.ggml.scores");
    if (v.scores.size() != n)
      throw fail(std::to_string(v.scores.size()) + " scores for " + std::to_string(n) + " tokens");
  }
  if (file.contains("tokenizer.ggml.token_type")) {
    v.token_types = file.get_i32_array("tokenizer.ggml.token_type");
    if (v.token_types.size() != n)
      throw fail(std::to_string(v.token_types.size()) + " token types for " + std::to_string(n) + " tokens");
  }
  if (v.kind == vocabulary::model::gpt2_bpe) {
    if (!file.contains("tokenizer.ggml.merges")) throw fail("a gpt2 tokenizer without tokenizer.ggml.merges");
    for (const auto m : file.get_string_array("tokenizer.ggml.merges")) v.merges.emplace_back(m);
    v.pre = file.get_string_or("tokenizer.ggml.pre", "default");
  } else {
    v.pre.clear();
  }

  // Special ids: absent or 0xFFFFFFFF (how converters write "none") is -1. SPM vocabularies default to
  // llama's <s> = 1, </s> = 2, as llama.cpp does.
  const bool spm = v.kind == vocabulary::model::llama_spm;
  const auto special = [&](const char* key, int32_t fallback) -> int32_t {
    const gguf_value* value = file.find(key);
    if (!value) return fallback < int32_t(n) ? fallback : -1;
    const int64_t id = value->as_i64();
    if (id == 0xFFFFFFFFll || id == -1) return -1;
    if (id < 0 || id >= int64_t(n)) throw fail(std::string(key) + " = " + std::to_string(id) + " is out of range");
    return int32_t(id);
  };
  v.bos = special("tokenizer.ggml.bos_token_id", spm ? 1 : -1);
  v.eos = special("tokenizer.ggml.eos_token_id", spm ? 2 : -1);
  v.pad = special("tokenizer.ggml.padding_token_id", -1);
  v.add_bos = file.get_bool_or("tokenizer.ggml.add_bos_token", spm) && v.bos >= 0;
  v.add_space_prefix = file.get_bool_or("tokenizer.ggml.add_space_prefix", spm);
  v.chat_template = file.get_string_or("tokenizer.chat_template", "");
  return v;
}

}  // namespace octo::model_file
