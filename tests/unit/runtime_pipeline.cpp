// The pipeline on the CPU reference VM (the oracle backend): stories260K (5 layers) split into 2 and 3
// stages, evenly and unevenly, gives tokens and logits bit-identical to one stage; the split's errors;
// and a stage whose peer fails, hangs or is out of step is an error within a bounded time, not a hang.
#include <doctest/doctest.h>

#include "../support/pipeline_check.hpp"
#include "../support/test_data.hpp"

#include <chrono>
#include <cstring>
#include <filesystem>
#include <unistd.h>
#include <string>
#include <thread>
#include <vector>

#include <octo/error.hpp>
#include <octo/runtime/decomposed.hpp>
#include <octo/runtime/engine.hpp>
#include <octo/runtime/residency_plan.hpp>

namespace fs = std::filesystem;
using namespace octo;

namespace {

const fs::path stories = test::stories260k_gguf();
const std::vector<std::int32_t> prompt = {1, 403, 407, 261, 378, 280, 430, 283, 352, 261, 395};  // 11 ids

runtime::engine_options opts() {
  runtime::engine_options o;
  o.vm = runtime::backend::reference;
  o.ctx = 64;
  o.prefill_chunk = 4;  // three windows for the 11-token prompt, the last overlapping
  return o;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const octo::error& e) {
    return e.what();
  }
  return "(no error)";
}

/// Stage `rank` of `size` whose peers answer with what `reply` makes (or never, when it throws).
struct scripted_link final : runtime::stage_link {
  int me = 1, n = 2;
  std::function<void(int, std::span<std::byte>)> reply;
  std::string failed;
  int rank() const override { return me; }
  int size() const override { return n; }
  void send(int, std::span<const std::byte>) override {}
  void receive(int from, std::span<std::byte> m) override { reply(from, m); }
  void fail(std::string_view why) override { failed = std::string(why); }
};

}  // namespace

TEST_CASE("plan_pipeline: even and given splits, and one line for each bad one") {
  CHECK(runtime::plan_pipeline(5, 2, {}) == std::vector<std::int64_t>{0, 3, 5});
  CHECK(runtime::plan_pipeline(28, 4, {}) == std::vector<std::int64_t>{0, 7, 14, 21, 28});
  CHECK(runtime::plan_pipeline(5, 3, {1, 1, 3}) == std::vector<std::int64_t>{0, 1, 2, 5});
  CHECK(error_of([] { (void)runtime::plan_pipeline(5, 2, {2, 2}); }) ==
        "octo: the split's stages hold 4 layers but the model has 5");
  CHECK(error_of([] { (void)runtime::plan_pipeline(5, 2, {5, 0}); }) ==
        "octo: the split gives stage 1 0 layers (each stage needs at least one)");
  CHECK(error_of([] { (void)runtime::plan_pipeline(5, 2, {1, 1, 3}); }) ==
        "octo: the split names 3 stages but the pipeline has 2");
  CHECK(error_of([] { (void)runtime::plan_pipeline(2, 3, {}); }) ==
        "octo: 3 pipeline stages but the model has only 2 layers (each stage needs one)");
}

TEST_CASE("stories260K on the reference VM: 2 and 3 stages give one stage's tokens and logits, bit for bit") {
  runtime::engine one(stories, opts());
  const auto want = test::run_pipeline_case(one, prompt, 12);
  CHECK(want.greedy.size() == 12);
  for (const auto& split : std::vector<std::vector<std::int64_t>>{{}, {4, 1}, {1, 1, 3}}) {
    auto o = opts();
    o.stages = split.empty() ? 2 : std::uint32_t(split.size());
    o.split = split;
    runtime::engine e(stories, o);
    const auto layers = e.stage_layers();
    REQUIRE(layers.size() == o.stages);
    CHECK(layers.front().first == 0);
    CHECK(layers.back().second == 5);
    CAPTURE(o.stages);
    CAPTURE(split.size());
    test::check_same_run(test::run_pipeline_case(e, prompt, 12), want);
  }
}

TEST_CASE("a stage streaming its layers in a pipeline: still one stage's tokens") {
  runtime::engine one(stories, opts());
  const auto want = test::run_pipeline_case(one, prompt, 8);
  auto o = opts();
  o.stages = 2;
  o.resident_layers = 1;  // each stage keeps one layer resident and streams the rest through its ring
  runtime::engine e(stories, o);
  test::check_same_run(test::run_pipeline_case(e, prompt, 8), want);
  CHECK(e.stats().layer_uploads > 0);
  // a stage of one streamed layer (a chain of a single program) and stages streaming every layer
  o.stages = 3;
  o.split = {1, 1, 3};
  o.resident_layers = 0;
  runtime::engine all(stories, o);
  test::check_same_run(test::run_pipeline_case(all, prompt, 8), want);
}

TEST_CASE("bad pipelines: one line each") {
  auto o = opts();
  o.stages = 2;
  o.split = {2, 2};
  CHECK(error_of([&] { runtime::engine e(stories, o); }) == "octo: the split's stages hold 4 layers but the model has 5");
  o.split = {5, 0};
  CHECK(error_of([&] { runtime::engine e(stories, o); }) ==
        "octo: the split gives stage 1 0 layers (each stage needs at least one)");
  o.split = {};
  o.stages = 3;
  o.devices = {"0", "0"};
  CHECK(error_of([&] { runtime::engine e(stories, o); }) == "octo: 2 devices for 3 pipeline stages (one device per stage)");
  o.stages = 6;
  o.devices = {};
  CHECK(error_of([&] { runtime::engine e(stories, o); }) ==
        "octo: 6 pipeline stages but the model has only 5 layers (each stage needs one)");
}

TEST_CASE("a stage whose peer never answers, or answers out of step, fails at once and tells the link") {
  // Stage 1 of 2 (layers 3-4 and the head): its first receive is the residual stream of stage 0.
  const auto run_stage1 = [](const std::function<void(int, std::span<std::byte>)>& reply) {
    auto link = std::make_shared<scripted_link>();
    link->reply = reply;
    auto o = opts();
    o.link = link;
    runtime::engine e(stories, o);
    CHECK(e.stage_layers() == std::vector<std::pair<std::int64_t, std::int64_t>>{{3, 5}});
    const auto t0 = std::chrono::steady_clock::now();
    const std::string err = error_of([&] { (void)e.prefill(prompt); });
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10));
    CHECK(link->failed == err);
    // The engine stays failed: no pass runs on a pipeline that is out of step.
    CHECK(error_of([&] { (void)e.decode(1); }) == "octo: a pipeline stage failed earlier; the engine cannot continue");
    return err;
  };
  // A link that times out (the peer is gone): its error, named by the stage.
  CHECK(run_stage1([](int from, std::span<std::byte>) {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          throw octo::error("octo: no message from stage " + std::to_string(from) + " in 0.05 s");
        }) == "octo: pipeline stage 1: no message from stage 0 in 0.05 s");
  // A message of the right size whose header names another pass.
  CHECK(run_stage1([](int, std::span<std::byte> m) {
          std::memset(m.data(), 0, m.size());
          const std::uint64_t seq = 5;
          std::memcpy(m.data(), &seq, sizeof seq);
        }).find("octo: pipeline stage 1: out of step with stage 0: message 5") == 0);
}

TEST_CASE("a stage that throws mid-pass stops the stages waiting on it at once: one error naming it") {
  // stories260K decomposed, three stages (layers 0 | 1 | 2-4) streaming every layer from its file; the
  // middle stage's layer file is cut short after load, so stage 1 throws in its pass while stage 2 waits
  // for its message (without the exchange closing, stage 2 would wait out its 10-minute timeout).
  const fs::path dir = fs::temp_directory_path() / ("octo_pipeline_bad_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  runtime::decompose_gguf(stories, dir);
  auto o = opts();
  o.stages = 3;
  o.split = {1, 1, 3};
  o.resident_layers = 0;
  {
    runtime::engine e(dir, o);
    fs::resize_file(dir / "layer_001.bin", 4096);
    const auto t0 = std::chrono::steady_clock::now();
    const std::string err = error_of([&] { (void)e.prefill(prompt); });
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20));
    CHECK(err.find("octo: pipeline stage 1: ") == 0);
    CHECK(err.find("layer_001.bin") != std::string::npos);
    CHECK(error_of([&] { (void)e.decode(1); }) == "octo: a pipeline stage failed earlier; the engine cannot continue");
  }
  fs::remove_all(dir);
}
