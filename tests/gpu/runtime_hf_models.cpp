// The random-weight Qwen2 / Qwen3 models of tests/data/ref_models (made with transformers, float64
// forward passes) converted to F32 and F16 GGUF and run through the Vulkan VM: last-position logits
// within relative L2 1e-4 (F32) / 2e-3 (F16) of transformers', greedy continuations identical.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>
#include <octo/model_file/hf_to_gguf.hpp>
#include <octo/runtime/engine.hpp>

#include <unistd.h>

namespace fs = std::filesystem;
using namespace octo;
using json = nlohmann::json;

namespace {

const fs::path ref_models = fs::path(OCTO_SOURCE_DIR) / "tests" / "data" / "ref_models";

double rel_l2(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num / den);
}

void check_model(const std::string& kind, ir::dtype type, const std::string& key, double tolerance) {
  std::ifstream in(ref_models / kind / "reference.json");
  REQUIRE_MESSAGE(in, "missing " << (ref_models / kind / "reference.json").string());
  std::ostringstream s;
  s << in.rdbuf();
  const json ref = json::parse(s.str());

  const fs::path out = fs::temp_directory_path() /
                       ("octo_gpu_hf_ref_" + std::to_string(::getpid()) + "_" + kind + "_" + key + ".gguf");
  model_file::hf_convert_options o;
  o.type = type;
  model_file::convert_hf_to_gguf(ref_models / kind, out, o);
  runtime::engine_options eo;
  eo.vm = runtime::backend::vulkan;
  eo.ctx = 64;
  eo.prefill_chunk = 4;  // the 11-token prompt goes in overlapping windows
  eo.vulkan.pipeline_cache_dir.push_back('-');
  runtime::engine e(out, eo);
  fs::remove(out);
  CHECK(e.model().architecture() == kind);

  const auto prompts = ref["prompts"].get<std::vector<std::vector<std::int32_t>>>();
  REQUIRE(prompts.size() == 3);
  for (std::size_t p = 0; p < prompts.size(); ++p) {
    CAPTURE(kind);
    CAPTURE(key);
    CAPTURE(p);
    e.reset();
    std::vector<float> logits;
    const auto greedy = ref[key]["greedy"][p].get<std::vector<std::int32_t>>();
    runtime::sampling_params g;
    const auto got = e.generate(prompts[p], std::int64_t(greedy.size()), g, {}, &logits);  // device argmax
    const auto want = ref[key]["logits"][p].get<std::vector<float>>();
    const double err = rel_l2(logits, want);
    MESSAGE(kind << " " << key << " prompt " << p << ": relative L2 " << err);
    CHECK(err < tolerance);
    CHECK(got == greedy);
  }
  CHECK(e.validation_messages() == 0);
}

}  // namespace

TEST_CASE("Vulkan: qwen2 reference model, F32 and F16 GGUF, match transformers") {
  check_model("qwen2", ir::dtype::f32, "f32", 1e-4);
  check_model("qwen2", ir::dtype::f16, "f16", 2e-3);
}
TEST_CASE("Vulkan: qwen3 reference model, F32 and F16 GGUF, match transformers") {
  check_model("qwen3", ir::dtype::f32, "f32", 1e-4);
  check_model("qwen3", ir::dtype::f16, "f16", 2e-3);
}
