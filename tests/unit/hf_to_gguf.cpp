// The Hugging Face → GGUF converter against independent oracles: tinystories-656k (a real HF
// LlamaForCausalLM, F32, tied) and tiny-qwen (Qwen2, F16): metadata, tensor names and shapes, values
// read straight from the safetensors bytes by this test's own parser, llama's q/k permutation by an
// index formula written here, and token ids from Hugging Face `tokenizers` (tests/data/ref_models/
// tokenizer_ids.json, made by tools/make_reference_models.py). Plus the converter's error messages.
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "octo/detail/element_convert.hpp"
#include "octo/error.hpp"
#include "octo/model_file/gguf.hpp"
#include "octo/model_file/hf_to_gguf.hpp"
#include "octo/model_file/safetensors.hpp"
#include "octo/model_file/tokenizer.hpp"
#include "octo/model_file/vocabulary.hpp"

namespace fs = std::filesystem;
using namespace octo;
using namespace octo::model_file;
using json = nlohmann::json;

namespace {

const fs::path tinystories = fs::path(OCTO_SHARED_DATA_DIR) / "tinystories-656k";
const fs::path tiny_qwen = fs::path(OCTO_SOURCE_DIR) / "models" / "tiny-qwen";
const fs::path ref_models = fs::path(OCTO_SOURCE_DIR) / "tests" / "data" / "ref_models";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  REQUIRE_MESSAGE(in, "missing file " << p.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A temp file name unique to this test process.
fs::path temp_path(const std::string& name) {
  return fs::temp_directory_path() / ("octo_hf_to_gguf_" + std::to_string(::getpid()) + "_" + name);
}

// The test's own safetensors parse: header length, JSON, and the tensor's values as float.
std::vector<float> source_values(const fs::path& file, const std::string& name, std::vector<std::int64_t>* shape = nullptr) {
  const std::string bytes = slurp(file);
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  const json h = json::parse(bytes.substr(8, n));
  REQUIRE_MESSAGE(h.contains(name), name);
  const auto& e = h[name];
  const auto begin = e["data_offsets"][0].get<std::size_t>(), end = e["data_offsets"][1].get<std::size_t>();
  const char* p = bytes.data() + 8 + n + begin;
  if (shape) *shape = e["shape"].get<std::vector<std::int64_t>>();
  std::vector<float> out;
  if (e["dtype"] == "F32") {
    out.resize((end - begin) / 4);
    std::memcpy(out.data(), p, end - begin);
  } else {
    REQUIRE(e["dtype"] == "F16");
    for (std::size_t i = 0; i < (end - begin) / 2; ++i) {
      std::uint16_t u;
      std::memcpy(&u, p + 2 * i, 2);
      out.push_back(detail::f16_to_f32(u));
    }
  }
  return out;
}

std::vector<std::int64_t> dims_of(const gguf_file& f, const std::string& name) {
  const auto* t = f.find_tensor(name);
  REQUIRE_MESSAGE(t, "missing tensor " << name);
  return t->dims;
}

hf_convert_options options(ir::dtype type, std::string name = {}) {
  hf_convert_options o;
  o.type = type;
  o.name = std::move(name);
  return o;
}

std::string error_of(const fs::path& folder, const fs::path& out) {
  try {
    convert_hf_to_gguf(folder, out, {});
  } catch (const octo::error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("tinystories-656k (HF llama, F32, tied): metadata, tensors, q/k permutation, SPM tokenizer") {
  REQUIRE_MESSAGE(fs::exists(tinystories / "model.safetensors"), "missing " << tinystories.string());
  const auto out = temp_path("tinystories.gguf");
  const auto summary = convert_hf_to_gguf(tinystories, out, options(ir::dtype::f32));
  CHECK(summary.architecture == "llama");
  const auto f = gguf_file::open(out);
  fs::remove(out);

  CHECK(f.version() == 3);
  CHECK(f.get_string("general.architecture") == "llama");
  CHECK(f.get_string("general.name") == "tinystories-656k");
  CHECK(f.get_u32("llama.block_count") == 2);
  CHECK(f.get_u32("llama.context_length") == 512);
  CHECK(f.get_u32("llama.embedding_length") == 128);
  CHECK(f.get_u32("llama.feed_forward_length") == 384);
  CHECK(f.get_u32("llama.attention.head_count") == 8);
  CHECK(f.get_u32("llama.attention.head_count_kv") == 4);
  CHECK(f.get_u32("llama.rope.dimension_count") == 16);
  CHECK(f.get_f32("llama.rope.freq_base") == 10000.0f);
  CHECK(f.get_f32("llama.attention.layer_norm_rms_epsilon") == 1e-6f);
  CHECK(f.get_string("tokenizer.ggml.model") == "llama");
  CHECK(f.get_u32("tokenizer.ggml.bos_token_id") == 1);  // <|start_story|>
  CHECK(f.get_u32("tokenizer.ggml.eos_token_id") == 2);  // <|end_story|>
  CHECK(f.get_u32("tokenizer.ggml.padding_token_id") == 0);
  CHECK(f.get_bool("tokenizer.ggml.add_bos_token"));
  CHECK(f.get_string_array("tokenizer.ggml.tokens").size() == 2048);

  // Tied: no output.weight; 1 + 2 * 9 + 1 tensors.
  std::set<std::string> names;
  for (const auto& t : f.tensors()) names.insert(t.name);
  std::set<std::string> expected = {"token_embd.weight", "output_norm.weight"};
  for (int l = 0; l < 2; ++l)
    for (const char* s : {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"})
      expected.insert("blk." + std::to_string(l) + "." + s + ".weight");
  CHECK(names == expected);
  CHECK(dims_of(f, "token_embd.weight") == std::vector<std::int64_t>{128, 2048});
  CHECK(dims_of(f, "blk.0.attn_q.weight") == std::vector<std::int64_t>{128, 128});
  CHECK(dims_of(f, "blk.1.attn_k.weight") == std::vector<std::int64_t>{128, 64});
  CHECK(dims_of(f, "blk.0.ffn_down.weight") == std::vector<std::int64_t>{384, 128});
  CHECK(dims_of(f, "blk.0.attn_norm.weight") == std::vector<std::int64_t>{128});
  for (const auto& t : f.tensors()) CHECK(f.tensor(t.name).type == ir::dtype::f32);

  const auto src = tinystories / "model.safetensors";
  // Unpermuted tensors: bit-identical to the source (the checkpoint stores the embedding as lm_head).
  CHECK(to_f32(f.tensor("token_embd.weight")) == source_values(src, "lm_head.weight"));
  CHECK(to_f32(f.tensor("blk.1.ffn_down.weight")) == source_values(src, "model.layers.1.mlp.down_proj.weight"));
  CHECK(to_f32(f.tensor("blk.0.attn_v.weight")) == source_values(src, "model.layers.0.self_attn.v_proj.weight"));
  CHECK(to_f32(f.tensor("output_norm.weight")) == source_values(src, "model.norm.weight"));

  // q/k: GGUF row r of head h holds, at in-head position 2i + j, HF row h*hd + j*hd/2 + i (rotate-half
  // pairs (i, i + hd/2) become adjacent pairs (2i, 2i + 1)).
  for (auto [gguf, hf, heads] : {std::tuple{"blk.0.attn_q.weight", "model.layers.0.self_attn.q_proj.weight", 8},
                                 std::tuple{"blk.1.attn_k.weight", "model.layers.1.self_attn.k_proj.weight", 4}}) {
    CAPTURE(gguf);
    const auto got = to_f32(f.tensor(gguf));
    const auto want = source_values(src, hf);
    const std::int64_t cols = 128, rows = std::int64_t(want.size()) / cols, hd = rows / heads;
    REQUIRE(hd == 16);
    bool all_equal = true, any_moved = false;
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t h = r / hd, pos = r % hd, i = pos / 2, j = pos % 2;
      const std::int64_t from = h * hd + j * (hd / 2) + i;
      if (from != r) any_moved = true;
      for (std::int64_t c = 0; c < cols; ++c)
        if (got[std::size_t(r * cols + c)] != want[std::size_t(from * cols + c)]) all_equal = false;
    }
    CHECK(any_moved);
    CHECK(all_equal);
    CHECK(got != want);  // the permutation did something
  }

  // Token ids: octo's tokenizer on the converted vocabulary vs Hugging Face tokenizers on tokenizer.json.
  const json ref = json::parse(slurp(ref_models / "tokenizer_ids.json"));
  tokenizer tok(load_gguf_vocabulary(f));
  const auto strings = ref["strings"].get<std::vector<std::string>>();
  for (std::size_t i = 0; i < strings.size(); ++i) {
    CAPTURE(strings[i]);
    CHECK(tok.encode(strings[i], false, false) == ref["tinystories"][i].get<std::vector<std::int32_t>>());
  }
}

TEST_CASE("tiny-qwen (HF qwen2, F16 weights, tied) to F16: metadata, tensors, values, BPE tokenizer") {
  const auto out = temp_path("tiny_qwen.gguf");
  convert_hf_to_gguf(tiny_qwen, out, options(ir::dtype::f16, "tq"));
  const auto f = gguf_file::open(out);
  CHECK(fs::file_size(out) > 7'000'000);
  CHECK(fs::file_size(out) < 8'000'000);
  fs::remove(out);

  CHECK(f.get_string("general.architecture") == "qwen2");
  CHECK(f.get_string("general.name") == "tq");
  CHECK(f.get_u32("general.file_type") == 1);
  CHECK(f.get_u32("qwen2.block_count") == 6);
  CHECK(f.get_u32("qwen2.embedding_length") == 256);
  CHECK(f.get_u32("qwen2.feed_forward_length") == 512);
  CHECK(f.get_u32("qwen2.attention.head_count") == 4);
  CHECK(f.get_u32("qwen2.attention.head_count_kv") == 2);
  CHECK(f.get_u32("qwen2.context_length") == 512);
  CHECK(f.get_f32("qwen2.rope.freq_base") == 10000.0f);  // from transformers 5's rope_parameters
  CHECK(f.get_string("tokenizer.ggml.model") == "gpt2");
  CHECK(f.get_string("tokenizer.ggml.pre") == "qwen2");
  CHECK(f.get_string_array("tokenizer.ggml.merges").size() == 373);
  CHECK(f.get_string_array("tokenizer.ggml.merges")[0] == "\xC4\xA0 t");  // "Ġ t" from the pair form
  CHECK(f.get_i32_array("tokenizer.ggml.token_type")[1] == token_type::control);  // <|im_start|>
  CHECK(f.get_u32("tokenizer.ggml.eos_token_id") == 0);
  CHECK_FALSE(f.get_bool("tokenizer.ggml.add_bos_token"));

  CHECK(f.tensors().size() == 1 + 6 * 12 + 1);
  CHECK_FALSE(f.find_tensor("output.weight"));
  CHECK(f.tensor("blk.3.attn_q.weight").type == ir::dtype::f16);
  CHECK(f.tensor("blk.3.attn_q.bias").type == ir::dtype::f32);
  CHECK(f.tensor("blk.3.ffn_norm.weight").type == ir::dtype::f32);
  CHECK(dims_of(f, "blk.3.attn_k.bias") == std::vector<std::int64_t>{128});
  CHECK(dims_of(f, "blk.3.ffn_gate.weight") == std::vector<std::int64_t>{256, 512});
  // No permutation for Qwen: the F16 source values come through unchanged.
  const auto src = tiny_qwen / "model.safetensors";
  CHECK(to_f32(f.tensor("blk.3.attn_q.weight")) == source_values(src, "model.layers.3.self_attn.q_proj.weight"));
  CHECK(to_f32(f.tensor("blk.5.attn_k.weight")) == source_values(src, "model.layers.5.self_attn.k_proj.weight"));
  CHECK(to_f32(f.tensor("blk.3.attn_q.bias")) == source_values(src, "model.layers.3.self_attn.q_proj.bias"));
  CHECK(to_f32(f.tensor("token_embd.weight")) == source_values(src, "model.embed_tokens.weight"));

  const json ref = json::parse(slurp(ref_models / "tokenizer_ids.json"));
  tokenizer tok(load_gguf_vocabulary(f));
  const auto strings = ref["strings"].get<std::vector<std::string>>();
  for (std::size_t i = 0; i < strings.size(); ++i) {
    CAPTURE(strings[i]);
    CHECK(tok.encode(strings[i], false, true) == ref["tiny_qwen"][i].get<std::vector<std::int32_t>>());
  }
}

TEST_CASE("qwen3 reference model to Q8_0: q/k norms, head_dim != hidden / heads, untied output") {
  const auto out = temp_path("qwen3.gguf");
  convert_hf_to_gguf(ref_models / "qwen3", out, options(ir::dtype::q8_0));
  const auto f = gguf_file::open(out);
  fs::remove(out);
  CHECK(f.get_string("general.architecture") == "qwen3");
  CHECK(f.get_u32("qwen3.attention.key_length") == 32);
  CHECK(f.get_u32("qwen3.attention.value_length") == 32);
  CHECK(f.get_f32("qwen3.rope.freq_base") == 1000000.0f);
  CHECK(dims_of(f, "blk.1.attn_q.weight") == std::vector<std::int64_t>{64, 128});
  CHECK(dims_of(f, "blk.1.attn_output.weight") == std::vector<std::int64_t>{128, 64});
  CHECK(dims_of(f, "blk.1.attn_q_norm.weight") == std::vector<std::int64_t>{32});
  CHECK(f.tensor("output.weight").type == ir::dtype::q8_0);
  CHECK(f.tensor("blk.0.attn_k_norm.weight").type == ir::dtype::f32);
  // Q8_0 keeps each value within half a step of its block's scale (absmax / 127).
  const auto got = to_f32(f.tensor("blk.0.ffn_up.weight"));
  const auto want = source_values(ref_models / "qwen3" / "model.safetensors", "model.layers.0.mlp.up_proj.weight");
  REQUIRE(got.size() == want.size());
  for (std::size_t b = 0; b < want.size(); b += 32) {
    float amax = 0;
    for (std::size_t i = b; i < b + 32; ++i) amax = std::max(amax, std::abs(want[i]));
    for (std::size_t i = b; i < b + 32; ++i) CHECK(std::abs(got[i] - want[i]) <= amax / 127 * 0.51f + 1e-6f);
  }
}

TEST_CASE("tokenizer.json loader: the pair and string merge forms, SPM scores from merge ranks") {
  const auto qv = load_tokenizer_json(tiny_qwen / "tokenizer.json");
  CHECK(qv.kind == vocabulary::model::gpt2_bpe);
  CHECK(qv.pre == "qwen2");
  CHECK(qv.size() == 632);
  CHECK(qv.merges[1] == "h e");
  const auto sv = load_tokenizer_json(tinystories / "tokenizer.json");
  CHECK(sv.kind == vocabulary::model::llama_spm);
  CHECK(sv.add_space_prefix);
  CHECK(sv.bos == 1);
  CHECK(sv.add_bos);
  // tokenizer.json's first merge "e ▁" makes "e▁": rank 0, the best score.
  const auto e_sp = std::find(sv.tokens.begin(), sv.tokens.end(), "e\xE2\x96\x81") - sv.tokens.begin();
  CHECK(sv.scores[std::size_t(e_sp)] == 0.0f);
  CHECK(sv.type_of(0) == token_type::unknown);
}

TEST_CASE("converter errors name the problem") {
  const auto dir = temp_path("bad_model");
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto out = temp_path("bad.gguf");
  for (const char* f : {"config.json", "tokenizer.json", "model.safetensors"})
    fs::copy_file(ref_models / "qwen2" / f, dir / f);
  const json good = json::parse(slurp(dir / "config.json"));
  auto write_config = [&](const json& c) { std::ofstream(dir / "config.json") << c.dump(); };

  CHECK(error_of(dir / "nowhere", out).find("is not a folder") != std::string::npos);
  json c = good;
  c["architectures"] = {"GPT2LMHeadModel"};
  write_config(c);
  CHECK(error_of(dir, out).find("unknown architecture 'GPT2LMHeadModel'") != std::string::npos);
  c = good;
  c["intermediate_size"] = 96;
  write_config(c);
  CHECK(error_of(dir, out).find("has shape [128, 64], expected [96, 64]") != std::string::npos);
  c = good;
  c["num_hidden_layers"] = 3;
  write_config(c);
  CHECK(error_of(dir, out).find("missing tensor 'model.layers.2.input_layernorm.weight'") != std::string::npos);
  c = good;
  c["num_hidden_layers"] = 1;
  write_config(c);
  CHECK(error_of(dir, out).find("unexpected tensor 'model.layers.1.") != std::string::npos);
  write_config(good);
  CHECK(error_of(dir, out) == "(no error)");

  // An unsupported dtype: rewrite one tensor's dtype in the header to I32 (same size as F32).
  std::string bytes = slurp(dir / "model.safetensors");
  const auto at = bytes.find("\"F32\"");
  REQUIRE(at != std::string::npos);
  std::string patched = bytes;
  patched.replace(at, 5, "\"I32\"");
  std::ofstream(dir / "model.safetensors", std::ios::binary) << patched;
  CHECK(error_of(dir, out).find("unsupported dtype I32") != std::string::npos);
  // A truncated file: data offsets past the end.
  std::ofstream(dir / "model.safetensors", std::ios::binary) << bytes.substr(0, bytes.size() - 100);
  CHECK(error_of(dir, out).find("lie outside the data") != std::string::npos);
  // A header length beyond the file.
  std::ofstream(dir / "model.safetensors", std::ios::binary) << std::string("\xff\xff\xff\x00\x00\x00\x00\x00{}", 10);
  CHECK(error_of(dir, out).find("exceeds the file") != std::string::npos);
  std::ofstream(dir / "model.safetensors", std::ios::binary) << bytes;
  fs::remove(dir / "tokenizer.json");
  CHECK(error_of(dir, out).find("has no tokenizer") != std::string::npos);
  fs::remove_all(dir);
  fs::remove(out);
}

TEST_CASE("sharded checkpoints (model.safetensors.index.json) with F16 and BF16 tensors") {
  // Split the qwen2 reference model into two shards written by this test, storing one matrix as BF16
  // and one as F16 (truncated / converted here), and convert both folders.
  const auto dir = temp_path("sharded");
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto src_dir = ref_models / "qwen2";
  for (const char* f : {"config.json", "tokenizer.json"}) fs::copy_file(src_dir / f, dir / f);
  const std::string bytes = slurp(src_dir / "model.safetensors");
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  const json h = json::parse(bytes.substr(8, n));
  const std::string bf16_name = "model.layers.0.mlp.up_proj.weight", f16_name = "model.layers.1.self_attn.o_proj.weight";
  json shard_header[2] = {json::object(), json::object()};
  std::string shard_data[2];
  json weight_map = json::object();
  std::vector<float> bf16_expected, f16_expected;
  int k = 0;
  for (const auto& [name, e] : h.items()) {
    if (name == "__metadata__") continue;
    const int shard = k++ % 2;
    const auto begin = e["data_offsets"][0].get<std::size_t>(), end = e["data_offsets"][1].get<std::size_t>();
    std::string data = bytes.substr(8 + n + begin, end - begin);
    std::string dtype = "F32";
    if (name == bf16_name || name == f16_name) {
      std::string half;
      for (std::size_t i = 0; i < data.size(); i += 4) {
        float v;
        std::memcpy(&v, data.data() + i, 4);
        std::uint16_t u;
        if (name == bf16_name) {
          std::uint32_t bits;
          std::memcpy(&bits, &v, 4);
          u = std::uint16_t(bits >> 16);  // truncation: exactly representable either way
          const std::uint32_t back = std::uint32_t(u) << 16;
          float w;
          std::memcpy(&w, &back, 4);
          bf16_expected.push_back(w);
        } else {
          u = detail::f32_to_f16(v);
          f16_expected.push_back(detail::f16_to_f32(u));
        }
        half.append(reinterpret_cast<const char*>(&u), 2);
      }
      data = half;
      dtype = name == bf16_name ? "BF16" : "F16";
    }
    shard_header[shard][name] = {{"dtype", dtype}, {"shape", e["shape"]},
                                 {"data_offsets", {shard_data[shard].size(), shard_data[shard].size() + data.size()}}};
    shard_data[shard] += data;
    weight_map[name] = "model-0000" + std::to_string(shard + 1) + "-of-00002.safetensors";
  }
  for (int i = 0; i < 2; ++i) {
    const std::string head = shard_header[i].dump();
    const std::uint64_t len = head.size();
    std::ofstream out(dir / ("model-0000" + std::to_string(i + 1) + "-of-00002.safetensors"), std::ios::binary);
    out.write(reinterpret_cast<const char*>(&len), 8);
    out << head << shard_data[i];
  }
  std::ofstream(dir / "model.safetensors.index.json") << json{{"metadata", json::object()}, {"weight_map", weight_map}}.dump();

  const auto out = temp_path("sharded.gguf");
  convert_hf_to_gguf(dir, out, options(ir::dtype::f32));
  {
    const auto f = gguf_file::open(out);
    CHECK(f.tensors().size() == 26);
    CHECK(to_f32(f.tensor("blk.0.ffn_up.weight")) == bf16_expected);
    CHECK(to_f32(f.tensor("blk.1.attn_output.weight")) == f16_expected);
    CHECK(to_f32(f.tensor("blk.1.ffn_up.weight")) == source_values(src_dir / "model.safetensors", "model.layers.1.mlp.up_proj.weight"));
  }
  // A shard the index names but that lacks the tensor.
  const json good_map = weight_map;
  weight_map["model.norm.weight"] = weight_map["model.norm.weight"] == "model-00001-of-00002.safetensors"
                                        ? "model-00002-of-00002.safetensors"
                                        : "model-00001-of-00002.safetensors";
  std::ofstream(dir / "model.safetensors.index.json") << json{{"weight_map", weight_map}}.dump();
  CHECK(error_of(dir, out).find("which lacks it") != std::string::npos);
  std::ofstream(dir / "model.safetensors.index.json") << json{{"weight_map", good_map}}.dump();
  CHECK(error_of(dir, out) == "(no error)");
  fs::remove(dir / "model-00002-of-00002.safetensors");
  CHECK(error_of(dir, out).find("cannot open") != std::string::npos);
  fs::remove(out);
  fs::remove_all(dir);
}
