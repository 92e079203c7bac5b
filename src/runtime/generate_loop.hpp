// The generation loop both engines share (engine and streaming_engine): prefill the prompt, sample the
// first token from its logits, then decode until n tokens, the callback says stop or the context fills.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "octo/error.hpp"
#include "octo/runtime/engine.hpp"
#include "octo/runtime/sampler.hpp"

namespace octo::runtime::detail {

/// `e` has prefill, decode, decode_greedy, position and context as engine does; greedy sampling asks the
/// device for the argmax instead of reading the logits back. `last` receives the wall times.
template <class Engine>
std::vector<std::int32_t> generate_loop(Engine& e, engine::timing& last, std::span<const std::int32_t> prompt,
                                        std::int64_t n, const sampling_params& s,
                                        const std::function<bool(std::int32_t)>& on_token,
                                        std::vector<float>* prompt_logits) {
  using clock = std::chrono::steady_clock;
  const auto ms_since = [](clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  };
  sampler smp(s);
  last = {};
  std::vector<std::int32_t> history(prompt.begin(), prompt.end()), out;
  const auto t0 = clock::now();
  std::vector<float> logits = e.prefill(prompt);
  last.prompt_tokens = static_cast<std::int64_t>(prompt.size());
  last.prefill_ms = ms_since(t0);
  if (prompt_logits) *prompt_logits = logits;
  if (n == 0) return out;
  const bool greedy = s.is_greedy();
  std::int32_t next = smp.sample(logits, history);
  const auto t1 = clock::now();
  for (;;) {
    out.push_back(next);
    history.push_back(next);
    if (on_token && !on_token(next)) break;
    if (static_cast<std::int64_t>(out.size()) >= n || e.position() >= e.context()) break;
    if (greedy) {
      next = e.decode_greedy(next);
    } else {
      logits = e.decode(next);
      next = smp.sample(logits, history);
    }
    ++last.decode_tokens;
  }
  last.decode_ms = ms_since(t1);
  return out;
}

}  // namespace octo::runtime::detail
