// The tokenizer front end: vocabulary checks, special tokens split out of the text, dispatch to the
// BPE or SPM encoder, decoding to bytes, and the UTF-8 stitching of streamed pieces.
#include "octo/model_file/tokenizer.hpp"

#include <algorithm>
#include <array>
#include <optional>

#include "octo/error.hpp"
#include "tokenizer_detail.hpp"

namespace octo::model_file {
namespace detail {

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

namespace {
// bytes_to_unicode: printable Latin-1 bytes map to themselves, the other 68 to U+0100 onwards in order.
constexpr std::array<uint32_t, 256> byte_images = [] {
  std::array<uint32_t, 256> m{};
  uint32_t next = 256;
  for (uint32_t b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    m[b] = printable ? b : next++;
  }
  return m;
}();
}  // namespace

uint32_t byte_to_code_point(uint8_t b) { return byte_images[b]; }

int byte_of_code_point(uint32_t cp) {
  if (cp < 256 && byte_images[cp] == cp) return int(cp);
  if (cp >= 256 && cp < 256 + 68)
    for (int b = 0; b < 256; ++b)
      if (byte_images[size_t(b)] == cp) return b;
  return -1;
}

// Decodes one code point at s[i], advancing i; nullopt (i unchanged) for a malformed sequence.
std::optional<uint32_t> next_code_point(std::string_view s, size_t& i) {
  const auto lead = uint8_t(s[i]);
  const size_t n = utf8_length(lead);
  if (n == 1) {
    if (lead >= 0x80) return std::nullopt;
    ++i;
    return lead;
  }
  if (i + n > s.size()) return std::nullopt;
  uint32_t cp = lead & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) {
    const auto c = uint8_t(s[i + k]);
    if ((c & 0xC0) != 0x80) return std::nullopt;
    cp = (cp << 6) | (c & 0x3F);
  }
  // Overlong forms, surrogates and code points past U+10FFFF are malformed too.
  if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
      (cp >= 0xD800 && cp <= 0xDFFF))
    return std::nullopt;
  i += n;
  return cp;
}

}  // namespace detail

using detail::token_map;

struct tokenizer::impl {
  vocabulary vocab;
  token_map ids;
  std::vector<std::string> pieces;  // each token's raw bytes
  // Tokens matched literally in text, by first byte, longest first.
  std::array<std::vector<int32_t>, 256> specials_by_first_byte;
  std::optional<detail::bpe_encoder> bpe;
  std::optional<detail::spm_encoder> spm;

  void encode_fragment(std::string_view text, bool first_or_after_special, std::vector<int32_t>& out) const {
    if (text.empty()) return;
    if (bpe) {
      bpe->encode(text, out);
      return;
    }
    // SentencePiece: a dummy space in front, then every space written as ▁.
    std::string escaped;
    escaped.reserve(text.size() * 3 + 3);
    if (vocab.add_space_prefix && first_or_after_special) escaped += "\xE2\x96\x81";
    for (const char c : text) {
      if (c == ' ') escaped += "\xE2\x96\x81";
      else escaped += c;
    }
    spm->encode(escaped, out);
  }
};

namespace {

void validate(const vocabulary& v) {
  const auto n = v.tokens.size();
  if (n == 0) throw error("tokenizer: the vocabulary has no tokens");
  if (n > size_t(INT32_MAX)) throw error("tokenizer: the vocabulary has too many tokens");
  if (!v.scores.empty() && v.scores.size() != n)
    throw error("tokenizer: " + std::to_string(v.scores.size()) + " scores for " + std::to_string(n) + " tokens");
  if (!v.token_types.empty() && v.token_types.size() != n)
    throw error("tokenizer: " + std::to_string(v.token_types.size()) + " token types for " +
                std::to_string(n) + " tokens");
  for (const int32_t t : v.token_types)
    if (t < token_type::undefined || t > token_type::byte)
      throw error("tokenizer: unknown token type " + std::to_string(t));
  for (const auto& [name, id] : {std::pair{"BOS", v.bos}, {"EOS", v.eos}, {"padding", v.pad}})
    if (id < -1 || id >= int32_t(n))
      throw error(std::string("tokenizer: ") + name + " token id " + std::to_string(id) + " out of range");
  if (v.add_bos && v.bos < 0) throw error("tokenizer: the vocabulary asks for BOS but has none");
  if (v.kind == vocabulary::model::llama_spm && !v.merges.empty())
    throw error("tokenizer: an SPM vocabulary with merges is not supported");
}

// The raw bytes a token stands for.
std::string piece_of(const vocabulary& v, int32_t id) {
  const std::string& text = v.tokens[size_t(id)];
  const int32_t type = v.type_of(id);
  if (type == token_type::byte) {
    // <0xAB>
    if (text.size() == 6 && text.starts_with("<0x") && text.back() == '>') {
      unsigned value = 0;
      for (size_t i = 3; i < 5; ++i) {
        const char c = text[i];
        const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0) return text;
        value = value * 16 + unsigned(d);
      }
      return std::string(1, char(value));
    }
    return text;
  }
  if (type != token_type::normal && type != token_type::undefined) return text;
  if (v.kind == vocabulary::model::llama_spm) {
    std::string out;
    for (size_t i = 0; i < text.size(); ++i) {
      if (text.compare(i, 3, "\xE2\x96\x81") == 0) {
        out += ' ';
        i += 2;
      } else {
        out += text[i];
      }
    }
    return out;
  }
  // Byte-level: each code point is the image of one byte. Text that is not (some vocabularies hold
  // raw added tokens typed normal) stands for itself.
  std::string out;
  for (size_t i = 0; i < text.size();) {
    const auto cp = detail::next_code_point(text, i);
    const int b = cp ? detail::byte_of_code_point(*cp) : -1;
    if (b < 0) return text;
    out += char(b);
  }
  return out;
}

}  // namespace

tokenizer::tokenizer(vocabulary vocab) : impl_(std::make_unique<impl>()) {
  validate(vocab);
  impl& m = *impl_;
  m.vocab = std::move(vocab);
  const vocabulary& v = m.vocab;
  m.ids.reserve(v.tokens.size());
  m.pieces.reserve(v.tokens.size());
  for (int32_t id = 0; id < v.size(); ++id) {
    // First id wins for duplicate texts, as in llama.cpp's GGUF vocabularies with repeated padding.
    m.ids.try_emplace(v.tokens[size_t(id)], id);
    m.pieces.push_back(piece_of(v, id));
  }
  for (int32_t id = 0; id < v.size(); ++id) {
    const int32_t t = v.type_of(id);
    const std::string& text = v.tokens[size_t(id)];
    if ((t == token_type::control || t == token_type::user_defined || t == token_type::unknown) && !text.empty())
      m.specials_by_first_byte[uint8_t(text[0])].push_back(id);
  }
  for (auto& list : m.specials_by_first_byte)
    std::stable_sort(list.begin(), list.end(), [&](int32_t a, int32_t b) {
      return v.tokens[size_t(a)].size() > v.tokens[size_t(b)].size();
    });
  if (v.kind == vocabulary::model::gpt2_bpe) m.bpe.emplace(v, m.ids);
  else m.spm.emplace(v, m.ids);
}

tokenizer::~tokenizer() = default;
tokenizer::tokenizer(tokenizer&&) noexcept = default;
tokenizer& tokenizer::operator=(tokenizer&&) noexcept = default;

std::vector<int32_t> tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  const impl& m = *impl_;
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 2);
  if (add_special && m.vocab.add_bos) out.push_back(m.vocab.bos);

  // Leftmost-longest matching of special tokens; the text between them goes to the encoder.
  size_t fragment_begin = 0;
  bool first_or_after_special = true;
  for (size_t i = 0; i < text.size();) {
    int32_t match = -1;
    for (const int32_t id : m.specials_by_first_byte[uint8_t(text[i])]) {
      if (!parse_special && m.vocab.type_of(id) != token_type::user_defined) continue;
      if (text.substr(i).starts_with(m.vocab.tokens[size_t(id)])) {
        match = id;
        break;
      }
    }
    if (match < 0) {
      ++i;
      continue;
    }
    m.encode_fragment(text.substr(fragment_begin, i - fragment_begin), first_or_after_special, out);
    out.push_back(match);
    first_or_after_special = true;
    i += m.vocab.tokens[size_t(match)].size();
    fragment_begin = i;
  }
  m.encode_fragment(text.substr(fragment_begin), first_or_after_special, out);
  return out;
}

std::string tokenizer::decode(std::span<const int32_t> ids, bool render_special) const {
  const impl& m = *impl_;
  std::string out;
  bool at_start = true;
  for (const int32_t id : ids) {
    if (id < 0 || id >= m.vocab.size())
      throw error("tokenizer: token id " + std::to_string(id) + " out of range (vocabulary of " +
                  std::to_string(m.vocab.size()) + ")");
    if (is_control(id)) {
      if (render_special) out += m.pieces[size_t(id)];
      continue;
    }
    std::string_view piece = m.pieces[size_t(id)];
    // SentencePiece drops the space its dummy prefix put in front of the text.
    if (at_start && m.spm && m.vocab.add_space_prefix && piece.starts_with(' ')) piece.remove_prefix(1);
    at_start = false;
    out += piece;
  }
  return out;
}

const std::string& tokenizer::token_to_piece(int32_t id) const {
  if (id < 0 || id >= size())
    throw error("tokenizer: token id " + std::to_string(id) + " out of range (vocabulary of " +
                std::to_string(size()) + ")");
  return impl_->pieces[size_t(id)];
}

const vocabulary& tokenizer::vocab() const { return impl_->vocab; }
int32_t tokenizer::size() const { return impl_->vocab.size(); }
int32_t tokenizer::find(std::string_view token_text) const { return detail::lookup(impl_->ids, token_text); }

bool tokenizer::is_control(int32_t id) const {
  return id >= 0 && id < size() && impl_->vocab.type_of(id) == token_type::control;
}

bool tokenizer::is_end_of_generation(int32_t id) const {
  if (id < 0 || id >= size()) return false;
  if (id == impl_->vocab.eos) return true;
  if (!is_control(id)) return false;
  const std::string& t = impl_->vocab.tokens[size_t(id)];
  return t == "<|im_end|>" || t == "<|endoftext|>" || t == "<|eot_id|>" || t == "<|end|>" || t == "</s>";
}

std::string token_stream::push(int32_t id) {
  const bool spm = tok_->vocab().kind == vocabulary::model::llama_spm;
  if (tok_->is_control(id)) {
    if (!render_special_) return {};
    pending_ += tok_->token_to_piece(id);
  } else {
    std::string_view piece = tok_->token_to_piece(id);
    if (at_start_ && spm && tok_->vocab().add_space_prefix && piece.starts_with(' ')) piece.remove_prefix(1);
    at_start_ = false;
    pending_ += piece;
  }
  // Emit every complete character; replace bytes that cannot start or continue one; keep a valid but
  // unfinished tail for the next token.
  std::string out;
  size_t i = 0;
  while (i < pending_.size()) {
    const size_t before = i;
    if (detail::next_code_point(pending_, i)) {
      out.append(pending_, before, i - before);
      continue;
    }
    // Malformed: unfinished if it is a lead byte followed only by continuation bytes up to the end.
    const size_t need = detail::utf8_length(uint8_t(pending_[i]));
    bool unfinished = need > 1 && i + need > pending_.size();
    for (size_t k = i + 1; unfinished && k < pending_.size(); ++k)
      unfinished = (uint8_t(pending_[k]) & 0xC0) == 0x80;
    if (unfinished) break;
    out += "\xEF\xBF\xBD";
    ++i;
  }
  pending_.erase(0, i);
  return out;
}

std::string token_stream::finish() {
  // Only one unfinished sequence can remain: one replacement character, as decoders print.
  std::string out = pending_.empty() ? "" : "\xEF\xBF\xBD";
  pending_.clear();
  return out;
}

}  // namespace octo::model_file
