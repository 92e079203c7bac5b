// Byte-level BPE on a hand-built vocabulary: the pre-tokenizers' splits (GPT-2 "default", "qwen2",
// "llama-bpe", "smollm" and the names that alias them) and the merge order, with every expected id
// worked out by hand below.
#include <doctest/doctest.h>

#include <octo/error.hpp>
#include <octo/model_file/tokenizer.hpp>

using namespace octo::model_file;
using ids = std::vector<int32_t>;

namespace {

// GPT-2's published byte → code point table: printable Latin-1 stays, the rest moves to U+0100 on.
std::string image(int byte) {
  int next = 256, cp = -1;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    const int c = printable ? b : next++;
    if (b == byte) cp = c;
  }
  std::string s;
  if (cp < 0x80) {
    s += char(cp);
  } else {
    s += char(0xC0 | (cp >> 6));
    s += char(0x80 | (cp & 0x3F));
  }
  return s;
}

// Ids 0..255: the byte tokens in byte order. Then one token per merge, in rank order:
//   256 Ġ1, 257 23, 258 Ġ123, 259 aa, 260 'S, 261 Ġb, 262 ĊĊ, 263 !Ċ
tokenizer make(const std::string& pre) {
  vocabulary v;
  v.kind = vocabulary::model::gpt2_bpe;
  v.pre = pre;
  for (int b = 0; b < 256; ++b) v.tokens.push_back(image(b));
  const std::string G = image(' '), C = image('\n');
  const std::vector<std::pair<std::string, std::string>> merges = {
      {G, "1"}, {"2", "3"}, {G + "1", "23"}, {"a", "a"}, {"'", "S"}, {G, "b"}, {C, C}, {"!", C}};
  for (const auto& [l, r] : merges) {
    v.merges.push_back(l + " " + r);
    v.tokens.push_back(l + r);
  }
  return tokenizer(std::move(v));
}

}  // namespace

TEST_CASE("bpe: the GPT-2 byte images") {
  CHECK(image(' ') == "\xC4\xA0");   // Ġ U+0120
  CHECK(image('\n') == "\xC4\x8A");  // Ċ U+010A
  CHECK(image('a') == "a");
}

TEST_CASE("bpe: default (GPT-2) pre-tokenizer") {
  const tokenizer t = make("default");
  CHECK(t.encode(" 123") == ids{258});  // one pre-token " 123": Ġ 1 → Ġ1, 2 3 → 23, Ġ1 23 → Ġ123
  CHECK(t.encode("IT'S") == ids{'I', 'T', '\'', 'S'});  // 's is case-sensitive: ' and S apart
  CHECK(t.encode("x!\n\ny") == ids{'x', '!', '\n', '\n', 'y'});  // "!" then "\n", "\n" (\s+(?!\S))
  CHECK(t.encode("a  b") == ids{'a', ' ', 261});
}

TEST_CASE("bpe: qwen2 pre-tokenizer: digits alone, contractions any case, punctuation takes newlines") {
  const tokenizer t = make("qwen2");
  CHECK(t.encode(" 123") == ids{' ', '1', '2', '3'});
  CHECK(t.encode("IT'S") == ids{'I', 'T', 260});
  CHECK(t.encode("x!\n\ny") == ids{'x', '!', 262, 'y'});  // "!\n\n": Ċ Ċ (rank 6) before ! Ċ (rank 7)
  CHECK(t.encode("a  b") == ids{'a', ' ', 261});
}

TEST_CASE("bpe: llama-bpe pre-tokenizer: digits in threes") {
  const tokenizer t = make("llama-bpe");
  CHECK(t.encode(" 123") == ids{' ', '1', 257});
  CHECK(t.encode(" 1234") == ids{' ', '1', 257, '4'});
}

TEST_CASE("bpe: the names that share a pre-tokenizer split as it does; others are refused by name") {
  // deepseek-r1-qwen: Qwen2's split (digits alone); smaug-bpe: Llama 3's (digits in threes).
  CHECK(make("deepseek-r1-qwen").encode(" 123") == ids{' ', '1', '2', '3'});
  CHECK(make("deepseek-r1-qwen").encode("IT'S") == ids{'I', 'T', 260});
  CHECK(make("smaug-bpe").encode(" 1234") == ids{' ', '1', 257, '4'});
  try {
    make("falcon");
    FAIL("an unknown pre-tokenizer was accepted");
  } catch (const octo::error& e) {
    CHECK(std::string(e.what()).find("unsupported pre-tokenizer 'falcon'") != std::string::npos);
  }
}

TEST_CASE("bpe: smollm pre-tokenizer: every digit apart first, then GPT-2's split of the rest") {
  const tokenizer t = make("smollm");
  CHECK(t.encode(" 123") == ids{' ', '1', '2', '3'});  // GPT-2 alone: one pre-token " 123" -> 258
  CHECK(t.encode("x1 b") == ids{'x', '1', 261});        // "x", "1", " b"
  CHECK(t.encode("IT'S") == ids{'I', 'T', '\'', 'S'});  // GPT-2's case-sensitive contractions
  CHECK(t.encode("a  b") == ids{'a', ' ', 261});
}

TEST_CASE("bpe: equal ranks merge leftmost first") {
  const tokenizer t = make("qwen2");
  CHECK(t.encode("aaa") == ids{259, 'a'});
  CHECK(t.encode("aaaa") == ids{259, 259});
  CHECK(t.decode(ids{259, 'a', 258}) == "aaa 123");
}
