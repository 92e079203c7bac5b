// SentencePiece-style BPE as llama GGUF vocabularies need it: start from single characters, repeatedly
// merge the adjacent pair whose joined text is the best-scoring token, and fall back to byte tokens.
#include <cstdio>
#include <queue>

#include "octo/error.hpp"
#include "tokenizer_detail.hpp"

namespace octo::model_file::detail {

spm_encoder::spm_encoder(const vocabulary& vocab, const token_map& ids) : vocab_(&vocab), ids_(&ids) {
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    byte_ids_[b] = lookup(ids, name);
  }
  for (int32_t i = 0; i < vocab.size(); ++i)
    if (vocab.type_of(i) == token_type::unknown) {
      unk_ = i;
      break;
    }
}

void spm_encoder::encode(std::string_view text, std::vector<int32_t>& out) const {
  if (text.empty()) return;
  struct symbol {
    int32_t prev, next;
    size_t begin, length;  // length 0: merged into its left neighbour
  };
  std::vector<symbol> sym;
  for (size_t i = 0; i < text.size();) {
    const size_t n = std::min(utf8_length(uint8_t(text[i])), text.size() - i);
    sym.push_back({int32_t(sym.size()) - 1, int32_t(sym.size()) + 1, i, n});
    i += n;
  }
  sym.back().next = -1;

  struct candidate {
    float score;
    int32_t left, right;
    size_t length;
    // Best score first; for equal scores the leftmost pair.
    bool operator<(const candidate& o) const { return score != o.score ? score < o.score : left > o.left; }
  };
  std::priority_queue<candidate> heap;

  auto merge_allowed = [&](int32_t id) {
    const int32_t t = vocab_->type_of(id);
    return t == token_type::normal || t == token_type::user_defined || t == token_type::undefined;
  };
  auto consider = [&](int32_t l, int32_t r) {
    if (l < 0 || r < 0) return;
    const symbol& a = sym[size_t(l)];
    const symbol& b = sym[size_t(r)];
    const std::string_view joined = text.substr(a.begin, a.length + b.length);
    const int32_t id = lookup(*ids_, joined);
    if (id < 0 || !merge_allowed(id)) return;
    heap.push({vocab_->scores.empty() ? 0.0f : vocab_->scores[size_t(id)], l, r, joined.size()});
  };
  for (int32_t i = 1; i < int32_t(sym.size()); ++i) consider(i - 1, i);

  while (!heap.empty()) {
    const candidate c = heap.top();
    heap.pop();
    symbol& l = sym[size_t(c.left)];
    symbol& r = sym[size_t(c.right)];
    // Stale: either side changed since the pair was queued.
    if (l.length == 0 || r.length == 0 || l.next != c.right || l.length + r.length != c.length) continue;
    l.length += r.length;
    r.length = 0;
    l.next = r.next;
    if (r.next >= 0) sym[size_t(r.next)].prev = c.left;
    consider(l.prev, c.left);
    consider(c.left, l.next);
  }

  // Every merge formed a token, so a symbol is a token unless it is a single character the vocabulary
  // lacks: that one falls back to its bytes.
  for (int32_t i = 0; i >= 0; i = sym[size_t(i)].next) {
    const std::string_view piece = text.substr(sym[size_t(i)].begin, sym[size_t(i)].length);
    const int32_t id = lookup(*ids_, piece);
    if (id >= 0 && merge_allowed(id)) {
      out.push_back(id);
      continue;
    }
    for (const char ch : piece) {
      const int32_t b = byte_ids_[uint8_t(ch)];
      if (b >= 0) out.push_back(b);
      else if (unk_ >= 0) out.push_back(unk_);
      else throw error("tokenizer: no token for byte " + std::to_string(uint8_t(ch)) + " and no <unk>");
    }
  }
}

}  // namespace octo::model_file::detail
