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

}  // namespace octo::test
