// The Hugging Face → GGUF converter against independent oracles: tinystories-656k (a real HF
// LlamaForCausalLM, F32, tied) and tiny-qwen (Qwen2, F16): metadata, tensor names and shapes, values
// read straight from the safetensors bytes by this test's own parser, llama's q/k permutation by an
// index formula written here, and token ids from Hugging Face `tokenizers` (tests/data/ref_models/
// tokenizer_ids.json, made by tools/make_reference_models.py). Plus the converter's error messages,
// llama.cpp's Q4_K_M / Q5_K_M type mixtures (expected types listed here from llama.cpp's rule),
// quantized values within each format's error bound of the source, the streamed file against the
// in-memory writer, the temporary/rename behaviour, and reference-VM logits of quantized tiny-qwen files.
#include <doctest/doctest.h>

#include "../support/hf_reference.hpp"
#include "../support/temp_dir.hpp"
#include "../support/test_data.hpp"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "octo/detail/element_convert.hpp"
#include "octo/detail/quant_blocks.hpp"
#include "octo/error.hpp"
#include "octo/model_file/gguf.hpp"
#include "octo/model_file/gguf_writer.hpp"
#include "octo/model_file/hf_to_gguf.hpp"
#include "octo/model_file/safetensors.hpp"
#include "octo/model_file/tokenizer.hpp"
#include "octo/model_file/vocabulary.hpp"
#include "octo/runtime/engine.hpp"
#include "octo/runtime/model_source.hpp"

namespace fs = std::filesystem;
using namespace octo;
using namespace octo::model_file;
using json = nlohmann::json;

namespace {

const fs::path tinystories = fs::path(OCTO_SHARED_DATA_DIR) / "tinystories-656k";
const fs::path tiny_qwen = fs::path(OCTO_SOURCE_DIR) / "models" / "tiny-qwen";
const fs::path ref_models = fs::path(OCTO_SOURCE_DIR) / "tests" / "data" / "ref_models";

using octo::test::slurp;

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

TEST_CASE("tokenizer.json loader: SmolLM's Digits pre-tokenizer; other pre-tokenizers refused by name") {
  json j = json::parse(slurp(tiny_qwen / "tokenizer.json"));
  const auto dir = temp_path("pre_tokenizers");
  fs::create_directories(dir);
  const auto load_with = [&](const json& pre) {
    j["pre_tokenizer"] = pre;
    std::ofstream(dir / "tokenizer.json") << j.dump();
    return load_tokenizer_json(dir / "tokenizer.json");
  };
  const json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  const json digits = {{"type", "Digits"}, {"individual_digits", true}};
  CHECK(load_with({{"type", "Sequence"}, {"pretokenizers", {digits, byte_level}}}).pre == "smollm");
  CHECK(load_with(byte_level).pre == "default");
  const auto refused = [&](const json& pre) {
    try {
      load_with(pre);
    } catch (const octo::error& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  CHECK(refused({{"type", "Sequence"}, {"pretokenizers", {{{"type", "Punctuation"}}, byte_level}}})
            .find("unsupported pre-tokenizer 'Punctuation'") != std::string::npos);
  CHECK(refused({{"type", "Digits"}, {"individual_digits", false}}).find("Digits without individual_digits") !=
        std::string::npos);
  fs::remove_all(dir);
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

TEST_CASE("Llama 3's RoPE scaling: rope_freqs.weight as llama.cpp writes it, read back as the config's ramp") {
  // tinystories-656k (head_dim 16, theta 10000) given Llama 3.1's "llama3" rope scaling, in transformers
  // 4's key (rope_scaling) and 5's (rope_parameters).
  const auto dir = temp_path("llama3");
  fs::remove_all(dir);
  test::tinystories_scaled(dir, nullptr);
  const json plain_config = json::parse(slurp(dir / "config.json"));
  const json scaling = test::llama3_scaling();
  const auto out = temp_path("llama3.gguf"), plain_out = temp_path("llama3_plain.gguf");
  convert_hf_to_gguf(dir, plain_out, options(ir::dtype::f32));
  for (const bool v5 : {false, true}) {
    CAPTURE(v5);
    json c = plain_config;
    if (v5) {
      c.erase("rope_theta");
      c["rope_scaling"] = nullptr;
      json p = scaling;
      p["rope_theta"] = 10000.0;
      c["rope_parameters"] = p;
    } else {
      c["rope_scaling"] = scaling;
    }
    std::ofstream(dir / "config.json") << c.dump();
    convert_hf_to_gguf(dir, out, options(ir::dtype::f32));
    const auto f = gguf_file::open(out);
    // Hugging Face's _compute_llama3_parameters in float64, written here: the divisor of frequency i is
    // its unscaled inv_freq over its scaled one (wavelengths 6.3 and below 256 / 16 keep theirs, over
    // 256 are divided by 8, between them the smooth ramp).
    const auto t = f.tensor("rope_freqs.weight");
    REQUIRE(t.type == ir::dtype::f32);
    REQUIRE(t.elements() == 8);
    const auto got = to_f32(t);
    for (int i = 0; i < 8; ++i) {
      const double inv = std::pow(10000.0, -2.0 * i / 16), wavelen = 2 * std::acos(-1.0) / inv;
      double scaled = inv;
      if (wavelen > 256.0) scaled = inv / 8;
      else if (wavelen >= 256.0 / 16) {
        const double smooth = (256.0 / wavelen - 1.0) / 15.0;
        scaled = (1 - smooth) * inv / 8 + smooth * inv;
      }
      CHECK(got[std::size_t(i)] == doctest::Approx(inv / scaled).epsilon(1e-6));
    }
    CHECK(got[0] == 1.0f);
    CHECK(got[7] == 8.0f);
    const auto config = runtime::config_from_gguf(f);
    CHECK(config.rope_ramp.on());
    CHECK(config.rope_ramp.low_scale == 0.125f);
  }
  // The scaled file's model answers differently from the plain one's (the ramp reaches the graph).
  runtime::engine_options eo;
  eo.vm = runtime::backend::reference;
  eo.ctx = 64;
  std::vector<std::int32_t> prompt;
  for (int i = 0; i < 40; ++i) prompt.push_back(std::int32_t(1 + (i * 37) % 2000));
  runtime::engine scaled(out, eo), plain(plain_out, eo);
  const auto ls = scaled.prefill(prompt), lp = plain.prefill(prompt);
  const double diff = test::rel_l2(ls, lp);
  MESSAGE("relative L2 between the scaled and plain models' logits: " << diff);
  CHECK(diff > 1e-3);
  // A table that is no ramp is refused by name, not run with other frequencies.
  {
    const auto f = gguf_file::open(out);
    const auto* info = f.find_tensor("rope_freqs.weight");
    REQUIRE(info);
    std::string bytes = slurp(out);
    const float zigzag[8] = {1, 4, 1, 4, 4, 4, 4, 4};
    std::memcpy(bytes.data() + f.data_offset() + info->offset, zigzag, sizeof zigzag);
    const auto bad_file = temp_path("llama3_bad.gguf");
    std::ofstream(bad_file, std::ios::binary) << bytes;
    std::string what = "(no error)";
    try {
      runtime::config_from_gguf(gguf_file::open(bad_file));
    } catch (const octo::error& e) {
      what = e.what();
    }
    fs::remove(bad_file);
    CHECK(what.find("tensor 'rope_freqs.weight' is not Llama 3's RoPE scaling") != std::string::npos);
  }
  // The linear scaling: GGUF metadata as llama.cpp writes it, every frequency divided by the factor.
  {
    json c = plain_config;
    c["rope_scaling"] = json{{"type", "linear"}, {"factor", 4.0}};
    std::ofstream(dir / "config.json") << c.dump();
    convert_hf_to_gguf(dir, out, options(ir::dtype::f32));
    const auto f = gguf_file::open(out);
    CHECK(f.get_string("llama.rope.scaling.type") == "linear");
    CHECK(f.get_f32("llama.rope.scaling.factor") == 4.0f);
    CHECK(!f.find_tensor("rope_freqs.weight"));
    const auto config = runtime::config_from_gguf(f);
    CHECK(config.rope_ramp.low_scale == 0.25f);
    CHECK(config.rope_ramp.multiplier(0.5f) == 0.25f);
    CHECK(config.rope_ramp.multiplier(0.001f) == 0.25f);
    runtime::engine linear(out, eo);
    CHECK(test::rel_l2(linear.prefill(prompt), lp) > 1e-3);
  }
  // A llama3 scaling without its numbers, and other scalings, are refused by name.
  json c = plain_config;
  json bad = scaling;
  bad.erase("low_freq_factor");
  c["rope_scaling"] = bad;
  std::ofstream(dir / "config.json") << c.dump();
  CHECK(error_of(dir, out).find("lacks a number \"low_freq_factor\"") != std::string::npos);
  c["rope_scaling"] = json{{"rope_type", "yarn"}, {"factor", 4.0}};
  std::ofstream(dir / "config.json") << c.dump();
  CHECK(error_of(dir, out).find("RoPE scaling 'yarn' is not supported") != std::string::npos);
  c["rope_scaling"] = json{{"type", "linear"}};
  std::ofstream(dir / "config.json") << c.dump();
  CHECK(error_of(dir, out).find("the linear RoPE scaling needs a \"factor\"") != std::string::npos);
  fs::remove_all(dir);
  fs::remove(out);
  fs::remove(plain_out);
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

namespace {

hf_convert_options scheme_options(const char* type) {
  hf_convert_options o;
  const auto w = parse_weight_scheme(type);
  o.type = w.type;
  o.mix = w.mix;
  return o;
}

// Every tensor's type name, by tensor name.
std::map<std::string, std::string> types_of(const gguf_file& f) {
  std::map<std::string, std::string> out;
  for (const auto& t : f.tensors()) out[t.name] = std::string(ggml_type_name(t.ggml_type));
  return out;
}

// The expected mixture, written from llama.cpp's llama_tensor_get_type for Q4_K_M / Q5_K_M (no imatrix,
// dense model): the output head, or the tied token embedding that serves as it, Q6_K (Q8_0 when its
// rows are not whole 256-blocks); attn_v and ffn_down Q6_K in the layers listed in `more`; every other
// matrix the base type; norms and biases F32. A type whose blocks do not tile the row falls back:
// Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0.
std::map<std::string, std::string> expected_mix(const std::string& base, std::int64_t layers, const std::set<std::int64_t>& more,
                                                std::int64_t hidden, std::int64_t q_cols, std::int64_t ffn, bool tied,
                                                bool qkv_bias, bool qk_norm) {
  auto fit = [](std::string t, std::int64_t cols) {
    if (cols % 256 == 0) return t;
    if (t == "Q4_K") return std::string("Q5_0");
    if (t == "Q5_K") return std::string("Q5_1");
    if (t == "Q6_K") return std::string("Q8_0");
    return t;
  };
  const std::string head = hidden % 256 == 0 ? "Q6_K" : "Q8_0";
  std::map<std::string, std::string> e;
  e["token_embd.weight"] = tied ? head : fit(base, hidden);
  if (!tied) e["output.weight"] = head;
  e["output_norm.weight"] = "F32";
  for (std::int64_t l = 0; l < layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    const bool m = more.contains(l);
    e[b + "attn_norm.weight"] = e[b + "ffn_norm.weight"] = "F32";
    e[b + "attn_q.weight"] = e[b + "attn_k.weight"] = fit(base, hidden);
    e[b + "attn_v.weight"] = fit(m ? "Q6_K" : base, hidden);
    e[b + "attn_output.weight"] = fit(base, q_cols);
    e[b + "ffn_gate.weight"] = e[b + "ffn_up.weight"] = fit(base, hidden);
    e[b + "ffn_down.weight"] = fit(m ? "Q6_K" : base, ffn);
    if (qkv_bias) e[b + "attn_q.bias"] = e[b + "attn_k.bias"] = e[b + "attn_v.bias"] = "F32";
    if (qk_norm) e[b + "attn_q_norm.weight"] = e[b + "attn_k_norm.weight"] = "F32";
  }
  return e;
}

std::string slurp_bytes(const fs::path& p) { return slurp(p); }

}  // namespace

TEST_CASE("Q4_K_M on tiny-qwen (rows of 256): llama.cpp's mixture, file type 15") {
  const auto out = temp_path("tq_q4_k_m.gguf");
  const auto sum = convert_hf_to_gguf(tiny_qwen, out, scheme_options("Q4_K_M"));
  const auto f = gguf_file::open(out);
  fs::remove(out);
  CHECK(sum.file_type == 15);
  CHECK(f.get_u32("general.file_type") == 15);
  // 6 layers: llama.cpp's use_more_bits picks layers 2 and 5 (i >= 7*6/8 = 5, or (i - 6/8) % 3 == 2).
  CHECK(types_of(f) == expected_mix("Q4_K", 6, {2, 5}, 256, 256, 512, true, true, false));
}

TEST_CASE("Q4_K_M and Q5_K_M where rows are not whole 256-blocks: llama.cpp's fallbacks") {
  SUBCASE("qwen2 reference model (hidden 64, FFN 128, 2 layers, tied)") {
    const auto out = temp_path("q2_q4_k_m.gguf");
    convert_hf_to_gguf(ref_models / "qwen2", out, scheme_options("q4_k_m"));
    const auto f = gguf_file::open(out);
    fs::remove(out);
    // 2 layers: layer 1 (>= 7*2/8 = 1) gets more bits, layer 0 not.
    CHECK(types_of(f) == expected_mix("Q4_K", 2, {1}, 64, 64, 128, true, true, false));
    CHECK(types_of(f)["token_embd.weight"] == "Q8_0");
    CHECK(types_of(f)["blk.0.attn_q.weight"] == "Q5_0");
  }
  SUBCASE("qwen3 reference model (untied, attn_output rows of 128): Q4_K_M and Q5_K_M") {
    const auto out = temp_path("q3_mix.gguf");
    convert_hf_to_gguf(ref_models / "qwen3", out, scheme_options("q4_k_m"));
    {
      const auto f = gguf_file::open(out);
      CHECK(types_of(f) == expected_mix("Q4_K", 2, {1}, 64, 128, 128, false, false, true));
      CHECK(types_of(f)["output.weight"] == "Q8_0");
      CHECK(types_of(f)["token_embd.weight"] == "Q5_0");
    }
    const auto sum = convert_hf_to_gguf(ref_models / "qwen3", out, scheme_options("q5_k_m"));
    CHECK(sum.file_type == 17);
    const auto f = gguf_file::open(out);
    fs::remove(out);
    CHECK(f.get_u32("general.file_type") == 17);
    CHECK(types_of(f) == expected_mix("Q5_K", 2, {1}, 64, 128, 128, false, false, true));
    CHECK(types_of(f)["blk.0.ffn_up.weight"] == "Q5_1");
  }
  SUBCASE("pure types fall back the same way") {
    const auto out = temp_path("q2_pure.gguf");
    convert_hf_to_gguf(ref_models / "qwen2", out, options(ir::dtype::q6_k));
    const auto f = gguf_file::open(out);
    fs::remove(out);
    for (const auto& [name, type] : types_of(f)) {
      CAPTURE(name);
      CHECK(type == (f.tensor(name).dims.size() == 2 ? "Q8_0" : "F32"));
    }
  }
  CHECK_THROWS_WITH_AS(parse_weight_scheme("q6_k_m"), doctest::Contains("unknown weight type 'q6_k_m'"), octo::error);
  CHECK(parse_weight_scheme("Q5_K_M").type == ir::dtype::q5_k);
  CHECK(parse_weight_scheme("q8_0").mix == weight_mix::pure);
}

TEST_CASE("quantized tensors decode to within each format's error bound of the source floats") {
  const auto out = temp_path("bounds.gguf");
  // One sub-block's values; `got` decoded by the reader path (quant_blocks' dequantize_row).
  struct check_stats {
    std::size_t values = 0, over = 0;
    double sum_err = 0, sum_step = 0;
  };
  auto compare = [](const std::vector<float>& got, const std::vector<float>& want, std::size_t block, std::size_t sub,
                    const std::function<double(double sub_range, double sub_amax, double block_max_range,
                                               double block_max_amax, double block_max_neg_min)>& bound) {
    REQUIRE(got.size() == want.size());
    check_stats st;
    for (std::size_t b0 = 0; b0 < want.size(); b0 += block) {
      double max_range = 0, max_amax = 0, max_neg_min = 0;
      for (std::size_t s0 = b0; s0 < b0 + block; s0 += sub) {
        double lo = 0, hi = 0, amax = 0;
        for (std::size_t i = s0; i < s0 + sub; ++i) {
          lo = std::min(lo, double(want[i]));
          hi = std::max(hi, double(want[i]));
          amax = std::max(amax, std::abs(double(want[i])));
        }
        max_range = std::max(max_range, hi - lo);
        max_amax = std::max(max_amax, amax);
        max_neg_min = std::max(max_neg_min, -lo);
      }
      for (std::size_t s0 = b0; s0 < b0 + block; s0 += sub) {
        double lo = 0, hi = 0, amax = 0;
        for (std::size_t i = s0; i < s0 + sub; ++i) {
          lo = std::min(lo, double(want[i]));
          hi = std::max(hi, double(want[i]));
          amax = std::max(amax, std::abs(double(want[i])));
        }
        const double lim = bound(hi - lo, amax, max_range, max_amax, max_neg_min) * 1.002 + 1e-7;
        for (std::size_t i = s0; i < s0 + sub; ++i) {
          const double err = std::abs(double(got[i]) - double(want[i]));
          ++st.values;
          st.sum_err += err;
          st.sum_step += lim;
          if (err > lim) ++st.over;
        }
      }
    }
    return st;
  };

  SUBCASE("Q4_K and Q6_K (tiny-qwen Q4_K_M)") {
    convert_hf_to_gguf(tiny_qwen, out, scheme_options("q4_k_m"));
    const auto f = gguf_file::open(out);
    const auto src = tiny_qwen / "model.safetensors";
    REQUIRE(f.tensor("blk.0.ffn_up.weight").type == ir::dtype::q4_k);
    // Q4_K: 8 sub-blocks of 32 share 6-bit scales and mins of f16 super-scales d = max step / 63 and
    // dmin = max(-min) / 63. A value is off by at most one step of its sub-block's grid (range / 15),
    // plus the 6-bit rounding of its scale over 15 steps (7.5 d) and of its min (dmin / 2).
    const auto q4 = compare(to_f32(f.tensor("blk.0.ffn_up.weight")), source_values(src, "model.layers.0.mlp.up_proj.weight"),
                            256, 32, [](double range, double, double max_range, double, double max_neg_min) {
                              return range / 15 + 7.5 * (max_range / 15) / 63 + max_neg_min / 63 / 2;
                            });
    CHECK(q4.values == 512 * 256);
    CHECK(q4.over == 0);
    CHECK(q4.sum_err / q4.values < 0.5 * q4.sum_step / q4.values);  // typical errors well inside the bound
    // Q6_K: 16 sub-blocks of 16, signed 8-bit scales of an f16 super-scale d = max(amax / 32) / 127,
    // codes -32..31: one step (amax / 32) plus the scale's rounding over 32 steps (16 d).
    REQUIRE(f.tensor("blk.2.ffn_down.weight").type == ir::dtype::q6_k);
    const auto q6 = compare(to_f32(f.tensor("blk.2.ffn_down.weight")), source_values(src, "model.layers.2.mlp.down_proj.weight"),
                            256, 16, [](double, double amax, double, double max_amax, double) {
                              return amax / 32 + 16 * (max_amax / 32) / 127;
                            });
    CHECK(q6.values == 256 * 512);
    CHECK(q6.over == 0);
    CHECK(q6.sum_err / q6.values < 0.5 * q6.sum_step / q6.values);
    // The tied embedding as Q6_K too.
    REQUIRE(f.tensor("token_embd.weight").type == ir::dtype::q6_k);
    const auto e6 = compare(to_f32(f.tensor("token_embd.weight")), source_values(src, "model.embed_tokens.weight"), 256, 16,
                            [](double, double amax, double, double max_amax, double) { return amax / 32 + 16 * (max_amax / 32) / 127; });
    CHECK(e6.over == 0);
  }
  SUBCASE("Q5_0 and Q8_0 (qwen2 reference model Q4_K_M, rows of 64)") {
    convert_hf_to_gguf(ref_models / "qwen2", out, scheme_options("q4_k_m"));
    const auto f = gguf_file::open(out);
    const auto src = ref_models / "qwen2" / "model.safetensors";
    REQUIRE(f.tensor("blk.0.attn_q.weight").type == ir::dtype::q5_0);
    // Q5_0: blocks of 32, d = amax / 16, codes 0..31 around 16: at most one step (the clamp at +15 d).
    const auto q5 = compare(to_f32(f.tensor("blk.0.attn_q.weight")), source_values(src, "model.layers.0.self_attn.q_proj.weight"),
                            32, 32, [](double, double amax, double, double, double) { return amax / 16; });
    CHECK(q5.values == 64 * 64);
    CHECK(q5.over == 0);
    CHECK(q5.sum_err / q5.values < 0.5 * q5.sum_step / q5.values);
    // Q8_0: d = amax / 127, round to nearest: half a step.
    REQUIRE(f.tensor("token_embd.weight").type == ir::dtype::q8_0);
    const auto q8 = compare(to_f32(f.tensor("token_embd.weight")), source_values(src, "model.embed_tokens.weight"), 32, 32,
                            [](double, double amax, double, double, double) { return amax / 127 / 2; });
    CHECK(q8.over == 0);
  }
  fs::remove(out);
}

TEST_CASE("the streamed file equals the in-memory writer's bytes for the same tensors and metadata") {
  const auto out = temp_path("stream_vs_memory.gguf");
  convert_hf_to_gguf(tiny_qwen, out, scheme_options("q4_k_m"));
  const std::string file = slurp_bytes(out);
  const auto f = gguf_file::open(out);
  gguf_writer w;
  for (const auto& kv : f.metadata()) w.set(kv.key, kv.value);
  for (const auto& t : f.tensors()) {
    const auto v = f.tensor(t.name);
    w.add_tensor(t.name, v.type, t.dims, v.data);
  }
  const auto bytes = w.to_bytes();
  CHECK(bytes.size() == file.size());
  CHECK(std::memcmp(bytes.data(), file.data(), std::min(bytes.size(), file.size())) == 0);
  // The layout as GGUF defines it: each tensor's data at the next multiple of 32 after the previous one.
  std::uint64_t offset = 0;
  for (const auto& t : f.tensors()) {
    CAPTURE(t.name);
    CHECK(t.offset == offset);
    offset += (t.size + 31) / 32 * 32;
  }
  CHECK(file.size() % 32 == 0);
  fs::remove(out);
}

TEST_CASE("conversion writes a temporary sibling and renames it; a failure leaves the old file and no temporary") {
  const auto out = temp_path("atomic.gguf");
  std::ofstream(out) << "old contents";
  // A failure halfway (here: the progress callback throws at the 10th tensor, after data was written).
  auto o = options(ir::dtype::q8_0);
  bool saw_tmp = false;
  o.progress = [&](const hf_convert_progress& p) {
    saw_tmp = saw_tmp || !octo::test::temporaries_of(out).empty();
    CHECK(p.count == 1 + 6 * 12 + 1);
    CHECK(p.bytes_written <= p.file_bytes);
    if (p.index == 9) throw octo::error("stop here");
  };
  CHECK_THROWS_WITH_AS(convert_hf_to_gguf(tiny_qwen, out, o), "stop here", octo::error);
  CHECK(saw_tmp);
  CHECK(octo::test::temporaries_of(out).empty());
  CHECK(slurp(out) == "old contents");
  // A bad input fails before anything is written.
  CHECK(error_of(ref_models / "nowhere", out).find("is not a folder") != std::string::npos);
  CHECK(slurp(out) == "old contents");
  // Success replaces the file; the last progress report is the whole file.
  std::uint64_t last = 0, total = 0;
  o.progress = [&](const hf_convert_progress& p) { last = p.bytes_written, total = p.file_bytes; };
  const auto sum = convert_hf_to_gguf(tiny_qwen, out, o);
  CHECK(octo::test::temporaries_of(out).empty());
  CHECK(sum.file_bytes == fs::file_size(out));
  CHECK(last == total);
  CHECK(total == fs::file_size(out));
  CHECK(gguf_file::open(out).tensors().size() == 1 + 6 * 12 + 1);
  // One thread or several: the same bytes.
  const std::string many = slurp(out);
  o.threads = 1;
  convert_hf_to_gguf(tiny_qwen, out, o);
  CHECK(slurp(out) == many);
  fs::remove(out);
}

TEST_CASE("quantized tiny-qwen on the reference VM: logits near the F32 file's, the same sums answered") {
  // The first 10 sums of reference.json: last-position logits of each prompt, and the greedy answer up
  // to the end-of-answer token 201 (after it the model starts a new random line, where near-ties decide).
  const json ref = json::parse(slurp(tiny_qwen / "reference.json"));
  struct result {
    std::vector<std::vector<float>> logits;
    std::vector<std::vector<std::int32_t>> answers;
  };
  auto run = [&](const char* type) {
    const auto out = temp_path(std::string("vm_") + type + ".gguf");
    convert_hf_to_gguf(tiny_qwen, out, scheme_options(type));
    runtime::engine_options eo;
    eo.vm = runtime::backend::reference;
    eo.ctx = 64;
    runtime::engine e(out, eo);
    fs::remove(out);
    result r;
    for (int t = 0; t < 10; ++t) {
      e.reset();
      auto logits = e.prefill(ref["tests"][t]["prompt_ids"].get<std::vector<std::int32_t>>());
      r.logits.push_back(logits);
      std::vector<std::int32_t> answer;
      while (answer.size() < 8 && (answer.empty() || answer.back() != 201)) {
        answer.push_back(runtime::argmax(logits));
        logits = e.decode(answer.back());
      }
      r.answers.push_back(answer);
    }
    return r;
  };
  const auto f32 = run("f32");
  for (int t = 0; t < 10; ++t) {  // the F32 file reproduces PyTorch's answers
    const auto want = ref["tests"][t]["greedy_ids"].get<std::vector<std::int32_t>>();
    CHECK(std::vector<std::int32_t>(want.begin(), want.begin() + std::ptrdiff_t(f32.answers[std::size_t(t)].size())) ==
          f32.answers[std::size_t(t)]);
  }
  // Tolerances on the mean relative L2: weight errors of ~0.2% (Q8_0) to ~3% (Q4_K) of each block's
  // range, through six layers; the file with more bits must not be worse.
  double previous = 0;
  for (const auto& [type_name, tol] : {std::pair{"q8_0", 0.005}, std::pair{"q5_k_m", 0.02}, std::pair{"q4_k_m", 0.04}}) {
    const std::string type = type_name;
    CAPTURE(type);
    const auto q = run(type_name);
    double err = 0;
    int same = 0;
    for (std::size_t t = 0; t < 10; ++t) {
      err += test::rel_l2(q.logits[t], f32.logits[t]) / 10;
      same += q.answers[t] == f32.answers[t];
    }
    MESSAGE(type << ": mean relative L2 of the logits against F32 " << err << ", " << same << "/10 answers equal");
    CHECK(err < tol);
    CHECK(err > previous);
    previous = err;
    CHECK(same >= 9);
  }
}

TEST_CASE("IQ4_NL / IQ4_XS through the converter: file types 25 / 30, IQ4_XS -> IQ4_NL on short rows, closer than Q4_0") {
  // Relative RMS error of a converted matrix against the source floats (the test's own safetensors read).
  const auto rms_rel = [](const std::vector<float>& got, const std::vector<float>& want) {
    REQUIRE(got.size() == want.size());
    double se = 0, sx = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      se += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
      sx += double(want[i]) * want[i];
    }
    return std::sqrt(se / sx);
  };
  struct source {
    fs::path folder;
    std::string gguf_name, hf_name;
  };
  // tinystories-656k: real trained weights (rows of 128); tiny-qwen: random weights (rows of 256).
  for (const auto& s : {source{tinystories, "blk.1.ffn_gate.weight", "model.layers.1.mlp.gate_proj.weight"},
                        source{tiny_qwen, "blk.3.ffn_up.weight", "model.layers.3.mlp.up_proj.weight"}}) {
    CAPTURE(s.folder.string());
    const auto want = source_values(s.folder / "model.safetensors", s.hf_name);
    std::map<ir::dtype, double> err;
    for (ir::dtype t : {ir::dtype::q4_0, ir::dtype::iq4_nl, ir::dtype::iq4_xs}) {
      CAPTURE(std::string(ir::name(t)));
      const auto out = temp_path("iq4.gguf");
      const auto sum = convert_hf_to_gguf(s.folder, out, options(t));
      const auto f = gguf_file::open(out);
      fs::remove(out);
      const bool rows256 = s.folder == tiny_qwen;
      // IQ4_XS's 256-element blocks do not tile rows of 128: llama.cpp's fallback is IQ4_NL.
      const ir::dtype stored = t == ir::dtype::iq4_xs && !rows256 ? ir::dtype::iq4_nl : t;
      if (t != ir::dtype::q4_0) {
        CHECK(sum.file_type == (t == ir::dtype::iq4_nl ? 25u : 30u));
        CHECK(f.get_u32("general.file_type") == sum.file_type);
        for (const auto& [name, type] : types_of(f)) {
          CAPTURE(name);
          CHECK(type == (f.tensor(name).dims.size() == 2 ? std::string(ir::name(stored)) : "F32"));
        }
      }
      REQUIRE(f.tensor(s.gguf_name).type == stored);
      err[t] = rms_rel(to_f32(f.tensor(s.gguf_name)), want);
    }
    MESSAGE(s.folder.filename().string() << " " << s.gguf_name << ": relative RMS error Q4_0 " << err[ir::dtype::q4_0]
                                         << ", IQ4_NL " << err[ir::dtype::iq4_nl] << ", IQ4_XS " << err[ir::dtype::iq4_xs]);
    CHECK(err[ir::dtype::iq4_nl] < err[ir::dtype::q4_0]);
    CHECK(err[ir::dtype::iq4_xs] < err[ir::dtype::q4_0]);
    CHECK(err[ir::dtype::iq4_nl] > 0);
  }
  CHECK(parse_weight_type("IQ4_XS") == ir::dtype::iq4_xs);
  CHECK(parse_weight_scheme("iq4_nl").type == ir::dtype::iq4_nl);
}
