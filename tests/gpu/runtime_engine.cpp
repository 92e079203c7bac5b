// The runtime on the Vulkan VM (lavapipe in CI): stories260K's golden greedy continuation from BOS,
// chunked prefill against token-by-token decode, and the same logits as the reference VM.
#include <doctest/doctest.h>

#include "../support/test_data.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <octo/error.hpp>
#include <octo/runtime/engine.hpp>

namespace fs = std::filesystem;
using namespace octo;

namespace {

const fs::path stories = test::stories260k_gguf();

runtime::engine_options opts(runtime::backend vm, std::int64_t ctx, std::int64_t chunk = 128) {
  runtime::engine_options o;
  o.vm = vm;
  o.ctx = ctx;
  o.prefill_chunk = chunk;
  // An F32 KV cache: these tests compare paths (chunked prefill, token steps, the reference VM) at 1e-4,
  // and an F16 cache's rounding of slightly different K/V values (a prefill GEMM beside the fused decode
  // GEMV) moves logits by ~2e-4; the F16 cache's own contract is gpu_runtime_kv_types'.
  o.kv_type = ir::dtype::f32;
  o.vulkan.pipeline_cache_dir.push_back('-');  // no disk cache (push_back: g++ 12 -O3 false -Wstringop-overflow on = "-")
  return o;
}

}  // namespace

TEST_CASE("stories260K: greedy from BOS gives the 257 golden ids on Vulkan") {
  const auto golden = test::stories260k_golden_ids();
  REQUIRE(golden.size() == 257);
  runtime::engine e(stories, opts(runtime::backend::vulkan, 512));
  MESSAGE("device: " << e.device_name());
  const std::int32_t bos[1] = {1};
  runtime::sampling_params greedy;
  const auto ids = e.generate(bos, 257, greedy);  // argmax on the device
  CHECK(ids == golden);
  // One recording for the whole loop and one program submit per decoded token (the first token comes
  // from the prefill pass, which runs on its own VM).
  const auto st = e.decode_stats();
  CHECK(st.recordings == 1);
  CHECK(st.submits == 256);
  CHECK(e.last_timing().decode_tokens == 256);
  e.reset();
  auto logits = e.prefill(bos);
  std::vector<std::int32_t> cpu;  // logits read back, argmax on the host
  for (int i = 0; i < 257; ++i) {
    cpu.push_back(runtime::argmax(logits));
    if (i + 1 < 257) logits = e.decode(cpu.back());
  }
  CHECK(cpu == golden);
  CHECK(e.validation_messages() == 0);
}

TEST_CASE("Vulkan: chunked prefill equals token-by-token decode and the reference VM's logits") {
  runtime::engine chunked(stories, opts(runtime::backend::vulkan, 64, 8));
  runtime::engine steps(stories, opts(runtime::backend::vulkan, 64));
  runtime::engine ref(stories, opts(runtime::backend::reference, 64));
  const auto prompt = chunked.model().tokenizer().encode("Once upon a time, there was a little girl named Lily. She", true);
  REQUIRE(prompt.size() > 16);
  REQUIRE(prompt.size() % 8 != 0);
  const auto a = chunked.prefill(prompt);
  const auto r = ref.prefill(prompt);
  std::vector<float> c;
  for (auto id : prompt) c = steps.decode(id);
  CHECK(test::rel_l2(a, c) < 1e-4);
  CHECK(test::rel_l2(a, r) < 1e-4);
  // prefill_chunk 0: the engine sizes the pass from the device memory (the whole prompt here).
  runtime::engine automatic(stories, opts(runtime::backend::vulkan, 64, 0));
  CHECK(test::rel_l2(automatic.prefill(prompt), r) < 1e-4);
  for (std::int32_t next : {400, 17, 300}) {
    const auto da = chunked.decode(next), dc = steps.decode(next), dr = ref.decode(next);
    CHECK(test::rel_l2(da, dc) < 1e-4);
    CHECK(test::rel_l2(da, dr) < 1e-4);
  }
  CHECK(chunked.validation_messages() == 0);
  CHECK(steps.validation_messages() == 0);
}

TEST_CASE("Vulkan: a continued sequence prefills in windows from its position, the reference VM's logits") {
  // A chat's next turn: the second prompt's windows start at the first prompt's end and attend to the
  // cache it left (engine::prefill); token-by-token decode on the reference VM is the oracle.
  runtime::engine chunked(stories, opts(runtime::backend::vulkan, 64, 8));
  runtime::engine ref(stories, opts(runtime::backend::reference, 64));
  const auto& tok = chunked.model().tokenizer();
  const auto first = tok.encode("Once upon a time", true);
  const auto second = tok.encode(" there was a little girl named Lily. She liked", false);
  REQUIRE(second.size() > 8);
  REQUIRE(second.size() % 8 != 0);
  std::vector<float> r;
  for (auto id : first) r = ref.decode(id);
  CHECK(test::rel_l2(chunked.prefill(first), r) < 1e-4);
  const auto passes = chunked.stats().passes;
  for (auto id : second) r = ref.decode(id);
  CHECK(test::rel_l2(chunked.prefill(second), r) < 1e-4);
  CHECK(chunked.stats().passes - passes == 2);  // two windows of 8, not one pass per token
  CHECK(chunked.position() == std::int64_t(first.size() + second.size()));
  for (std::int32_t next : {400, 17}) CHECK(test::rel_l2(chunked.decode(next), ref.decode(next)) < 1e-4);
  CHECK(chunked.validation_messages() == 0);
}
