// SentencePiece-style BPE: a hand-built vocabulary whose merges are worked out by hand below, and the
// real stories260K vocabulary read from its GGUF against the golden greedy continuation.
#include <doctest/doctest.h>

#include "../support/test_data.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include <octo/error.hpp>
#include <octo/model_file/gguf.hpp>
#include <octo/model_file/gguf_writer.hpp>
#include <octo/model_file/tokenizer.hpp>

using namespace octo::model_file;

namespace {

const std::filesystem::path stories_dir = std::filesystem::path(OCTO_SHARED_DATA_DIR) / "stories260K";

using octo::test::slurp;

// <unk> <s> </s>, 256 byte tokens (ids 3..258), then ▁ a b c ab bc abc ▁a.
constexpr int32_t byte_id(int b) { return 3 + b; }
constexpr int32_t sp = 259, a = 260, b = 261, c = 262, ab = 263, bc = 264, abc = 265, sp_a = 266;

vocabulary toy_vocabulary() {
  vocabulary v;
  v.kind = vocabulary::model::llama_spm;
  v.pre.clear();
  auto add = [&](std::string text, float score, int32_t type) {
    v.tokens.push_back(std::move(text));
    v.scores.push_back(score);
    v.token_types.push_back(type);
  };
  add("<unk>", 0, token_type::unknown);
  add("<s>", 0, token_type::control);
  add("</s>", 0, token_type::control);
  for (int i = 0; i < 256; ++i) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", i);
    add(name, 0, token_type::byte);
  }
  add("\xE2\x96\x81", -10, token_type::normal);
  add("a", -10, token_type::normal);
  add("b", -10, token_type::normal);
  add("c", -10, token_type::normal);
  add("ab", -1.0f, token_type::normal);
  add("bc", -0.5f, token_type::normal);
  add("abc", -0.1f, token_type::normal);
  add("\xE2\x96\x81" "a", -2.0f, token_type::normal);
  v.bos = 1;
  v.eos = 2;
  v.add_bos = true;
  return v;
}

}  // namespace

TEST_CASE("spm: merges by score on a hand-built vocabulary") {
  const tokenizer tok(toy_vocabulary());
  using ids = std::vector<int32_t>;
  // "▁abc": pairs ▁a -2, ab -1, bc -0.5 → bc first; then a+bc = abc (-0.1); ▁+abc is no token.
  CHECK(tok.encode("abc", true) == ids{1, sp, abc});
  CHECK(tok.encode("abc") == ids{sp, abc});
  // "▁ab▁a": ab (-1) first, which makes the first ▁a stale; the second ▁a (-2) merges.
  CHECK(tok.encode("ab a") == ids{sp, ab, sp_a});
  // "▁cb": no pair is a token.
  CHECK(tok.encode("cb") == ids{sp, c, b});
  // é is not in the vocabulary: its two UTF-8 bytes.
  CHECK(tok.encode("\xC3\xA9") == ids{sp, byte_id(0xC3), byte_id(0xA9)});
  // Control tokens in the text; the text after one gets the dummy space again.
  CHECK(tok.encode("a</s>b") == ids{sp_a, 2, sp, b});
  // Not parsed: one fragment "▁a</s>b", the characters outside the vocabulary as bytes.
  CHECK(tok.encode("a</s>b", false, false) ==
        ids{sp_a, byte_id('<'), byte_id('/'), byte_id('s'), byte_id('>'), b});
  CHECK(tok.encode("").empty());
  CHECK(tok.encode("", true) == ids{1});

  CHECK(tok.decode(ids{1, sp, abc}, false) == "abc");  // the dummy prefix's space is dropped
  CHECK(tok.decode(ids{1, sp, abc}) == "<s>abc");
  CHECK(tok.decode(ids{sp_a, sp, ab}) == "a ab");
  CHECK(tok.decode(ids{byte_id(0xC3), byte_id(0xA9)}) == "\xC3\xA9");
  CHECK(tok.token_to_piece(sp_a) == " a");
  CHECK(tok.token_to_piece(byte_id('\n')) == "\n");
  CHECK_THROWS_AS(tok.decode(ids{267}), octo::error);

  vocabulary no_prefix = toy_vocabulary();
  no_prefix.add_space_prefix = false;
  const tokenizer plain(no_prefix);
  CHECK(plain.encode("abc") == ids{abc});
  CHECK(plain.decode(ids{sp_a}) == " a");

  // Streaming: the dummy space is dropped from the first piece only; split bytes wait.
  token_stream s(tok);
  CHECK(s.push(1).empty());
  CHECK(s.push(sp_a) == "a");
  CHECK(s.push(byte_id(0xC3)).empty());
  CHECK(s.push(byte_id(0xA9)) == "\xC3\xA9");
  CHECK(s.push(sp_a) == " a");
  CHECK(s.finish().empty());
}

TEST_CASE("spm: bad vocabularies give octo::error") {
  vocabulary v = toy_vocabulary();
  v.scores.pop_back();
  CHECK_THROWS_AS(tokenizer{v}, octo::error);
  v = toy_vocabulary();
  v.token_types.back() = 42;
  CHECK_THROWS_AS(tokenizer{v}, octo::error);
  v = toy_vocabulary();
  v.bos = -1;  // add_bos without a BOS
  CHECK_THROWS_AS(tokenizer{v}, octo::error);
  v = toy_vocabulary();
  v.tokens.clear();
  v.scores.clear();
  v.token_types.clear();
  CHECK_THROWS_AS(tokenizer{v}, octo::error);
}

TEST_CASE("spm: stories260K's vocabulary from its GGUF decodes the golden continuation") {
  const auto file = gguf_file::open(stories_dir / "stories260K.gguf");
  const tokenizer tok(load_gguf_vocabulary(file));
  const vocabulary& v = tok.vocab();
  CHECK(v.kind == vocabulary::model::llama_spm);
  CHECK(v.size() == 512);
  CHECK(v.bos == 1);
  CHECK(v.eos == 2);
  CHECK(v.pad == -1);  // stored as 0xFFFFFFFF
  CHECK(v.add_bos);
  CHECK(v.tokens[3] == "<0x00>");
  CHECK(v.type_of(3) == token_type::byte);

  const auto golden_ids = nlohmann::json::parse(slurp(stories_dir / "stories260K.greedy-from-bos.ids.txt"))
                              .get<std::vector<int32_t>>();
  std::string golden_text = slurp(stories_dir / "stories260K.greedy-from-bos.txt");
  // The file ends with a newline of its own: the 257 ids end at the closing quote.
  REQUIRE(golden_text.ends_with("\"\n"));
  golden_text.pop_back();
  REQUIRE(golden_ids.size() == 257);
  CHECK(tok.decode(golden_ids) == golden_text);
  // With the BOS the generation started from, as a generator would hold it.
  std::vector<int32_t> with_bos{1};
  with_bos.insert(with_bos.end(), golden_ids.begin(), golden_ids.end());
  CHECK(tok.decode(with_bos, false) == golden_text);

  token_stream s(tok);
  std::string streamed;
  for (const int32_t id : with_bos) streamed += s.push(id);
  streamed += s.finish();
  CHECK(streamed == golden_text);

  const auto ids = tok.encode(golden_text, true);
  REQUIRE(!ids.empty());
  CHECK(ids.front() == 1);
  CHECK(tok.decode(ids, false) == golden_text);
  // The model's greedy choice is also the tokenizer's own segmentation of its text.
  CHECK(std::vector<int32_t>(ids.begin() + 1, ids.end()) == golden_ids);

  // Text outside the 512-token vocabulary falls back to bytes and still round trips.
  for (const std::string text : {"Grüße, 世界! 🦙", "tab\tand\nnewline  two spaces", "  leading", "x "}) {
    INFO(text);
    CHECK(tok.decode(tok.encode(text, true), false) == text);
  }
  // Random strings over ASCII, multi-byte characters and stray bytes (fixed seed) round trip.
  const std::vector<std::string> alphabet = {"a", "e", " ", "  ", "\n", "\t", "Lily", ".", "'", "\"", "7",
                                             "\xC3\xA9", "\xE4\xB8\xAD", "\xF0\x9F\xA6\x99", "\xFF", "\x80"};
  uint32_t state = 12345;
  for (int n = 0; n < 300; ++n) {
    std::string text;
    const int length = int((state = state * 1664525u + 1013904223u) >> 27);
    for (int i = 0; i < length; ++i) text += alphabet[((state = state * 1664525u + 1013904223u) >> 16) % alphabet.size()];
    INFO("[" << text << "]");
    CHECK(tok.decode(tok.encode(text, true), false) == text);
  }
  // Control tokens in the text: ids when parsed (and then not rendered), plain text otherwise.
  const std::string with_markup = "<s> not special? </s>";
  CHECK(tok.encode(with_markup).front() == 1);
  CHECK(tok.decode(tok.encode(with_markup, true, false), false) == with_markup);
}

TEST_CASE("spm: GGUF tokenizer metadata problems give one clear octo::error") {
  gguf_writer w;
  const auto problem = [&]() -> std::string {
    try {
      const auto f = gguf_file::from_bytes(w.to_bytes(), "test.gguf");
      load_gguf_vocabulary(f);
    } catch (const octo::error& e) {
      return e.what();
    }
    return "no error";
  };
  w.set_string("general.architecture", "llama");
  CHECK(problem().find("tokenizer.ggml.model is missing") != std::string::npos);
  w.set_string("tokenizer.ggml.model", "bert");
  CHECK(problem().find("unsupported tokenizer model 'bert'") != std::string::npos);
  w.set_string("tokenizer.ggml.model", "llama");
  CHECK(problem().find("tokenizer.ggml.tokens") != std::string::npos);
  w.set("tokenizer.ggml.tokens", gguf_value::array_of_strings({"<unk>", "<s>", "</s>", "a"}));
  w.set("tokenizer.ggml.scores", gguf_value::array_of_f32({0, 0, 0}));
  CHECK(problem().find("3 scores for 4 tokens") != std::string::npos);
  w.set("tokenizer.ggml.scores", gguf_value::array_of_f32({0, 0, 0, -1}));
  w.set_u32("tokenizer.ggml.bos_token_id", 9);
  CHECK(problem().find("bos_token_id = 9 is out of range") != std::string::npos);
  w.set_u32("tokenizer.ggml.bos_token_id", 0xFFFFFFFFu);
  CHECK(problem() == "no error");
  {
    const auto f = gguf_file::from_bytes(w.to_bytes(), "test.gguf");
    const vocabulary v = load_gguf_vocabulary(f);
    CHECK(v.bos == -1);
    CHECK(v.eos == 2);  // llama's default </s>
    CHECK_FALSE(v.add_bos);
    CHECK(v.add_space_prefix);
  }
  w.set_string("tokenizer.ggml.model", "gpt2");
  CHECK(problem().find("without tokenizer.ggml.merges") != std::string::npos);
}
