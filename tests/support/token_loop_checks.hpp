// The greedy token loop on the device (engine_options::decode_in_flight) against the host loop, on one
// backend: the same tokens at every depth, nothing emitted or left behind past a stop, the token-count
// and context limits, and sampling with a temperature unchanged. tests/gpu/token_loop.cpp runs these on
// the Vulkan VM, tests/unit/token_loop.cpp on the reference VM (which emulates the loop on the host).
#pragma once

#include <doctest/doctest.h>

#include "test_data.hpp"

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <vector>

#include <octo/error.hpp>
#include <octo/runtime/engine.hpp>
#include <octo/runtime/sampler.hpp>

namespace octo::test::token_loop {

inline std::filesystem::path tiny_qwen() { return std::filesystem::path(OCTO_SOURCE_DIR) / "models" / "tiny-qwen" / "tiny-qwen.gguf"; }

inline runtime::engine_options options(runtime::backend vm, std::int64_t ctx, std::uint32_t in_flight) {
  runtime::engine_options o;
  o.vm = vm;
  o.ctx = ctx;
  o.prefill_chunk = 16;
  o.decode_in_flight = in_flight;
  o.vulkan.pipeline_cache_dir.push_back('-');
  return o;
}

inline std::vector<std::int32_t> greedy(runtime::engine& e, std::span<const std::int32_t> prompt, std::int64_t n) {
  e.reset();
  return e.generate(prompt, n, runtime::sampling_params{});
}

/// Greedy tokens with the loop on the device at each of `depths` equal the host loop's, prompt by prompt
/// on one engine per depth (reset between prompts); on Vulkan no step is submitted past the token count.
/// Returns the host loop's tokens.
inline std::vector<std::vector<std::int32_t>> same_tokens_at_every_depth(
    runtime::backend vm, const std::filesystem::path& model, const std::vector<std::vector<std::int32_t>>& prompts,
    std::int64_t n, std::int64_t ctx, std::initializer_list<std::uint32_t> depths) {
  REQUIRE_MESSAGE(std::filesystem::exists(model), "missing " << model.string());
  runtime::engine host(model, options(vm, ctx, 0));
  std::vector<std::vector<std::int32_t>> want;
  for (const auto& p : prompts) {
    want.push_back(greedy(host, p, n));
    CHECK(host.last_timing().most_in_flight == (want.back().size() > 1 ? 1u : 0u));
  }
  for (const std::uint32_t depth : depths) {
    CAPTURE(depth);
    runtime::engine e(model, options(vm, ctx, depth));
    for (std::size_t i = 0; i < prompts.size(); ++i) {
      CAPTURE(i);
      const auto submits = e.decode_stats().submits;
      const auto got = greedy(e, prompts[i], n);
      CHECK(got == want[i]);
      const auto steps = std::int64_t(got.size()) - 1;
      CHECK(e.last_timing().decode_tokens == steps);
      CHECK(e.position() == std::int64_t(prompts[i].size()) + steps);
      CHECK(e.last_timing().most_in_flight == std::min<std::int64_t>(depth, steps));
      if (vm == runtime::backend::vulkan) CHECK(e.decode_stats().submits - submits == std::uint64_t(steps));
    }
    CHECK(e.validation_messages() == 0);
  }
  return want;
}

/// A stop inside the window of steps in flight (on_token returning false, as qwen_generate does at an
/// end token): nothing past it is emitted, the position is the host loop's, and the conversation goes on
/// with the same tokens and logits as an engine that ran the host loop.
inline void stop_inside_the_window(runtime::backend vm, const std::filesystem::path& model,
                                   std::span<const std::int32_t> prompt, std::span<const std::int32_t> second) {
  constexpr std::uint32_t depth = 4;
  runtime::engine a(model, options(vm, 256, depth));
  runtime::engine b(model, options(vm, 256, 0));
  const auto full = greedy(b, prompt, 24);
  REQUIRE(full.size() == 24);
  for (const std::int64_t stop_at : {0, 1, 5, 6, 13}) {  // index of the "end token" in the continuation
    // A sampled run (OCTO_TEST_SAMPLE=1, tests/gpu) keeps the stops at the 1st, 6th and 7th token.
    if ((stop_at == 1 || stop_at == 13) && sampled_out("the stops at the 2nd and the 14th token")) continue;
    CAPTURE(stop_at);
    a.reset();
    b.reset();
    std::vector<std::int32_t> seen_a, seen_b;
    const auto stop_on = [&](std::vector<std::int32_t>& seen) {
      return [&seen, stop_at](std::int32_t id) {
        seen.push_back(id);
        return std::int64_t(seen.size()) <= stop_at;
      };
    };
    const auto out_a = a.generate(prompt, 24, runtime::sampling_params{}, stop_on(seen_a));
    const auto out_b = b.generate(prompt, 24, runtime::sampling_params{}, stop_on(seen_b));
    const std::vector<std::int32_t> head(full.begin(), full.begin() + stop_at + 1);
    CHECK(out_a == head);
    CHECK(seen_a == head);  // on_token saw nothing past the stop
    CHECK(out_b == head);
    CHECK(a.position() == std::int64_t(prompt.size()) + stop_at);
    CHECK(a.position() == b.position());
    // The next turn: the steps dropped past the stop wrote KV rows at and past the position; the second
    // prompt overwrites them, so tokens and logits are the host loop's.
    std::vector<float> la, lb;
    const auto next_a = a.generate(second, 12, runtime::sampling_params{}, {}, &la);
    const auto next_b = b.generate(second, 12, runtime::sampling_params{}, {}, &lb);
    CHECK(next_a == next_b);
    CHECK(la == lb);
    CHECK(a.position() == b.position());
    CHECK(a.validation_messages() == 0);
  }
}

/// n tokens exactly (no step submitted past them) and the context's end, with the loop on the device.
inline void token_and_context_limits(runtime::backend vm, const std::filesystem::path& model,
                                     std::span<const std::int32_t> prompt) {
  runtime::engine host(model, options(vm, 24, 0));
  runtime::engine e(model, options(vm, 24, 4));
  for (const std::int64_t n : {0, 1, 2, 3, 4, 5, 9}) {
    CAPTURE(n);
    const auto submits = e.decode_stats().submits;
    const auto got = greedy(e, prompt, n);
    CHECK(got == greedy(host, prompt, n));
    CHECK(std::int64_t(got.size()) == n);
    CHECK(e.position() == std::int64_t(prompt.size()) + std::max<std::int64_t>(n - 1, 0));
    if (vm == runtime::backend::vulkan) CHECK(e.decode_stats().submits - submits == std::uint64_t(std::max<std::int64_t>(n - 1, 0)));
  }
  // The context (24 positions) ends first: one token from the prefill, then one per free position.
  const auto got = greedy(e, prompt, 1000);
  CHECK(got == greedy(host, prompt, 1000));
  CHECK(std::int64_t(got.size()) == 24 - std::int64_t(prompt.size()) + 1);
  CHECK(e.position() == 24);
  CHECK_THROWS_WITH_AS(e.generate(prompt, 4, runtime::sampling_params{}), doctest::Contains("context"), octo::error);
}

/// Sampling with a temperature: a seed gives the same tokens on every run and at every decode_in_flight,
/// and they are the host loop of before spelled out (prefill, decode, the seeded sampler).
inline void sampling_unchanged(runtime::backend vm, const std::filesystem::path& model,
                               std::span<const std::int32_t> prompt) {
  runtime::sampling_params s;
  s.temperature = 0.9f;
  s.top_k = 40;
  s.top_p = 0.95f;
  s.seed = 1234;
  constexpr std::int64_t n = 20;
  runtime::engine manual(model, options(vm, 128, 0));
  runtime::sampler smp(s);
  std::vector<std::int32_t> history(prompt.begin(), prompt.end()), want;
  auto logits = manual.prefill(prompt);
  for (std::int64_t i = 0; i < n; ++i) {
    want.push_back(smp.sample(logits, history));
    history.push_back(want.back());
    if (i + 1 < n) logits = manual.decode(want.back());
  }
  for (const std::uint32_t depth : {0u, 4u}) {
    CAPTURE(depth);
    runtime::engine e(model, options(vm, 128, depth));
    const auto first = e.generate(prompt, n, s);
    e.reset();
    const auto again = e.generate(prompt, n, s);
    CHECK(first == want);
    CHECK(again == want);
  }
  s.seed = 99;  // another seed, another continuation (the seed is used at all)
  runtime::engine e(model, options(vm, 128, 4));
  CHECK(e.generate(prompt, n, s) != want);
}

}  // namespace octo::test::token_loop
