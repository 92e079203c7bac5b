// Issue 7 item 4: the project's tiny Qwen2 model answers the 50 held-out sums of reference.json with
// exactly the greedy ids PyTorch produced at training time, through the Vulkan VM and the reference VM.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <octo/runtime/engine.hpp>

#include "../support/test_data.hpp"

namespace fs = std::filesystem;
using namespace octo;

namespace {

const fs::path folder = fs::path(OCTO_SOURCE_DIR) / "models" / "tiny-qwen";

struct reference_case {
  std::string prompt;
  std::vector<std::int32_t> prompt_ids, greedy_ids;
};

std::vector<reference_case> load_cases() {
  std::ifstream in(folder / "reference.json");
  REQUIRE_MESSAGE(in, "missing models/tiny-qwen/reference.json");
  const auto j = nlohmann::json::parse(in);
  std::vector<reference_case> r;
  for (const auto& t : j.at("tests"))
    r.push_back({t.at("prompt").get<std::string>(), t.at("prompt_ids").get<std::vector<std::int32_t>>(),
                 t.at("greedy_ids").get<std::vector<std::int32_t>>()});
  return r;
}

void check_all(runtime::backend vm, std::int64_t chunk) {
  const auto cases = load_cases();
  REQUIRE(cases.size() == 50);
  const fs::path model = folder / "tiny-qwen.gguf";
  REQUIRE_MESSAGE(fs::exists(model), "missing models/tiny-qwen/tiny-qwen.gguf");
  runtime::engine_options o;
  o.vm = vm;
  o.ctx = 64;
  o.prefill_chunk = chunk;
  o.vulkan.pipeline_cache_dir.push_back('-');
  runtime::engine e(model, o);
  CHECK(e.model().config().architecture == models::arch::qwen2);
  CHECK(e.model().config().tied_embeddings);
  CHECK(e.model().config().qkv_bias);
  MESSAGE("device: " << e.device_name());
  int exact = 0;
  const auto checked = test::inputs_to_check(cases.size());  // all 50 in the plain run
  for (std::size_t i : checked) {
    const reference_case& c = cases[i];
    CAPTURE(c.prompt);
    CHECK(e.model().tokenizer().encode(c.prompt) == c.prompt_ids);
    e.reset();
    runtime::sampling_params greedy;
    const auto ids = e.generate(c.prompt_ids, std::int64_t(c.greedy_ids.size()), greedy);
    CHECK(ids == c.greedy_ids);
    exact += ids == c.greedy_ids;
  }
  CHECK(e.validation_messages() == 0);
  MESSAGE(exact << " of " << checked.size() << " continuations identical to PyTorch's (of the " << cases.size()
                  << " sums, " << checked.size() << " checked in this run)");
}

}  // namespace

TEST_CASE("tiny-qwen: the 50 reference sums, greedy, on Vulkan (prefill in overlapping windows of 4)") {
  check_all(runtime::backend::vulkan, 4);
}

TEST_CASE("tiny-qwen: the 50 reference sums, greedy, on the reference VM (one prefill pass per prompt)") {
  check_all(runtime::backend::reference, 128);
}

TEST_CASE("tiny-qwen: the 50 reference sums, greedy, on Vulkan with the norms and SwiGLU fused in every prefill (OCTO_PREFILL_FUSION=1)") {
  // models::prefill_schedule() at any prompt length (the runtime takes it from models::kFoldNormsRows
  // tokens, these prompts are shorter: RMSNORM_GEMV and RMSNORM_SWIGLU over their rows, docs/ir.md 5.1),
  // through the engine: the same greedy ids as PyTorch's (the default's are checked above).
  ::setenv("OCTO_PREFILL_FUSION", "1", 1);
  check_all(runtime::backend::vulkan, 128);
  ::unsetenv("OCTO_PREFILL_FUSION");
}
