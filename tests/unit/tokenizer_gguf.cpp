// The Qwen2 vocabulary read from a vocab-only GGUF (qwen2-vocab.gguf) instead of the Hugging Face
// files: same tokens and merges, and the same ids on llama.cpp's references and the HF corpus ids.
#include <doctest/doctest.h>

#include "../support/test_data.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <octo/model_file/gguf.hpp>
#include <octo/model_file/tokenizer.hpp>

using namespace octo::model_file;

namespace {

const std::filesystem::path qwen2_dir = octo::test::qwen2_tokenizer_dir();
using octo::test::parse_ids;
using octo::test::slurp;
using octo::test::split;

}  // namespace

TEST_CASE("gguf qwen2 vocabulary: same as the Hugging Face files, same ids") {
  const auto file = gguf_file::open(qwen2_dir / "qwen2-vocab.gguf");
  const tokenizer tok(load_gguf_vocabulary(file));
  const vocabulary hf = load_hf_vocabulary(qwen2_dir);
  const vocabulary& v = tok.vocab();

  CHECK(v.kind == vocabulary::model::gpt2_bpe);
  CHECK(v.pre == "qwen2");
  CHECK(v.size() == 151936);
  CHECK(v.bos == 151643);
  CHECK(v.eos == 151645);
  CHECK(v.pad == 151643);
  CHECK_FALSE(v.add_bos);
  CHECK(v.chat_template == hf.chat_template);
  CHECK(v.merges == hf.merges);
  REQUIRE(hf.size() == 151646);
  CHECK(std::equal(hf.tokens.begin(), hf.tokens.end(), v.tokens.begin()));
  CHECK(std::equal(hf.token_types.begin(), hf.token_types.end(), v.token_types.begin()));
  CHECK(v.type_of(151900) == token_type::unused);

  auto inputs = split(slurp(qwen2_dir / "reference/ggml-vocab-qwen2.gguf.inp"), "\n__ggml_vocab_test__\n");
  inputs.pop_back();
  const auto outputs = split(slurp(qwen2_dir / "reference/ggml-vocab-qwen2.gguf.out"), "\n");
  REQUIRE(outputs.size() >= inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    INFO("case " << i << ": [" << inputs[i] << "]");
    CHECK(tok.encode(inputs[i]) == parse_ids(outputs[i]));
  }

  const std::filesystem::path data = std::filesystem::path(OCTO_SOURCE_DIR) / "tests/data";
  auto records = split(slurp(data / "tokenizer_corpus.txt"), "\n----8<----\n");
  records.pop_back();
  const auto lines = split(slurp(data / "tokenizer_corpus.qwen2.ids"), "\n");
  REQUIRE(lines.size() >= records.size());

  // Several threads encode the corpus at once (the word cache is shared) and agree with HF.
  std::vector<std::vector<std::vector<int32_t>>> per_thread(4);
  std::vector<std::thread> threads;
  for (auto& result : per_thread)
    threads.emplace_back([&] {
      for (const auto& r : records) result.push_back(tok.encode(r));
    });
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < records.size(); ++i) {
    INFO("record " << i << ": [" << records[i] << "]");
    const auto expected = parse_ids(lines[i]);
    for (const auto& result : per_thread) CHECK(result[i] == expected);
  }
}
