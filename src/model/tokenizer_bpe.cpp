// Byte-level BPE (GPT-2 family, Qwen2, Llama 3, SmolLM): PCRE2 pre-tokenizer regexes with Unicode
// properties, bytes mapped to printable code points, then merges applied by rank with a priority queue.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <queue>

#include "octo/error.hpp"
#include "tokenizer_detail.hpp"

namespace octo::model_file::detail {
namespace {

// The pre-tokenizers' patterns. \s is widened by U+0085 (NEL), which is Unicode White_Space (and so
// whitespace to Hugging Face's Oniguruma and to llama.cpp) but not Z-category, PCRE2's \s with UCP.
#define OCTO_WS "\\s\\x{85}"
// Qwen2's tokenizer.json Split pattern: like GPT-4's cl100k but digits one by one.
constexpr const char* qwen2_pattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^" OCTO_WS
    "\\p{L}\\p{N}]+[\\r\\n]*|[" OCTO_WS "]*[\\r\\n]+|[" OCTO_WS "]+(?![^" OCTO_WS "])|[" OCTO_WS "]+";
// llama 3's: the same with runs of up to three digits.
constexpr const char* llama3_pattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^" OCTO_WS
    "\\p{L}\\p{N}]+[\\r\\n]*|[" OCTO_WS "]*[\\r\\n]+|[" OCTO_WS "]+(?![^" OCTO_WS "])|[" OCTO_WS "]+";
// GPT-2's original.
constexpr const char* gpt2_pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" OCTO_WS "\\p{L}\\p{N}]+|[" OCTO_WS
    "]+(?![^" OCTO_WS "])|[" OCTO_WS "]+";
#undef OCTO_WS

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  if (pcre2_get_error_message(code, buffer, sizeof buffer) < 0) return "PCRE2 error " + std::to_string(code);
  return reinterpret_cast<const char*>(buffer);
}

}  // namespace

struct bpe_encoder::regex {
  pcre2_code* code = nullptr;
  pcre2_code* digits = nullptr;  // SmolLM's Digits pre-tokenizer: each \p{N} a piece before `code` splits
  ~regex() {
    pcre2_code_free(code);
    pcre2_code_free(digits);
  }
};

namespace {

pcre2_code* compile(const char* pattern) {
  int code = 0;
  PCRE2_SIZE offset = 0;
  // MATCH_INVALID_UTF: bytes that are not UTF-8 never match and so become pieces of their own.
  pcre2_code* c = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern), PCRE2_ZERO_TERMINATED,
                                PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &code, &offset, nullptr);
  if (!c) throw error("tokenizer: pre-tokenizer regex does not compile: " + pcre2_message(code));
  pcre2_jit_compile(c, PCRE2_JIT_COMPLETE);  // the interpreter remains if JIT is unavailable
  return c;
}

struct match_data {
  pcre2_match_data* md;
  explicit match_data(const pcre2_code* code) : md(pcre2_match_data_create_from_pattern(code, nullptr)) {
    if (!md) throw error("tokenizer: out of memory for regex match data");
  }
  ~match_data() { pcre2_match_data_free(md); }
  match_data(const match_data&) = delete;
  match_data& operator=(const match_data&) = delete;
};

// Calls piece(start, end) for every match of `code` in text and for the bytes between matches (which no
// alternative takes), in order, covering the text. `m` is match data made for `code`.
template <class F>
void split(const pcre2_code* code, const match_data& m, std::string_view text, F&& piece) {
  const auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;
  while (pos < text.size()) {
    const int rc = pcre2_match(code, subject, text.size(), pos, 0, m.md, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) {
      piece(pos, text.size());
      break;
    }
    if (rc < 0) throw error("tokenizer: pre-tokenizer regex failed: " + pcre2_message(rc));
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(m.md);
    size_t start = ov[0], end = ov[1];
    if (start > pos) piece(pos, start);
    if (end == start) {  // cannot happen with these patterns; never loop forever anyway
      end = std::min(text.size(), start + utf8_length(uint8_t(text[start])));
    }
    piece(start, end);
    pos = end;
  }
}

}  // namespace

bpe_encoder::bpe_encoder(const vocabulary& vocab, const token_map& ids) : regex_(std::make_unique<regex>()) {
  // GGUF's tokenizer.ggml.pre names the pre-tokenizer; several names share one regex (as llama.cpp maps
  // them): DeepSeek-R1's Qwen distills ship Qwen2's tokenizer as "deepseek-r1-qwen", Smaug's is
  // Llama 3's as "smaug-bpe". SmolLM's ("smollm": Hugging Face's Digits(individual) then ByteLevel)
  // splits off every digit, then splits the rest as GPT-2 does.
  const char* pattern = nullptr;
  const std::string& pre = vocab.pre;
  if (pre == "qwen2" || pre == "deepseek-r1-qwen") pattern = qwen2_pattern;
  else if (pre == "llama-bpe" || pre == "llama3" || pre == "smaug-bpe") pattern = llama3_pattern;
  else if (pre == "default" || pre == "gpt2" || pre.empty() || pre == "smollm") pattern = gpt2_pattern;
  else
    throw error("tokenizer: unsupported pre-tokenizer '" + pre +
                "' (octo knows gpt2, qwen2, deepseek-r1-qwen, llama-bpe, smaug-bpe and smollm)");
  regex_->code = compile(pattern);
  if (pre == "smollm") regex_->digits = compile("\\p{N}");

  for (int b = 0; b < 256; ++b) {
    std::string text;
    append_utf8(text, byte_to_code_point(uint8_t(b)));
    byte_ids_[b] = lookup(ids, text);
    if (byte_ids_[b] < 0)
      throw error("tokenizer: byte-level vocabulary lacks the token for byte " + std::to_string(b));
  }

  merges_.reserve(vocab.merges.size());
  for (size_t rank = 0; rank < vocab.merges.size(); ++rank) {
    const std::string& m = vocab.merges[rank];
    const auto space = m.find(' ');
    const auto where = [&] { return "tokenizer: merge " + std::to_string(rank) + " '" + m + "'"; };
    if (space == std::string::npos) throw error(where() + " is not two tokens separated by a space");
    const std::string_view left(m.data(), space), right(m.data() + space + 1, m.size() - space - 1);
    const int32_t l = lookup(ids, left), r = lookup(ids, right);
    std::string joined(left);
    joined += right;
    const int32_t result = lookup(ids, joined);
    if (l < 0 || r < 0 || result < 0) throw error(where() + " names a token not in the vocabulary");
    merges_.try_emplace((uint64_t(uint32_t(l)) << 32) | uint32_t(r), merge{int32_t(rank), result});
  }
}

bpe_encoder::~bpe_encoder() = default;

void bpe_encoder::encode(std::string_view text, std::vector<int32_t>& out) const {
  const match_data m(regex_->code);
  const auto words = [&](std::string_view part) {
    split(regex_->code, m, part, [&](size_t a, size_t b) { encode_word(part.substr(a, b - a), out); });
  };
  if (regex_->digits) {
    const match_data md(regex_->digits);
    split(regex_->digits, md, text, [&](size_t a, size_t b) { words(text.substr(a, b - a)); });
  } else {
    words(text);
  }
}

void bpe_encoder::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  constexpr size_t max_cached_length = 128;
  constexpr size_t max_cache_entries = 1 << 16;
  const bool cacheable = word.size() <= max_cached_length;
  if (cacheable) {
    std::lock_guard lock(cache_mutex_);
    if (const auto it = cache_.find(word); it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }

  // Symbols in a doubly linked list over the word's bytes; a min-heap of candidate pairs ordered by
  // merge rank, then position (leftmost first, as Hugging Face does for equal ranks).
  struct symbol {
    int32_t id, prev, next;
  };
  std::vector<symbol> sym(word.size());
  for (size_t i = 0; i < word.size(); ++i)
    sym[i] = {byte_ids_[uint8_t(word[i])], int32_t(i) - 1, i + 1 < word.size() ? int32_t(i + 1) : -1};

  struct candidate {
    int32_t rank, left, right, left_id, right_id, result;
    bool operator>(const candidate& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
  };
  std::priority_queue<candidate, std::vector<candidate>, std::greater<>> heap;
  auto consider = [&](int32_t l, int32_t r) {
    if (l < 0 || r < 0) return;
    const auto it = merges_.find((uint64_t(uint32_t(sym[size_t(l)].id)) << 32) | uint32_t(sym[size_t(r)].id));
    if (it == merges_.end()) return;
    heap.push({it->second.rank, l, r, sym[size_t(l)].id, sym[size_t(r)].id, it->second.result});
  };
  for (int32_t i = 0; i + 1 < int32_t(word.size()); ++i) consider(i, i + 1);

  while (!heap.empty()) {
    const candidate c = heap.top();
    heap.pop();
    symbol& l = sym[size_t(c.left)];
    // Stale: one side was merged away or into something else since this pair was queued.
    if (l.id != c.left_id || l.next != c.right || sym[size_t(c.right)].id != c.right_id) continue;
    symbol& r = sym[size_t(c.right)];
    l.id = c.result;
    l.next = r.next;
    if (r.next >= 0) sym[size_t(r.next)].prev = c.left;
    r.id = -1;
    consider(l.prev, c.left);
    consider(c.left, l.next);
  }

  std::vector<int32_t> ids;
  for (int32_t i = 0; i >= 0; i = sym[size_t(i)].next) ids.push_back(sym[size_t(i)].id);
  out.insert(out.end(), ids.begin(), ids.end());
  if (cacheable) {
    std::lock_guard lock(cache_mutex_);
    if (cache_.size() >= max_cache_entries) cache_.clear();  // bounded memory on endless varied input
    cache_.try_emplace(std::string(word), std::move(ids));
  }
}

}  // namespace octo::model_file::detail
