// sampler: picks the next token from a logits row on the CPU: repetition penalty, then greedy or
// temperature / top-k / top-p sampling from a seeded generator (same seed, same logits, same choice).
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace octo::runtime {

struct sampling_params {
  float temperature = 0.0f;     // <= 0: greedy (argmax)
  std::int32_t top_k = 0;       // <= 0: all tokens
  float top_p = 1.0f;           // nucleus mass in (0, 1]; 1: off
  float repeat_penalty = 1.0f;  // > 1 discourages tokens seen in the last `repeat_last_n` ids; 1: off
  std::int32_t repeat_last_n = 64;
  std::uint64_t seed = 0;

  /// True when the choice is a plain argmax of the logits (the GPU can make it without a readback).
  bool is_greedy() const { return (temperature <= 0.0f || top_k == 1) && repeat_penalty == 1.0f; }
  /// Throws octo::error with one line when a value is out of range.
  void check() const;
};

class sampler {
 public:
  explicit sampler(const sampling_params& p);
  const sampling_params& params() const { return p_; }

  /// The next token given the logits of the last position and the ids in context so far (for the
  /// repetition penalty). Ties in greedy go to the lowest id, as SAMPLE_ARGMAX does.
  std::int32_t sample(std::span<const float> logits, std::span<const std::int32_t> history);

 private:
  sampling_params p_;
  std::mt19937_64 rng_;
  std::vector<float> work_;
  std::vector<std::int32_t> order_;
};

/// Index of the largest value, lowest index on ties; NaN never wins (all NaN: 0).
std::int32_t argmax(std::span<const float> logits);

}  // namespace octo::runtime
