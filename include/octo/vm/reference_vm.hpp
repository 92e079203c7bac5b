// The CPU reference VM: executes a validated ir::program with plain float numerics by counter-driven
// firing (docs/ir.md §2). It is the conformance oracle every GPU kernel is compared against.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "octo/ir/param_fields.hpp"
#include "octo/ir/program.hpp"

namespace octo::vm {

/// How run() orders tasks that are ready at the same time.
struct run_options {
  /// false: waves in task-id order (deterministic). true: one uniformly random ready task at a time,
  /// from `seed`, so tests can check a result does not depend on the interleaving.
  bool shuffle = false;
  std::uint64_t seed = 0;
};

/// Owns one byte array per buffer (nbytes(dtype, numel)) and runs the program over them.
/// Buffers persist across run() calls: the KV cache is just a buffer. Weights are converted to float
/// once and cached until written again; so a float copy of every weight is held (fine for a reference).
///
/// @code
///   octo::vm::reference_vm vm(make_program());  // throws octo::error if validate() rejects it
///   vm.write("x", x_values);
///   vm.run();
///   std::vector<float> y = vm.read_f32("y");
/// @endcode
class reference_vm {
 public:
  /// Validates `program` (octo::ir::validate) and throws octo::error with the first error if rejected.
  /// The buffers' bytes together must fit `memory_budget` (0: three quarters of the machine's physical
  /// memory), checked before anything is allocated: a too-large context is one error line, not an
  /// allocation of tens of gigabytes.
  explicit reference_vm(ir::program program, std::uint64_t memory_budget = 0);

  const ir::program& program() const noexcept { return program_; }

  /// The id of the buffer called `name`; octo::error if there is none.
  std::int32_t buffer_id(std::string_view name) const;

  /// Writes `values` (exactly numel of them), converting to the buffer's dtype (round to nearest even
  /// for f16/bf16/fp8; integer dtypes round half to even and saturate). Block-quantized buffers take
  /// write_bytes only.
  void write(std::int32_t id, std::span<const float> values);
  void write(std::string_view name, std::span<const float> values) { write(buffer_id(name), values); }
  /// Writes integers (exactly numel): stored as is into I32 buffers, converted for other dtypes.
  void write_i32(std::int32_t id, std::span<const std::int32_t> values);
  void write_i32(std::string_view name, std::span<const std::int32_t> values) { write_i32(buffer_id(name), values); }
  /// Raw bytes in the buffer's own encoding (exactly nbytes), e.g. GGUF blocks or packed I4.
  void write_bytes(std::int32_t id, std::span<const std::byte> bytes);
  void write_bytes(std::string_view name, std::span<const std::byte> bytes) { write_bytes(buffer_id(name), bytes); }

  /// The buffer's elements as float (block-quantized buffers are dequantized).
  std::vector<float> read_f32(std::int32_t id) const;
  std::vector<float> read_f32(std::string_view name) const { return read_f32(buffer_id(name)); }
  /// The buffer's elements as int32 (I32 bit-exact; other dtypes rounded half to even).
  std::vector<std::int32_t> read_i32(std::int32_t id) const;
  std::vector<std::int32_t> read_i32(std::string_view name) const { return read_i32(buffer_id(name)); }
  /// The buffer's raw bytes.
  std::span<const std::byte> bytes(std::int32_t id) const;

  /// Changes an integer param of one task for the following runs (the decode loop advances pos,
  /// kv_len, q_pos). The key must be an integer field of PARAM_FIELDS and the value fit int32.
  void set_param(std::int32_t task, ir::param_key key, std::int64_t value);
  /// Same for a real-valued field (eps, scale, theta, alpha).
  void set_param_real(std::int32_t task, ir::param_key key, double value);
  /// set_param on every task that already carries `key`; returns how many tasks changed.
  int set_param_all(ir::param_key key, std::int64_t value);
  /// The Vulkan VM's per-token rule (docs/opcodes.md, "Per-token values"): every task's `pos`, `q_pos`
  /// and `kv_len` become their values in the program as constructed plus `position`, so one program
  /// describing the pass at position 0 drives a whole decode loop on both VMs.
  void set_position(std::int64_t position);

  /// Layer skipping (the Vulkan VM's control words, docs/vulkan.md "Control words"): the tasks of a
  /// skipped layer do nothing but count, except its last, which copies the layer's input (the residual
  /// stream coming in) to its output, so the next layer reads what this one read. octo::error when the
  /// program has no such layer or the layer cannot be bypassed (ir::layer_spans).
  void set_layer_skipped(std::int32_t layer, bool skipped);

  /// One pass: counters reset to their init values, then every task whose waits are all satisfied
  /// fires, each completion adding 1 to its out_counter, until none is ready. Throws octo::error
  /// naming the task if some task never became ready (stuck) or if a task's inputs are out of range.
  void run(const run_options& options = {});

  /// Task ids in the order the last run() fired them.
  const std::vector<std::int32_t>& last_order() const noexcept { return order_; }
  /// Counter values at the end of the last run().
  const std::vector<std::int64_t>& counter_values() const noexcept { return counters_; }
  /// Number of completed run() calls.
  std::int64_t runs_completed() const noexcept { return runs_; }

 /// One task's operands as its opcode's reference function sees them (defined in reference_vm.cpp).
  struct task_io;

 private:
  std::span<const float> view_f32(std::int32_t id, std::vector<float>& scratch) const;
  void store_f32(std::int32_t id, std::span<const float> values);
  void store_i32(std::int32_t id, std::span<const std::int32_t> values);
  const ir::buffer& buf(std::int32_t id) const;
  void execute(const ir::task& t);

  ir::program program_;
  std::vector<ir::param_list> base_params_;  // params as constructed, for set_position
  std::vector<std::vector<std::byte>> storage_;
  mutable std::vector<std::vector<float>> weight_cache_;  // float copies of WEIGHT / CONST buffers
  mutable std::vector<bool> weight_cached_;
  std::vector<std::int64_t> counters_;
  std::vector<ir::layer_span> layers_;     // ir::layer_spans, for set_layer_skipped
  std::vector<std::int32_t> skip_;         // per task: -1 runs, else the layer span it belongs to (skipped)
  std::vector<std::int32_t> order_;
  std::int64_t runs_ = 0;
};

}  // namespace octo::vm
