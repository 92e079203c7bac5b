// The pipeline on the Vulkan VM (lavapipe in CI): tiny-qwen (6 layers) and stories260K (5 layers) split
// into two VM instances of one device, as a device list and as a stage count, all resident or streaming
// within a stage, give tokens and logits bit-identical to one instance; an unknown device index is one
// line naming the devices there are.
#include <doctest/doctest.h>

#include "../support/pipeline_check.hpp"
#include "../support/test_data.hpp"

#include <filesystem>
#include <string>
#include <vector>

#include <octo/error.hpp>
#include <octo/runtime/engine.hpp>

namespace fs = std::filesystem;
using namespace octo;

namespace {

const fs::path tiny_qwen = fs::path(OCTO_SOURCE_DIR) / "models" / "tiny-qwen" / "tiny-qwen.gguf";
const fs::path stories = test::stories260k_gguf();

runtime::engine_options opts() {
  runtime::engine_options o;
  o.ctx = 128;
  o.prefill_chunk = 8;  // a 21-token prompt: three micro-batches, the last overlapping
  o.vulkan.pipeline_cache_dir.push_back('-');
  return o;
}

std::vector<std::int32_t> prompt_of(runtime::engine& e) {
  auto ids = e.model().tokenizer().encode("Once upon a time there was a little girl who lived in a village near the", true);
  REQUIRE(ids.size() > 16);
  return ids;
}

}  // namespace

TEST_CASE("two VM instances on one device give one instance's tokens and logits, bit for bit") {
  for (const auto& model : {tiny_qwen, stories}) {
    CAPTURE(model.filename().string());
    runtime::engine one(model, opts());
    const auto prompt = prompt_of(one);
    const auto want = test::run_pipeline_case(one, prompt, 16);
    CHECK(want.greedy.size() == 16);

    auto o = opts();
    o.devices = {"0", "0"};  // as `--devices 0,0`
    runtime::engine two(model, o);
    CHECK(two.stage_layers().size() == 2);
    MESSAGE("devices: " << two.device_name());
    test::check_same_run(test::run_pipeline_case(two, prompt, 16), want);
    CHECK(two.validation_messages() == 0);

    o.devices = {};
    o.stages = 2;  // as `--stages 2`, uneven, the second stage streaming two of its layers
    o.split = {1, model == tiny_qwen ? 5 : 4};
    o.resident_layers = 2;
    runtime::engine streamed(model, o);
    CHECK(streamed.stage_layers().back().first == 1);
    test::check_same_run(test::run_pipeline_case(streamed, prompt, 16), want);
    CHECK(streamed.stats().layer_uploads > 0);
  }
}

TEST_CASE("an unknown device index in the device list is one line naming the devices") {
  auto o = opts();
  o.devices = {"0", "97"};
  std::string err;
  try {
    runtime::engine e(stories, o);
  } catch (const octo::error& ex) {
    err = ex.what();
  }
  CHECK(err.find("octo: no Vulkan device 97 (there ") == 0);
  CHECK(err.find("0 ") != std::string::npos);
}
