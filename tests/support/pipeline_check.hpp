// What every pipeline test compares: a model split into stages against the same model in one stage
// (the oracle), with the same prefill chunk, so both take the same windows: greedy tokens (argmax on the
// device), the prompt's logits, sampled tokens (logits read back every step), and a continued prefill.
#pragma once

#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <vector>

#include <octo/runtime/engine.hpp>

namespace octo::test {

struct pipeline_run {
  std::vector<std::int32_t> greedy, sampled;
  std::vector<float> prompt_logits, continued_logits;
};

/// Greedy and sampled generation of `n` tokens after `prompt`, then `more` tokens prefilled after them.
inline pipeline_run run_pipeline_case(runtime::engine& e, const std::vector<std::int32_t>& prompt, std::int64_t n) {
  pipeline_run r;
  runtime::sampling_params greedy;
  r.greedy = e.generate(prompt, n, greedy, {}, &r.prompt_logits);
  const std::vector<std::int32_t> more(r.greedy.begin(), r.greedy.begin() + std::min<std::ptrdiff_t>(3, std::ssize(r.greedy)));
  r.continued_logits = e.prefill(more);  // token by token after the sequence so far
  e.reset();
  runtime::sampling_params sampled{.temperature = 0.9f, .top_k = 20, .top_p = 0.9f, .repeat_penalty = 1.1f,
                                   .repeat_last_n = 16, .seed = 7};
  r.sampled = e.generate(prompt, n, sampled);
  e.reset();
  return r;
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

inline void check_same_run(const pipeline_run& got, const pipeline_run& want) {
  REQUIRE(!want.greedy.empty());
  CHECK(got.greedy == want.greedy);
  CHECK(got.sampled == want.sampled);
  CHECK(same_bits(got.prompt_logits, want.prompt_logits));
  CHECK(same_bits(got.continued_logits, want.continued_logits));
}

}  // namespace octo::test
