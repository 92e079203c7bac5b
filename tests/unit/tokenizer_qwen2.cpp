// The Qwen2 byte-level BPE tokenizer against independent oracles: llama.cpp's 46 reference
// tokenizations, Hugging Face tokenizers' ids for tests/data/tokenizer_corpus.txt, ids looked up by hand
// in vocab.json; plus round trips, special tokens, streaming, ChatML and bad input.
#include <doctest/doctest.h>

#include "../support/test_data.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include <octo/error.hpp>
#include <octo/model_file/chat_template.hpp>
#include <octo/model_file/tokenizer.hpp>

using namespace octo::model_file;

namespace {

const std::filesystem::path qwen2_dir = octo::test::qwen2_tokenizer_dir();
using octo::test::parse_ids;
using octo::test::slurp;
using octo::test::split;

const tokenizer& qwen2() {
  static const tokenizer tok(load_hf_vocabulary(qwen2_dir));
  return tok;
}

// vocab.json read here, independently of the loader.
int32_t vocab_id(const std::string& text) {
  static const nlohmann::json vocab = nlohmann::json::parse(slurp(qwen2_dir / "vocab.json"));
  REQUIRE_MESSAGE(vocab.contains(text), "not in vocab.json: " << text);
  return vocab[text].get<int32_t>();
}

// tests/data/tokenizer_corpus.txt: records separated by lines "----8<----".
std::vector<std::string> corpus() {
  auto records = split(slurp(std::filesystem::path(OCTO_SOURCE_DIR) / "tests/data/tokenizer_corpus.txt"),
                       "\n----8<----\n");
  // The file ends with the separator line and a newline, which leaves one empty tail.
  REQUIRE(!records.empty());
  REQUIRE(records.back().empty());
  records.pop_back();
  return records;
}

}  // namespace

TEST_CASE("qwen2: the vocabulary loads from the Hugging Face files") {
  const vocabulary& v = qwen2().vocab();
  CHECK(v.kind == vocabulary::model::gpt2_bpe);
  CHECK(v.pre == "qwen2");
  CHECK(v.size() == 151646);
  CHECK(v.merges.size() == 151387);
  CHECK(v.tokens[151644] == "<|im_start|>");
  CHECK(v.token_types[151644] == token_type::control);
  CHECK(v.token_types[0] == token_type::normal);
  CHECK(v.eos == 151645);
  CHECK(v.pad == 151643);
  CHECK(v.bos == -1);
  CHECK_FALSE(v.add_bos);
  CHECK(v.chat_template.find("<|im_start|>") != std::string::npos);
}

TEST_CASE("qwen2: llama.cpp's 46 reference tokenizations match exactly") {
  const std::string dir = qwen2_dir.string() + "/reference/";
  auto inputs = split(slurp(dir + "ggml-vocab-qwen2.gguf.inp"), "\n__ggml_vocab_test__\n");
  REQUIRE(inputs.back().empty());
  inputs.pop_back();
  auto outputs = split(slurp(dir + "ggml-vocab-qwen2.gguf.out"), "\n");
  if (!outputs.empty() && outputs.back().empty()) outputs.pop_back();
  // The data README says 47; the files hold 46 inputs and 46 output lines.
  REQUIRE(inputs.size() == 46);
  REQUIRE(outputs.size() == inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    INFO("case " << i << ": [" << inputs[i] << "]");
    CHECK(qwen2().encode(inputs[i]) == parse_ids(outputs[i]));
    CHECK(qwen2().decode(qwen2().encode(inputs[i])) == inputs[i]);
  }
}

TEST_CASE("qwen2: Hugging Face tokenizers' ids for the corpus match exactly") {
  const auto records = corpus();
  CHECK(records.size() >= 300);
  auto lines = split(slurp(std::filesystem::path(OCTO_SOURCE_DIR) / "tests/data/tokenizer_corpus.qwen2.ids"), "\n");
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  REQUIRE(lines.size() == records.size());
  size_t matched = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    INFO("record " << i << ": [" << records[i] << "]");
    const auto ids = qwen2().encode(records[i]);
    CHECK(ids == parse_ids(lines[i]));
    matched += ids == parse_ids(lines[i]);
  }
  MESSAGE(matched << " of " << records.size() << " corpus records match");
}

TEST_CASE("qwen2: encode → decode round trips on the corpus and on odd input") {
  for (const auto& r : corpus()) {
    INFO("[" << r << "]");
    CHECK(qwen2().decode(qwen2().encode(r)) == r);
  }
  // Not UTF-8: bytes the regex cannot take still round trip, one byte-level token each.
  const std::string bad = "ok \xff\xfe bad \xc3 end \xe2\x82";
  CHECK(qwen2().decode(qwen2().encode(bad)) == bad);
  // Long runs do not overflow the regex engine or the merge loop.
  for (const std::string& long_run : {std::string(200000, ' '), std::string(200000, 'a'), std::string(100000, '7'),
                                      std::string(50000, '\n') + "x", [] {
                                        std::string s;
                                        for (int i = 0; i < 30000; ++i) s += "\xe4\xb8\xad";  // 中
                                        return s;
                                      }()}) {
    CHECK(qwen2().decode(qwen2().encode(long_run)) == long_run);
  }
  // Random strings over ASCII, whitespace, multi-byte characters and stray bytes (fixed seed).
  const std::vector<std::string> alphabet = {"a", "Z", " ", "  ", "\n", "\r\n", "\t", "'s", "'T", ".", "!?", "42",
                                             "\xC3\xA9", "\xE4\xB8\xAD", "\xF0\x9F\xA6\x99", "\xC2\x85",
                                             "\xE3\x80\x80", "\xFF", "\x80", "\xE4\xB8"};
  uint32_t state = 777;
  for (int n = 0; n < 500; ++n) {
    std::string text;
    const int length = int((state = state * 1664525u + 1013904223u) >> 27);
    for (int i = 0; i < length; ++i) text += alphabet[((state = state * 1664525u + 1013904223u) >> 16) % alphabet.size()];
    INFO("[" << text << "]");
    CHECK(qwen2().decode(qwen2().encode(text)) == text);
  }
  CHECK(qwen2().encode("").empty());
  CHECK(qwen2().encode("", true).empty());  // no BOS for Qwen2
}

TEST_CASE("qwen2: hand-checked ids, looked up in vocab.json") {
  // Digits one by one; " world" keeps its space; "\n" is Ċ.
  CHECK(qwen2().encode("Hello world") == std::vector<int32_t>{vocab_id("Hello"), vocab_id("Ġworld")});
  CHECK(qwen2().encode("2024") ==
        std::vector<int32_t>{vocab_id("2"), vocab_id("0"), vocab_id("2"), vocab_id("4")});
  CHECK(qwen2().encode("a\nb") == std::vector<int32_t>{vocab_id("a"), vocab_id("Ċ"), vocab_id("b")});
  CHECK(qwen2().encode("I'M") == std::vector<int32_t>{vocab_id("I"), vocab_id("'M")});
}

TEST_CASE("qwen2: special tokens are split out before pre-tokenization") {
  const auto ids = qwen2().encode("<|im_start|>user\nhi<|im_end|>\n");
  CHECK(ids == std::vector<int32_t>{151644, vocab_id("user"), vocab_id("Ċ"), vocab_id("hi"), 151645, vocab_id("Ċ")});
  CHECK(qwen2().decode(ids) == "<|im_start|>user\nhi<|im_end|>\n");
  CHECK(qwen2().decode(ids, false) == "user\nhi\n");
  // Written as text when special tokens are not parsed.
  const auto plain = qwen2().encode("<|im_end|>", false, false);
  CHECK(plain.size() > 1);
  CHECK(std::find(plain.begin(), plain.end(), 151645) == plain.end());
  CHECK(qwen2().decode(plain) == "<|im_end|>");
  CHECK(qwen2().encode("x<|endoftext|><|endoftext|>y") ==
        std::vector<int32_t>{vocab_id("x"), 151643, 151643, vocab_id("y")});
  CHECK(qwen2().is_end_of_generation(151645));
  CHECK(qwen2().is_end_of_generation(151643));
  CHECK_FALSE(qwen2().is_end_of_generation(vocab_id("hi")));
  CHECK(qwen2().find("<|im_start|>") == 151644);
  CHECK(qwen2().find("no such token") == -1);
}

TEST_CASE("qwen2: streaming holds back split UTF-8 and replaces invalid bytes") {
  // 🦙 is F0 9F A6 99; byte-level tokens of single bytes: feed them one at a time.
  const std::string llama = "\xF0\x9F\xA6\x99";
  std::vector<int32_t> bytes;
  for (const char c : llama) {
    const auto ids = qwen2().encode(std::string(1, c));
    REQUIRE(ids.size() == 1);
    bytes.push_back(ids[0]);
  }
  CHECK(qwen2().token_to_piece(bytes[0]) == "\xF0");
  token_stream s(qwen2());
  CHECK(s.push(bytes[0]).empty());
  CHECK(s.push(bytes[1]).empty());
  CHECK(s.push(bytes[2]).empty());
  CHECK(s.push(bytes[3]) == llama);
  CHECK(s.push(vocab_id("hi")) == "hi");
  CHECK(s.push(151645).empty());  // control tokens are not printed by default
  // A lead byte followed by ASCII can never complete: replaced, then the ASCII follows.
  CHECK(s.push(bytes[0]).empty());
  CHECK(s.push(vocab_id("hi")) == "\xEF\xBF\xBDhi");
  CHECK(s.push(bytes[1]) == "\xEF\xBF\xBD");  // a lone continuation byte
  CHECK(s.push(bytes[0]).empty());
  CHECK(s.finish() == "\xEF\xBF\xBD");
  CHECK(s.finish().empty());
  // The concatenation of all pieces of a text is the text.
  const std::string text = "Grüße, 世界! 🦙🦙 — ok";
  token_stream t(qwen2());
  std::string streamed;
  for (const int32_t id : qwen2().encode(text)) streamed += t.push(id);
  streamed += t.finish();
  CHECK(streamed == text);
}

TEST_CASE("qwen2: bad input gives octo::error") {
  CHECK_THROWS_AS(load_hf_vocabulary(std::filesystem::path(OCTO_SOURCE_DIR) / "no-such-folder"), octo::error);
  CHECK_THROWS_AS(qwen2().decode(std::vector<int32_t>{151646}), octo::error);
  CHECK_THROWS_AS(qwen2().decode(std::vector<int32_t>{-1}), octo::error);
  CHECK_THROWS_AS(qwen2().token_to_piece(1 << 30), octo::error);
  vocabulary v = qwen2().vocab();
  v.pre = "klingon";
  CHECK_THROWS_AS(tokenizer{v}, octo::error);
  v = qwen2().vocab();
  v.merges.push_back("Ġ notatoken");
  CHECK_THROWS_AS(tokenizer{v}, octo::error);
  v = qwen2().vocab();
  v.scores.assign(3, 0.0f);
  CHECK_THROWS_AS(tokenizer{v}, octo::error);
  v = qwen2().vocab();
  v.eos = v.size();
  CHECK_THROWS_AS(tokenizer{v}, octo::error);
}

TEST_CASE("Hugging Face loader: broken files give one clear octo::error") {
  const auto dir = std::filesystem::temp_directory_path() / ("octo_tok_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto write = [&](const char* name, const std::string& content) {
    std::ofstream(dir / name, std::ios::binary) << content;
  };
  const auto problem = [&]() -> std::string {
    try {
      load_hf_vocabulary(dir);
    } catch (const octo::error& e) {
      return e.what();
    }
    return "no error";
  };
  CHECK(problem().find("vocab.json") != std::string::npos);  // missing
  write("vocab.json", "{\"a\": 0, \"b\": ");
  CHECK(problem().find("is not valid JSON") != std::string::npos);
  write("vocab.json", "{\"a\": 0, \"b\": \"one\"}");
  CHECK(problem().find("the id of 'b' is not an integer") != std::string::npos);
  write("vocab.json", "{\"a\": 0, \"b\": 99999999999}");
  CHECK(problem().find("out of range") != std::string::npos);
  write("vocab.json", "{\"a\": 0, \"b\": 1, \"ab\": 2}");
  CHECK(problem().find("merges.txt") != std::string::npos);  // missing
  write("merges.txt", "#version: 0.2\na b\na b c\n");
  CHECK(problem().find("merges.txt' line 3") != std::string::npos);
  write("merges.txt", "#version: 0.2\na b\n");
  CHECK(problem() == "no error");
  write("added_tokens.json", "{\"<x>\": 1}");
  CHECK(problem().find("token id 1 is both 'b' and '<x>'") != std::string::npos);
  write("added_tokens.json", "{\"<x>\": 3}");
  write("tokenizer_config.json", "{\"eos_token\": \"<y>\"}");
  CHECK(problem().find("eos_token '<y>' is not in the vocabulary") != std::string::npos);
  write("tokenizer_config.json", "{\"eos_token\": {\"content\": \"<x>\"}, \"add_bos_token\": \"yes\"}");
  CHECK(problem().find("add_bos_token is not a boolean") != std::string::npos);
  write("tokenizer_config.json", "{\"eos_token\": {\"content\": \"<x>\"}}");
  const vocabulary v = load_hf_vocabulary(dir);
  CHECK(v.eos == 3);
  CHECK(v.pre == "default");
  CHECK(v.type_of(3) == token_type::control);
  // The tiny vocabulary lacks byte-level byte tokens: the tokenizer refuses it.
  CHECK_THROWS_AS(tokenizer{v}, octo::error);
  std::filesystem::remove_all(dir);
}

TEST_CASE("Llama 3's chat format, and which format a model's template or vocabulary asks for") {
  using octo::model_file::chat_format;
  // As Llama 3's template renders a conversation (its <|begin_of_text|> is the tokenizer's BOS).
  CHECK(octo::model_file::apply_llama3({{"system", "Be brief."}, {"user", "Hi"}}) ==
        "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n");
  CHECK(octo::model_file::apply_llama3({{"user", "a"}}, false) == "<|start_header_id|>user<|end_header_id|>\n\na<|eot_id|>");
  CHECK_THROWS_AS(octo::model_file::apply_llama3({{"us|er", "x"}}), octo::error);
  octo::model_file::vocabulary v;
  v.chat_template = "{% for m in messages %}{{ '<|start_header_id|>' + m['role'] }}{% endfor %}";
  CHECK(octo::model_file::chat_format_of(v) == chat_format::llama3);
  v.chat_template = "{% for m in messages %}{{'<|im_start|>' + m['role']}}{% endfor %}";
  CHECK(octo::model_file::chat_format_of(v) == chat_format::chatml);
  v.chat_template = "{{ bos_token }}[INST] {{ m }} [/INST]";  // Mistral's: neither
  CHECK(!octo::model_file::chat_format_of(v));
  v.chat_template.clear();  // no template: the markers the vocabulary has
  CHECK(!octo::model_file::chat_format_of(v));
  v.tokens = {"a", "<|im_start|>", "<|im_end|>"};
  CHECK(octo::model_file::chat_format_of(v) == chat_format::chatml);
  v.tokens = {"a", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"};
  CHECK(octo::model_file::chat_format_of(v) == chat_format::llama3);
  CHECK(octo::model_file::chat_format_of(qwen2().vocab()) == chat_format::chatml);
}

TEST_CASE("DeepSeek-R1's chat format, as its distills' templates render a conversation") {
  using octo::model_file::apply_deepseek_r1;
  using octo::model_file::chat_format;
  const std::string user = "<\xEF\xBD\x9CUser\xEF\xBD\x9C>", assistant = "<\xEF\xBD\x9C" "Assistant\xEF\xBD\x9C>",
                    end = "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>";
  // The system text first (the last system message's), the reasoning of earlier answers dropped.
  CHECK(apply_deepseek_r1({{"user", "2+2?"}, {"assistant", "<think>\nadd</think>4"}, {"system", "Be brief."},
                           {"user", "3+3?"}}) ==
        "Be brief." + user + "2+2?" + assistant + "4" + end + user + "3+3?" + assistant);
  CHECK(apply_deepseek_r1({{"user", "Hi"}}, true, true) == user + "Hi" + assistant + "<think>\n");
  CHECK(apply_deepseek_r1({{"user", "Hi"}}, false) == user + "Hi");
  CHECK_THROWS_AS(apply_deepseek_r1({{"tool", "x"}}), octo::error);
  // Parts of DeepSeek-R1-Distill-Qwen's template as its GGUF holds it (Jinja's '\n' a backslash and an n).
  octo::model_file::vocabulary v;
  v.chat_template = "{{bos_token}}{{ns.system_prompt}}{%- for message in messages %}{%- if message['role'] == "
                    "'user' %}{{'" + user + "' + message['content']}}{%- endif %}{%- endfor -%}{% if "
                    "add_generation_prompt and not ns.is_tool %}{{'" + assistant + "<think>\\n'}}{% endif %}";
  CHECK(octo::model_file::chat_format_of(v) == chat_format::deepseek_r1);
  CHECK(octo::model_file::apply_chat(v, {{"user", "Hi"}}) == user + "Hi" + assistant + "<think>\n");
  v.chat_template = "{{'" + user + "' + c}}{{'" + assistant + "'}}";  // the first revision: no <think>
  CHECK(octo::model_file::apply_chat(v, {{"user", "Hi"}}) == user + "Hi" + assistant);
  v.chat_template.clear();
  v.tokens = {"a", user, assistant, end};
  CHECK(octo::model_file::chat_format_of(v) == chat_format::deepseek_r1);
}

TEST_CASE("ChatML's default system message as each Qwen template writes it (Qwen2, Qwen2.5, Qwen3)") {
  using octo::model_file::chatml_default_system_of;
  // Parts of the templates as their GGUFs hold them (Jinja's '\n' is a backslash and an n there).
  const std::string qwen25 =
      "{%- if tools %}{{- '<|im_start|>system\\n' }}{%- if messages[0]['role'] == 'system' %}"
      "{{- messages[0]['content'] }}{%- else %}{{- 'You are Qwen, created by Alibaba Cloud. You are a helpful "
      "assistant.' }}{%- endif %}{%- else %}{%- if messages[0]['role'] == 'system' %}{{- '<|im_start|>system\\n' + "
      "messages[0]['content'] + '<|im_end|>\\n' }}{%- else %}{{- '<|im_start|>system\\nYou are Qwen, created by "
      "Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}{%- endif %}{%- endif %}";
  const std::string qwen3 =
      "{%- if messages[0].role == 'system' %}{{- '<|im_start|>system\\n' + messages[0].content + "
      "'<|im_end|>\\n' }}{%- endif %}{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' + "
      "message.content + '<|im_end|>' + '\\n' }}{%- endfor %}{%- if add_generation_prompt %}"
      "{{- '<|im_start|>assistant\\n' }}{%- endif %}";
  CHECK(chatml_default_system_of(qwen25) == "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.");
  CHECK(!chatml_default_system_of(qwen3));
  CHECK(chatml_default_system_of(qwen2().vocab().chat_template) == "You are a helpful assistant.");
  octo::model_file::vocabulary v;
  v.chat_template = qwen3;
  CHECK(octo::model_file::apply_chat(v, {{"user", "Hi"}}) == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  v.chat_template = qwen25;
  CHECK(octo::model_file::apply_chat(v, {{"user", "Hi"}}) ==
        "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  CHECK(octo::model_file::apply_chat(v, {{"system", "Be brief."}, {"user", "Hi"}}) ==
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  v.chat_template = "{% for m in messages %}<|start_header_id|>{{ m.role }}{% endfor %}";
  CHECK(octo::model_file::apply_chat(v, {{"user", "Hi"}}) == octo::model_file::apply_llama3({{"user", "Hi"}}));
  v.chat_template = "[INST] {{ m }} [/INST]";
  CHECK_THROWS_AS(octo::model_file::apply_chat(v, {{"user", "Hi"}}), octo::error);
  CHECK(octo::model_file::apply_chat(qwen2().vocab(), {{"user", "Hi"}}) == apply_chatml({{"user", "Hi"}}));
}

TEST_CASE("qwen2: ChatML as Qwen2's template renders it") {
  CHECK(apply_chatml({{"user", "Hi there"}}) ==
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
        "<|im_start|>user\nHi there<|im_end|>\n"
        "<|im_start|>assistant\n");
  CHECK(apply_chatml({{"system", "Be brief."}, {"user", "a"}, {"assistant", "b"}, {"user", "c"}}, false) ==
        "<|im_start|>system\nBe brief.<|im_end|>\n"
        "<|im_start|>user\na<|im_end|>\n"
        "<|im_start|>assistant\nb<|im_end|>\n"
        "<|im_start|>user\nc<|im_end|>\n");
  CHECK_THROWS_AS(apply_chatml({{"", "x"}}), octo::error);
  // The rendered prompt tokenizes with the control tokens as single ids.
  const auto ids = qwen2().encode(apply_chatml({{"user", "Hi"}}));
  CHECK(ids.front() == 151644);
  CHECK(std::count(ids.begin(), ids.end(), 151644) == 3);
  CHECK(std::count(ids.begin(), ids.end(), 151645) == 2);
}
