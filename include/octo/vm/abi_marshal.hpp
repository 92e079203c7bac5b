// The host loader's first step (IR spec §8): an ir::task becomes an abi::instruction and an ir::buffer an
// abi::buffer_record, refusing with octo::error whatever the fixed-size records cannot carry.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "octo/error.hpp"
#include "octo/ir/buffer.hpp"
#include "octo/ir/enums.hpp"
#include "octo/ir/param_fields.hpp"
#include "octo/ir/task.hpp"
#include "octo/ir/version.hpp"
#include "octo/vm/abi.hpp"

namespace octo::vm::abi {

// Compile-time pins of the ABI to the IR (tests/unit/abi_sync.cpp also checks every name and code of
// both abi.hpp and shaders/abi.glsl by parsing them).
static_assert(version_major == ir::abi_version_major && version_minor == ir::abi_version_minor);
static_assert(max_inputs == ir::abi_max_inputs && max_outputs == ir::abi_max_outputs);
static_assert(max_waits == ir::abi_max_waits && max_rank == ir::abi_max_rank);
static_assert(static_cast<int>(dtype::q6_k) + 1 == ir::dtype_count);
static_assert(static_cast<int>(mem_space::reg) + 1 == ir::mem_space_count);
static_assert(static_cast<int>(opcode::attention_combine) + 1 == ir::opcode_count);
static_assert(static_cast<int>(param_slot::kv_block) + 1 == ir::param_key_count);
static_assert(ir::param_key_count <= static_cast<int>(param_slots) && param_slots <= 32,
              "param_present is a 32-bit mask");
static_assert([] {
  std::uint32_t mask = 0;
  for (int k = 0; k < ir::param_key_count; ++k)
    if (ir::param_fields[static_cast<std::size_t>(k)].type == ir::param_type::real) mask |= 1u << k;
  return mask == param_float_mask;
}());

namespace detail {
inline std::string task_name(const ir::task& t) {
  return "task " + std::to_string(t.id) + " (" + std::string(ir::name(t.op)) + ")";
}
}  // namespace detail

/// The instruction for task `t`. Known params go to their slots (ints as int32, reals as float; an
/// integer given for a real field is converted); unknown keys are skipped, as IR spec §7 says they do
/// not marshal. With `require_sm` (the loader's case) an unassigned sm (< 0) is refused.
/// Throws octo::error naming the task when a count exceeds the ABI caps, an id is negative, or a value
/// does not fit its slot.
inline instruction marshal_task(const ir::task& t, bool require_sm = true) {
  const std::string who = detail::task_name(t);
  auto check_count = [&](std::size_t n, std::uint32_t cap, const char* what) {
    if (n > cap)
      throw octo::error(who + ": " + std::to_string(n) + " " + what + ", the ABI holds at most " + std::to_string(cap));
  };
  check_count(t.inputs.size(), max_inputs, "inputs");
  check_count(t.outputs.size(), max_outputs, "outputs");
  check_count(t.waits.size(), max_waits, "waits");
  auto check_id = [&](std::int32_t id, const char* what) {
    if (id < 0) throw octo::error(who + ": " + what + " " + std::to_string(id) + " is negative");
    return id;
  };

  instruction ins{};  // every unused entry and slot is zero
  ins.op = static_cast<std::uint32_t>(t.op);
  ins.n_inputs = static_cast<std::uint32_t>(t.inputs.size());
  ins.n_outputs = static_cast<std::uint32_t>(t.outputs.size());
  ins.n_waits = static_cast<std::uint32_t>(t.waits.size());
  for (std::size_t i = 0; i < t.inputs.size(); ++i) ins.inputs[i] = check_id(t.inputs[i], "input buffer");
  for (std::size_t i = 0; i < t.outputs.size(); ++i) ins.outputs[i] = check_id(t.outputs[i], "output buffer");
  for (std::size_t i = 0; i < t.waits.size(); ++i) {
    ins.wait_counter[i] = check_id(t.waits[i].counter, "wait counter");
    if (t.waits[i].threshold < 0)
      throw octo::error(who + ": wait threshold " + std::to_string(t.waits[i].threshold) + " is negative");
    ins.wait_threshold[i] = static_cast<std::uint32_t>(t.waits[i].threshold);
  }
  ins.out_counter = check_id(t.out_counter, "out_counter");
  if (t.sm < 0 && require_sm)
    throw octo::error(who + ": sm is unassigned; the loader needs every task placed (sm >= 0)");
  ins.sm = t.sm < 0 ? -1 : t.sm;

  for (const auto& p : t.params.items) {
    if (p.key == ir::param_key::unknown) continue;
    auto k = static_cast<std::uint32_t>(p.key);
    auto slot = static_cast<param_slot>(k);
    const std::string pname = who + ": param " + std::string(p.key_name());
    if (ir::param_fields[k].type == ir::param_type::real) {
      double v = p.as_real();
      auto f = static_cast<float>(v);  // finite doubles beyond float range become inf
      if (!std::isfinite(v) || !std::isfinite(f))
        throw octo::error(pname + " = " + std::to_string(v) + " does not fit a float");
      ins.params.set_float(slot, f);
    } else {
      if (p.is_real) throw octo::error(pname + " must be an integer, got " + std::to_string(p.f));
      if (p.i < std::numeric_limits<std::int32_t>::min() || p.i > std::numeric_limits<std::int32_t>::max())
        throw octo::error(pname + " = " + std::to_string(p.i) + " does not fit int32");
      ins.params.set_int(slot, static_cast<std::int32_t>(p.i));
    }
    ins.param_present |= 1u << k;
  }
  return ins;
}

/// The record of buffer `b` placed at `address` (a device address or an arena offset: the VM decides).
/// Unused dims get shape 1 and stride 0. Throws octo::error when the rank exceeds max_rank or a dim or
/// stride does not fit 32 bits.
inline buffer_record marshal_buffer(const ir::buffer& b, std::uint64_t address) {
  const std::string who = "buffer " + std::to_string(b.id) + " (" + std::string(b.name.view()) + ")";
  if (b.shape.size() > max_rank)
    throw octo::error(who + ": rank " + std::to_string(b.shape.size()) + " exceeds the ABI's " +
                      std::to_string(max_rank));
  buffer_record r{};
  r.address = address;
  r.rank = static_cast<std::uint32_t>(b.shape.size());
  r.dtype = static_cast<std::uint32_t>(b.dtype);
  r.space = static_cast<std::uint32_t>(b.space);
  for (auto& s : r.shape) s = 1;
  constexpr std::int64_t u32_max = std::numeric_limits<std::uint32_t>::max();
  // Row-major element strides from the innermost dim outwards, equal to ir::buffer::contiguous_strides().
  std::int64_t stride = 1;
  for (std::size_t i = b.shape.size(); i-- > 0;) {
    std::int64_t d = b.shape[i];
    if (d < 0 || d > u32_max)
      throw octo::error(who + ": dim " + std::to_string(i) + " = " + std::to_string(d) + " does not fit 32 bits");
    if (stride > u32_max) throw octo::error(who + ": stride of dim " + std::to_string(i) + " does not fit 32 bits");
    r.shape[i] = static_cast<std::uint32_t>(d);
    r.stride[i] = static_cast<std::uint32_t>(stride);
    if (d != 0 && stride > (std::int64_t{1} << 62) / d) throw octo::error(who + ": more than 2^62 elements");
    stride *= d;
  }
  std::uint64_t numel = static_cast<std::uint64_t>(stride);  // the product of all dims (1 for rank 0)
  r.numel = numel;
  return r;
}

}  // namespace octo::vm::abi
