// Task (one DAG node == one ABI instruction), Wait and Counter: docs/ir.md §1.3-§1.4 and §2.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "octo/ir/enums.hpp"
#include "octo/ir/param_fields.hpp"
#include "octo/ir/small_vector.hpp"
#include "octo/ir/text.hpp"
#include "octo/ir/version.hpp"

namespace octo::ir {

/// Do not execute until counters[counter] >= threshold.
struct wait {
  std::int32_t counter = 0;
  std::int32_t threshold = 1;
  friend constexpr bool operator==(const wait&, const wait&) = default;
};

/// A uint32 on device, incremented once by each producer task, never decremented; host-zeroed per pass.
struct counter {
  std::int32_t id = 0;
  std::int32_t init = 0;
  text note;
  friend constexpr bool operator==(const counter&, const counter&) = default;
};

inline constexpr std::int32_t unassigned_sm = -1;

struct task {
  std::int32_t id = 0;
  opcode op = opcode::nop;
  // Inline up to the ABI caps (a program read from a file may hold more; validate() reports them).
  small_vector<std::int32_t, abi_max_inputs> inputs;    // buffer ids read
  small_vector<std::int32_t, abi_max_outputs> outputs;  // buffer ids written
  std::int32_t out_counter = 0;       // incremented by exactly 1 when all outputs are written
  small_vector<wait, abi_max_waits> waits;
  param_list params;
  std::int32_t sm = unassigned_sm;    // lowering output; unassigned_sm (JSON null) when not assigned
  std::int64_t est_bytes = 0;
  std::int64_t est_flops = 0;
  text label;
  friend constexpr bool operator==(const task&, const task&) = default;
};

}  // namespace octo::ir
