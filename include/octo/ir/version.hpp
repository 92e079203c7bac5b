// Versions of the IR's on-disk format and of the on-device ABI, and the ABI's fixed capacities.
// These numbers are canonical (docs/ir.md §1.1, §8); validate() enforces the capacities.
#pragma once

#include <cstdint>
#include <string_view>

namespace octo::ir {

inline constexpr std::string_view ir_version = "0.2.0";
inline constexpr std::string_view abi_version = "0.2";
inline constexpr int abi_version_major = 0;
inline constexpr int abi_version_minor = 2;

inline constexpr int abi_max_inputs = 8;
inline constexpr int abi_max_outputs = 4;
inline constexpr int abi_max_waits = 8;
inline constexpr int abi_max_rank = 4;

}  // namespace octo::ir
