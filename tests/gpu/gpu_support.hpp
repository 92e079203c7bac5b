// Shared by the GPU tests: VM options for small test machines, a check that the validation layers
// (when OCTO_VALIDATION=1) reported nothing, and environment knobs set for one scope.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "octo/vm/vulkan_vm.hpp"

namespace octo_test {

inline octo::vm::vulkan_options small_options() {
  octo::vm::vulkan_options o;
  o.block_size = std::uint64_t{16} << 20;  // lavapipe's memory is the host's: stay small
  o.timeout_ms = 120000;
  return o;
}

inline std::vector<float> random_floats(std::size_t n, std::uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

inline void check_clean(const octo::vm::vulkan_vm& vm) { CHECK(vm.stats().validation_messages == 0); }

/// Sets an environment variable for one scope (an empty value unsets it) and unsets it however the
/// scope ends, so a failing check cannot leak a planner knob into later cases (the planners read them
/// when a program loads).
struct scoped_env {
  std::string name;
  scoped_env(const char* n, const std::string& v) : name(n) {
    if (v.empty()) ::unsetenv(n);
    else ::setenv(n, v.c_str(), 1);
  }
  ~scoped_env() { ::unsetenv(name.c_str()); }
  scoped_env(const scoped_env&) = delete;
  scoped_env& operator=(const scoped_env&) = delete;
};

}  // namespace octo_test
