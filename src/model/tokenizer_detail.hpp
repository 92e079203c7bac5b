// Internals shared by the tokenizer's source files (not installed): the token text → id table and the
// two encoders, each working on one fragment of text that holds no special tokens.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "octo/model_file/vocabulary.hpp"

namespace octo::model_file::detail {

struct string_hash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};
using token_map = std::unordered_map<std::string, int32_t, string_hash, std::equal_to<>>;

inline int32_t lookup(const token_map& m, std::string_view text) {
  const auto it = m.find(text);
  return it == m.end() ? -1 : it->second;
}

// Length of the UTF-8 sequence a lead byte announces; 1 for bytes that cannot lead one.
inline size_t utf8_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  if ((lead & 0xF8) == 0xF0) return 4;
  return 1;
}

void append_utf8(std::string& out, uint32_t code_point);

// GPT-2's reversible byte ↔ printable code point mapping (bytes_to_unicode).
uint32_t byte_to_code_point(uint8_t b);
// -1 if the code point is not one of the 256 images.
int byte_of_code_point(uint32_t cp);

// Byte-level BPE: regex pre-tokenizer, then merges by rank per pre-token, memoized.
class bpe_encoder {
 public:
  bpe_encoder(const vocabulary& vocab, const token_map& ids);
  ~bpe_encoder();
  void encode(std::string_view text, std::vector<int32_t>& out) const;

 private:
  struct regex;
  struct merge {
    int32_t rank;
    int32_t result;
  };
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;

  std::unique_ptr<regex> regex_;
  std::unordered_map<uint64_t, merge> merges_;
  int32_t byte_ids_[256];
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>, string_hash, std::equal_to<>> cache_;
};

// SentencePiece-style BPE: characters merged by the score of the token they form, best first; what
// remains unknown falls back to <0xAB> byte tokens. Input: text with spaces already turned into ▁.
class spm_encoder {
 public:
  spm_encoder(const vocabulary& vocab, const token_map& ids);
  void encode(std::string_view text, std::vector<int32_t>& out) const;

 private:
  const vocabulary* vocab_;
  const token_map* ids_;
  int32_t byte_ids_[256];
  int32_t unk_ = -1;
};

}  // namespace octo::model_file::detail
