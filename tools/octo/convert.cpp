// octo convert: Hugging Face checkpoint folder → GGUF, through octo::model_file::convert_hf_to_gguf.
#include <cstdio>
#include <string>

#include "commands.hpp"
#include "octo/error.hpp"
#include "octo/model_file/hf_to_gguf.hpp"

namespace octo::tool {

namespace {
constexpr const char* convert_help =
    "usage: octo convert MODEL_DIR OUT.gguf [--type TYPE] [--name NAME] [--verbose]\n"
    "\n"
    "Converts a Hugging Face checkpoint folder (config.json, model.safetensors or a sharded\n"
    "model.safetensors.index.json, tokenizer.json) of a LlamaForCausalLM, Qwen2ForCausalLM or\n"
    "Qwen3ForCausalLM model into a GGUF v3 file with llama.cpp's tensor names and metadata.\n"
    "\n"
    "  --type TYPE   weight matrices: f32, f16 (default), bf16, q8_0, q4_0, q4_1, q5_0, q5_1,\n"
    "                q2_k, q3_k, q4_k, q5_k, q6_k; norms and biases stay f32\n"
    "  --name NAME   general.name (default: the folder's name)\n"
    "  --verbose     print each tensor as it is written\n";
}

int convert_main(std::span<const std::string_view> args) {
  if (wants_help(args)) {
    std::fputs(convert_help, stdout);
    return 0;
  }
  std::vector<std::string> positional;
  model_file::hf_convert_options o;
  bool verbose = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const auto a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw error(std::string(a) + " needs a value");
      return std::string(args[++i]);
    };
    if (a == "--type") o.type = model_file::parse_weight_type(value());
    else if (a.starts_with("--type=")) o.type = model_file::parse_weight_type(a.substr(7));
    else if (a == "--name") o.name = value();
    else if (a == "--verbose" || a == "-v") verbose = true;
    else if (a.starts_with("-")) throw error("unknown option '" + std::string(a) + "' (see octo convert --help)");
    else positional.emplace_back(a);
  }
  if (positional.size() != 2) {
    std::fputs(convert_help, stderr);
    return 2;
  }
  if (verbose) o.log = [](const std::string& line) { std::printf("  %s\n", line.c_str()); };
  const auto s = model_file::convert_hf_to_gguf(positional[0], positional[1], o);
  std::printf("wrote %s: %s, %lld tensors, %llu bytes\n", positional[1].c_str(), s.architecture.c_str(),
              static_cast<long long>(s.tensors), static_cast<unsigned long long>(s.file_bytes));
  return 0;
}

}  // namespace octo::tool
