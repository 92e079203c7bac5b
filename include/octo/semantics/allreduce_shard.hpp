// ALLREDUCE_SHARD (opcode 15): the tensor-parallel reduction, y = sum of the shards (in input order).
// Reference semantics (docs/opcodes.md) for the CPU reference VM.
#pragma once

#include <span>

#include "octo/detail/reference_checks.hpp"

namespace octo::semantics {

/// y = shards[0] + shards[1] + ... (all the same element count).
inline void allreduce_shard(std::span<const std::span<const float>> shards, std::span<float> y) {
  detail::require(!shards.empty(), "ALLREDUCE_SHARD", "needs at least one shard");
  for (const auto& s : shards)
    detail::require(s.size() == y.size(), "ALLREDUCE_SHARD", "every shard must have the output's element count");
  for (std::size_t i = 0; i < y.size(); ++i) {
    float acc = 0.0f;
    for (const auto& s : shards) acc += s[i];
    y[i] = acc;
  }
}

}  // namespace octo::semantics
