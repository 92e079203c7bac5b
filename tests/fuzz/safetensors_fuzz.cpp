// libFuzzer target for Hugging Face checkpoints: the input is a config.json and a model.safetensors
// (octo::fuzz::split: two length bytes, the config, the rest), converted to GGUF by
// convert_hf_to_gguf with tiny-qwen's tokenizer.json beside them, and the safetensors file read on
// its own (every tensor's values). Any input must convert or give octo::error.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>

#include "fuzz_support.hpp"
#include "octo/error.hpp"
#include "octo/model_file/hf_to_gguf.hpp"
#include "octo/model_file/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const bool tokenizer_copied = [] {
    std::filesystem::copy_file(OCTO_FUZZ_SOURCE_DIR "/models/tiny-qwen/tokenizer.json",
                               octo::fuzz::scratch() / "tokenizer.json",
                               std::filesystem::copy_options::overwrite_existing);
    return true;
  }();
  (void)tokenizer_copied;
  const auto [config, weights] = octo::fuzz::split(data, size);
  octo::fuzz::put("config.json", config);
  const auto st = octo::fuzz::put("model.safetensors", weights);
  std::uint64_t sink = 0;
  try {
    const auto f = octo::model_file::safetensors_file::open(st);
    for (const auto& t : f.tensors()) {
      if (t.elements() > (1 << 16)) continue;
      try {
        for (float v : octo::model_file::to_f32(t)) sink += v > 0.0f ? 1 : 0;
      } catch (const octo::error&) {
      }
    }
  } catch (const octo::error&) {
  }
  try {
    octo::model_file::hf_convert_options o;
    o.threads = 1;
    o.type = octo::ir::dtype::q8_0;
    sink += octo::model_file::convert_hf_to_gguf(octo::fuzz::scratch(), octo::fuzz::scratch() / "out.gguf", o).tensors;
  } catch (const octo::error&) {
  }
  if (sink == 0xdeadbeef) __builtin_trap();
  return 0;
}
