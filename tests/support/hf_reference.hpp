// The random-weight Hugging Face models of tests/data/ref_models (tools/make_reference_models.py) and
// what transformers computed for them (reference.json: prompts, and per weight type the last-position
// logits and greedy continuations): one reader and one converter for the tests that check octo's VMs
// against them.
#pragma once

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>
#include <octo/ir/enums.hpp>
#include <octo/model_file/hf_to_gguf.hpp>

#include <unistd.h>

namespace octo::test {

inline std::filesystem::path hf_reference_dir(const std::string& kind) {
  return std::filesystem::path(OCTO_SOURCE_DIR) / "tests" / "data" / "ref_models" / kind;
}

/// The model's reference.json.
inline nlohmann::json hf_reference(const std::string& kind) {
  const auto path = hf_reference_dir(kind) / "reference.json";
  std::ifstream in(path);
  REQUIRE_MESSAGE(in, "missing " << path.string());
  std::ostringstream s;
  s << in.rdbuf();
  return nlohmann::json::parse(s.str());
}

/// The model converted to a GGUF of `type` in the temporary directory (named by `tag`, the process and
/// the type, so parallel tests do not collide); the caller removes it.
inline std::filesystem::path hf_reference_gguf(const std::string& kind, ir::dtype type, const std::string& tag) {
  const auto out = std::filesystem::temp_directory_path() /
                   ("octo_" + tag + "_" + std::to_string(::getpid()) + "_" + kind + "_" + std::string(ir::name(type)) + ".gguf");
  model_file::hf_convert_options o;
  o.type = type;
  model_file::convert_hf_to_gguf(hf_reference_dir(kind), out, o);
  return out;
}

/// Llama 3.1's "llama3" RoPE scaling (transformers 4's rope_scaling form) as the tests use it on
/// tinystories-656k (head_dim 16, theta 10000): wavelengths under 256 / 16 keep their frequency, over
/// 256 are divided by 8, three of the eight lie on the ramp between.
inline nlohmann::json llama3_scaling() {
  return {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0}, {"high_freq_factor", 16.0},
          {"original_max_position_embeddings", 256}};
}

/// A copy of ../shared/data/tinystories-656k (a real HF LlamaForCausalLM) in `dir` with config.json's
/// "rope_scaling" set to `scaling` (llama3_scaling() by default); returns `dir`.
inline std::filesystem::path tinystories_scaled(const std::filesystem::path& dir,
                                                const nlohmann::json& scaling = llama3_scaling()) {
  const std::filesystem::path src = std::filesystem::path(OCTO_SHARED_DATA_DIR) / "tinystories-656k";
  std::filesystem::create_directories(dir);
  for (const char* f : {"config.json", "tokenizer.json", "model.safetensors", "special_tokens_map.json"})
    std::filesystem::copy_file(src / f, dir / f, std::filesystem::copy_options::overwrite_existing);
  std::ifstream in(src / "config.json");
  nlohmann::json c = nlohmann::json::parse(in);
  c["rope_scaling"] = scaling;
  std::ofstream(dir / "config.json") << c.dump();
  return dir;
}

}  // namespace octo::test
