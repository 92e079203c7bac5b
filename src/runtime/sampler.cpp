// sampler: repetition penalty (llama.cpp's rule: divide positive logits, multiply negative ones), then
// greedy, or top-k, softmax at the temperature, top-p, and one draw from the seeded generator.
#include "octo/runtime/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <unordered_set>

#include "octo/error.hpp"

namespace octo::runtime {

void sampling_params::check() const {
  if (!std::isfinite(temperature) || temperature < 0.0f)
    throw octo::error("octo: temperature must be a finite number >= 0, got " + std::to_string(temperature));
  if (!(top_p > 0.0f && top_p <= 1.0f)) throw octo::error("octo: top-p must be in (0, 1], got " + std::to_string(top_p));
  if (top_k < 0) throw octo::error("octo: top-k must be >= 0, got " + std::to_string(top_k));
  if (!std::isfinite(repeat_penalty) || repeat_penalty <= 0.0f)
    throw octo::error("octo: repeat penalty must be a finite number > 0, got " + std::to_string(repeat_penalty));
  if (repeat_last_n < 0) throw octo::error("octo: repeat-last-n must be >= 0");
}

std::int32_t argmax(std::span<const float> logits) {
  std::int32_t best = 0;
  bool found = false;
  for (std::size_t i = 0; i < logits.size(); ++i) {
    if (std::isnan(logits[i])) continue;
    if (!found || logits[i] > logits[std::size_t(best)]) {
      best = std::int32_t(i);
      found = true;
    }
  }
  return best;
}

sampler::sampler(const sampling_params& p) : p_(p), rng_(p.seed) { p_.check(); }

std::int32_t sampler::sample(std::span<const float> logits, std::span<const std::int32_t> history) {
  if (logits.empty()) throw octo::error("octo: sampler: empty logits");
  work_.assign(logits.begin(), logits.end());
  if (p_.repeat_penalty != 1.0f && p_.repeat_last_n > 0) {
    const std::size_t n = std::min<std::size_t>(history.size(), std::size_t(p_.repeat_last_n));
    std::unordered_set<std::int32_t> seen(history.end() - std::ptrdiff_t(n), history.end());
    for (std::int32_t id : seen) {
      if (id < 0 || std::size_t(id) >= work_.size()) continue;
      float& l = work_[std::size_t(id)];
      l = l > 0.0f ? l / p_.repeat_penalty : l * p_.repeat_penalty;
    }
  }
  if (p_.temperature <= 0.0f || p_.top_k == 1) return argmax(work_);

  // Candidates by descending logit (ties by id), cut to top-k.
  order_.resize(work_.size());
  std::iota(order_.begin(), order_.end(), 0);
  for (auto& id : order_)
    if (std::isnan(work_[std::size_t(id)])) work_[std::size_t(id)] = -INFINITY;
  const auto better = [&](std::int32_t a, std::int32_t b) {
    const float la = work_[std::size_t(a)], lb = work_[std::size_t(b)];
    return la != lb ? la > lb : a < b;
  };
  std::size_t k = order_.size();
  if (p_.top_k > 0 && std::size_t(p_.top_k) < k) {
    k = std::size_t(p_.top_k);
    std::partial_sort(order_.begin(), order_.begin() + std::ptrdiff_t(k), order_.end(), better);
  } else {
    std::sort(order_.begin(), order_.end(), better);
  }
  // Softmax at the temperature over the candidates, in double for a stable cumulative sum.
  const double top = work_[std::size_t(order_[0])];
  if (!std::isfinite(top)) return order_[0];
  std::vector<double> prob(k);
  double sum = 0.0;
  for (std::size_t i = 0; i < k; ++i) {
    prob[i] = std::exp((double(work_[std::size_t(order_[i])]) - top) / double(p_.temperature));
    sum += prob[i];
  }
  // top-p: the smallest prefix whose mass reaches top_p (at least one token).
  std::size_t keep = k;
  if (p_.top_p < 1.0f) {
    double acc = 0.0;
    for (std::size_t i = 0; i < k; ++i) {
      acc += prob[i] / sum;
      if (acc >= double(p_.top_p)) {
        keep = i + 1;
        break;
      }
    }
  }
  double kept = 0.0;
  for (std::size_t i = 0; i < keep; ++i) kept += prob[i];
  // One uniform draw in [0, kept): 53 random bits, independent of the standard library's distributions.
  const double u = double(rng_() >> 11) * 0x1.0p-53 * kept;
  double acc = 0.0;
  for (std::size_t i = 0; i < keep; ++i) {
    acc += prob[i];
    if (u < acc) return order_[i];
  }
  return order_[keep - 1];
}

}  // namespace octo::runtime
