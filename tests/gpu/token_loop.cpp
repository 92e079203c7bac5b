// The greedy token loop on the device (issue 15 item 3) on the Vulkan VM: at every depth the host loop's
// tokens and the reference VM's; stops inside the window of steps in flight, the token and context
// limits, sampling with a temperature unchanged; streamed models keep the host loop with the same
// tokens; the VM's token-loop calls refuse misuse with one line.
#include <doctest/doctest.h>

#include "../support/token_loop_checks.hpp"

#include <fstream>

#include <nlohmann/json.hpp>
#include <octo/runtime/model_source.hpp>
#include <octo/vm/vulkan_vm.hpp>

using namespace octo;
namespace tl = octo::test::token_loop;

namespace {

const std::filesystem::path stories = test::stories260k_gguf();
constexpr auto vulkan = runtime::backend::vulkan;

/// The first `count` prompts of models/tiny-qwen/reference.json.
std::vector<std::vector<std::int32_t>> tiny_qwen_prompts(std::size_t count) {
  std::ifstream in(tl::tiny_qwen().parent_path() / "reference.json");
  REQUIRE_MESSAGE(in, "missing models/tiny-qwen/reference.json");
  const auto j = nlohmann::json::parse(in);
  std::vector<std::vector<std::int32_t>> r;
  for (const auto& t : j.at("tests")) {
    if (r.size() == count) break;
    r.push_back(t.at("prompt_ids").get<std::vector<std::int32_t>>());
  }
  return r;
}

std::vector<std::vector<std::int32_t>> stories_prompts() {
  const auto m = runtime::model_source::open(stories);
  return {{1}, m->tokenizer().encode("Once upon a time, there was a little girl named Lily.", true),
          m->tokenizer().encode("The dog ran", true)};
}

}  // namespace

TEST_CASE("token loop, Vulkan: tiny-qwen's greedy tokens at every depth are the host loop's and the reference VM's") {
  // A sampled run (the validation twin, the sanitizer build): two prompts walk the same paths as six.
  const auto prompts = tiny_qwen_prompts(test::sampled_out("tiny-qwen's prompts 3 to 6 at every depth") ? 2 : 6);
  const auto host = tl::same_tokens_at_every_depth(vulkan, tl::tiny_qwen(), prompts, 12, 64, {1, 4});
  runtime::engine cpu(tl::tiny_qwen(), tl::options(runtime::backend::reference, 64, 4));
  for (std::size_t i = 0; i < prompts.size(); ++i) CHECK(tl::greedy(cpu, prompts[i], 12) == host[i]);
}

TEST_CASE("token loop, Vulkan: stories260K's greedy tokens at every depth are the host loop's and the reference VM's") {
  auto prompts = stories_prompts();
  // A sampled run takes the long prompt at every depth, and the first 64 golden ids (the ring of two
  // steps in flight cycles as often in those as in 257).
  if (test::sampled_out("stories260K's BOS and short prompts at every depth")) prompts = {prompts[1]};
  const auto host = tl::same_tokens_at_every_depth(vulkan, stories, prompts, 40, 256, {1, 3, 8});
  runtime::engine cpu(stories, tl::options(runtime::backend::reference, 256, 3));
  for (std::size_t i = 0; i < prompts.size(); ++i) CHECK(tl::greedy(cpu, prompts[i], 40) == host[i]);
  // The golden continuation from BOS with two steps in flight.
  runtime::engine e(stories, tl::options(vulkan, 512, 2));
  const std::int32_t bos[1] = {1};
  auto golden = test::stories260k_golden_ids();
  if (test::sampled_out("stories260K's golden ids past the first 64 (two steps in flight)")) golden.resize(64);
  CHECK(tl::greedy(e, bos, std::int64_t(golden.size())) == golden);
  CHECK(e.last_timing().most_in_flight == 2);
}

TEST_CASE("token loop, Vulkan: a streamed model keeps the host loop, with the resident loop's tokens") {
  runtime::engine resident(stories, tl::options(vulkan, 256, 4));
  for (const std::int64_t kept : {0, 2}) {
    // No layer kept or two: the same uploads and host loop; a sampled run keeps two.
    if (kept == 0 && test::sampled_out("the streamed model with no layer kept resident")) continue;
    CAPTURE(kept);
    auto o = tl::options(vulkan, 256, 4);
    o.resident_layers = kept;
    runtime::engine streamed(stories, o);
    REQUIRE_FALSE(streamed.plan().all_resident());
    for (const auto& p : stories_prompts()) {
      CHECK(tl::greedy(streamed, p, 30) == tl::greedy(resident, p, 30));
      CHECK(streamed.last_timing().most_in_flight == 1);
      CHECK(resident.last_timing().most_in_flight == 4);
    }
    CHECK(streamed.validation_messages() == 0);
  }
}

TEST_CASE("token loop, Vulkan: a stop inside the window emits nothing past it and the next turn continues") {
  const auto m = runtime::model_source::open(stories);
  tl::stop_inside_the_window(vulkan, stories, m->tokenizer().encode("Lily wanted to play", true),
                             m->tokenizer().encode(" Then the sun", false));
}

TEST_CASE("token loop, Vulkan: the token count and the context's end") {
  tl::token_and_context_limits(vulkan, stories, runtime::model_source::open(stories)->tokenizer().encode("A cat", true));
}

TEST_CASE("token loop, Vulkan: sampling with a temperature reproduces its seed and the host loop of before") {
  tl::sampling_unchanged(vulkan, stories, runtime::model_source::open(stories)->tokenizer().encode("Tom had a", true));
}

TEST_CASE("token loop, Vulkan VM: steps chained on the device equal host-fed executes; misuse is one error line") {
  const auto m = runtime::model_source::open(stories, 64);
  const auto step = m->decode_program(true);
  vm::vulkan_options vo;
  vo.pipeline_cache_dir.push_back('-');
  vm::vulkan_vm vm(vo);
  const auto prog = vm.add_program(step);
  m->for_each_weight(step, [&](std::string_view name, std::span<const std::byte> bytes) { vm.write_bytes(prog, name, bytes); });
  const auto put = [&](std::string_view name, std::int32_t v) {
    vm.write_bytes(prog, name, std::as_bytes(std::span<const std::int32_t>(&v, 1)));
  };
  const auto next_token = [&] {
    std::int32_t t = 0;
    vm.read_into(prog, "next_token", std::as_writable_bytes(std::span<std::int32_t>(&t, 1)));
    return t;
  };
  // The host loop: write the token and position, execute, read the argmax.
  std::vector<std::int32_t> host;
  std::int32_t tok = 1;
  for (std::int32_t p = 0; p < 11; ++p) {
    put("tokens", tok);
    put("pos", p);
    vm.set_position(std::uint32_t(p));
    vm.execute(prog);
    host.push_back(tok = next_token());
  }
  CHECK_THROWS_WITH_AS(vm.submit_token_step(prog), doctest::Contains("no token loop"), octo::error);
  CHECK_THROWS_WITH_AS(vm.enable_token_loop(prog, 0), doctest::Contains("at least one slot"), octo::error);
  vm.enable_token_loop(prog, 3);
  // The same ten steps on the device, three in flight, read behind; the ring of three is never overrun.
  put("tokens", 1);
  put("pos", 0);
  vm.set_position(0);
  std::vector<std::uint64_t> values;
  for (int i = 0; i < 3; ++i) values.push_back(vm.submit_token_step(prog));
  CHECK_THROWS_WITH_AS(vm.submit_token_step(prog), doctest::Contains("steps unread"), octo::error);
  CHECK_THROWS_WITH_AS(vm.enable_token_loop(prog, 5), doctest::Contains("unread token-loop steps"), octo::error);
  CHECK_THROWS_WITH_AS(vm.token_step_result(prog, values[1]), doctest::Contains("not the oldest unread"), octo::error);
  std::vector<std::int32_t> device;
  for (std::size_t i = 0; device.size() < 10; ++i) {
    device.push_back(vm.token_step_result(prog, values[i]));
    if (values.size() < 10) values.push_back(vm.submit_token_step(prog));
  }
  CHECK(device == std::vector<std::int32_t>(host.begin(), host.begin() + 10));
  CHECK_THROWS_WITH_AS(vm.token_step_result(prog, values.back()), doctest::Contains("not the oldest unread"), octo::error);
  // The device wrote the last token and advanced pos and the globals position: one more step, executed
  // with nothing written by the host, continues the sequence.
  vm.execute(prog);
  CHECK(next_token() == host.back());
  // A program that is not a decode step has no loop.
  const auto prefill = vm.add_program(m->prefill_program(4));
  CHECK_THROWS_WITH_AS(vm.enable_token_loop(prefill, 4), doctest::Contains("one-element I32 buffer"), octo::error);
  CHECK(vm.stats().validation_messages == 0);
}
