// tokenizer: text ↔ token ids for a vocabulary: byte-level BPE (GPT-2 / Qwen2 pre-tokenizers, PCRE2
// regexes) and SentencePiece-style BPE (llama GGUF vocabularies), with special tokens split out first.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "octo/model_file/vocabulary.hpp"

namespace octo::model_file {

/// Encodes and decodes text for one vocabulary.
/// @code
///   tokenizer tok(load_gguf_vocabulary(gguf_file::open("qwen2.gguf")));
///   std::vector<int32_t> ids = tok.encode(apply_chatml({{"user", "Hi"}}));
///   token_stream out(tok);
///   for (int32_t id : generated) std::cout << out.push(id) << std::flush;
///   std::cout << out.finish();
/// @endcode
class tokenizer {
 public:
  // Validates the vocabulary (throws octo::error naming the problem) and builds the lookup tables.
  explicit tokenizer(vocabulary vocab);
  ~tokenizer();
  tokenizer(tokenizer&&) noexcept;
  tokenizer& operator=(tokenizer&&) noexcept;

  // add_special: prepend BOS where the vocabulary asks for it (add_bos). parse_special: control
  // tokens written in the text (<|im_start|>) become their ids; user-defined tokens always do.
  // Any bytes are accepted; invalid UTF-8 is encoded byte by byte. Safe to call from several threads.
  // No Unicode normalization is applied (as in llama.cpp): Hugging Face's Qwen2 tokenizer NFC-normalizes
  // first, so text that is not in NFC (decomposed accents) can tokenize differently there.
  std::vector<int32_t> encode(std::string_view text, bool add_special = false,
                              bool parse_special = true) const;

  // The bytes the ids stand for, concatenated (not necessarily valid UTF-8 if the ids are cut short).
  // render_special: control tokens appear as their text, otherwise as nothing. An id out of range
  // throws octo::error. SPM: the leading space of the dummy prefix is dropped, as SentencePiece does.
  std::string decode(std::span<const int32_t> ids, bool render_special = true) const;

  // One token's raw bytes (a piece of a UTF-8 character possibly), for streaming output; control tokens
  // give their text. See token_stream for stitching pieces into valid UTF-8.
  const std::string& token_to_piece(int32_t id) const;

  const vocabulary& vocab() const;
  int32_t size() const;
  // The id of a token by its stored text, or -1.
  int32_t find(std::string_view token_text) const;
  bool is_control(int32_t id) const;
  // EOS, or a control token that ends a turn (<|im_end|>, <|endoftext|>).
  bool is_end_of_generation(int32_t id) const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

// Turns a stream of generated ids into printable text: bytes of a UTF-8 character split over several
// tokens are held back until complete; bytes that can never become valid UTF-8 come out as U+FFFD.
class token_stream {
 public:
  explicit token_stream(const tokenizer& tok, bool render_special = false)
      : tok_(&tok), render_special_(render_special) {}
  // Text that is complete after this token (possibly empty).
  std::string push(int32_t id);
  // Whatever is still held back, invalid bytes replaced by U+FFFD.
  std::string finish();

 private:
  const tokenizer* tok_;
  bool render_special_;
  bool at_start_ = true;
  std::string pending_;
};

}  // namespace octo::model_file
