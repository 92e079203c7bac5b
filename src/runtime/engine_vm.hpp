// engine_vm: what the engine needs of a VM (the Vulkan VM's multi-program / streaming API, described in
// docs/streaming.md): the Vulkan VM, or the CPU reference VM behind an emulation of that API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "octo/error.hpp"
#include "octo/ir/program.hpp"
#include "octo/vm/vulkan_vm.hpp"

namespace octo::runtime::detail {

/// A buffer of a program placed into a caller-laid-out region (vm::buffer_placement's fields).
struct placement {
  std::string buffer;
  std::string region;
  std::uint64_t offset = 0;
};

/// Host memory usable as an upload source, 4096-aligned.
struct pinned_block {
  std::uint32_t id = 0;
  std::byte* data = nullptr;
  std::uint64_t bytes = 0;
};

class engine_vm {
 public:
  virtual ~engine_vm() = default;
  virtual std::string device_name() const = 0;
  virtual void create_region(std::string_view name, std::uint64_t bytes) = 0;
  virtual std::uint32_t add_program(const ir::program& p, std::span<const placement> placements) = 0;
  /// Frees the program's own buffers (shared weights and KV caches stay).
  virtual void remove_program(std::uint32_t prog) = 0;
  virtual void write_bytes(std::uint32_t prog, std::string_view buffer, std::span<const std::byte> bytes) = 0;
  /// dst.size() bytes of a buffer from byte `offset` on (the last row of a prefill's logits without
  /// reading all T).
  virtual void read_into(std::uint32_t prog, std::string_view buffer, std::span<std::byte> dst,
                         std::uint64_t offset = 0) = 0;
  virtual void set_position(std::int64_t pos, std::int64_t n_tokens) = 0;
  /// One run of `prog`, waited for (a whole model in one program: one submit).
  virtual void run(std::uint32_t prog) = 0;
  /// The greedy token loop (vm::vulkan_vm::enable_token_loop, submit_token_step, token_step_result): a
  /// whole decode program's steps chained on the device, the next input token and position written by
  /// the device, tokens read behind from a ring of `ring_slots`.
  virtual void enable_token_loop(std::uint32_t prog, std::uint32_t ring_slots) = 0;
  virtual std::uint64_t submit_token_step(std::uint32_t prog) = 0;
  virtual std::int32_t token_step_result(std::uint32_t prog, std::uint64_t value) = 0;
  virtual pinned_block allocate_pinned(std::uint64_t bytes) = 0;
  /// Waits for the uploads submitted so far, then frees the block (the RAM tier shrinking).
  virtual void free_pinned(std::uint32_t id) = 0;
  virtual std::uint64_t upload_async(std::uint32_t src, std::uint64_t src_offset, std::string_view region,
                                     std::uint64_t dst_offset, std::uint64_t bytes, std::uint64_t after_compute) = 0;
  virtual std::uint64_t submit(std::uint32_t prog, std::uint64_t after_upload) = 0;
  virtual void wait_compute(std::uint64_t value) = 0;
  virtual void wait_upload(std::uint64_t value) = 0;
  virtual std::uint64_t completed_upload() const = 0;
  virtual std::uint64_t memory_in_use() const = 0;
  /// Bytes of memory the VM may use (the Vulkan VM's device memory budget); 0: no fixed budget.
  virtual std::uint64_t memory_budget() const = 0;
  virtual std::uint64_t validation_messages() const = 0;
  /// One program's dispatches, barriers, recordings and submits, with the VM's memory (zeros on the CPU).
  virtual vm::vulkan_stats stats(std::uint32_t prog) const = 0;
  /// Per-task GPU times of the program's last run (profiling on; empty on the CPU).
  virtual std::vector<vm::task_profile> profile(std::uint32_t prog) const = 0;
  /// The layer statistics of the program's finished run at `position` (vm::vulkan_vm::layer_statistics;
  /// the reference VM computes them on the host from the same buffers).
  virtual std::vector<vm::layer_stats> layer_statistics(std::uint32_t prog, std::int64_t position) const = 0;
  /// Control words (vm::vulkan_vm::set_layer_skipped / set_precision): in every program, present and
  /// future. The reference VM skips on the host (reference_vm::set_layer_skipped) and has one precision.
  virtual void set_layer_skipped(std::int32_t layer, bool skipped) = 0;
  virtual void set_precision(vm::matmul_precision p) = 0;
  /// vm::vulkan_vm::keep_awake: the clock kept up while loading (nothing on the CPU).
  virtual void keep_awake(bool on) = 0;
};

/// Holds the VM's clock up for a scope of loading work (engine_vm::keep_awake); null: nothing.
class awake_scope {
 public:
  explicit awake_scope(engine_vm* vm) : vm_(vm) {
    if (vm_) vm_->keep_awake(true);
  }
  ~awake_scope() {
    try {
      if (vm_) vm_->keep_awake(false);
    } catch (...) {  // releasing never fails the work it covered
    }
  }
  awake_scope(const awake_scope&) = delete;
  awake_scope& operator=(const awake_scope&) = delete;

 private:
  engine_vm* vm_;
};

/// The CPU reference VM, one per program, with regions, placements, shared weights / KV caches and
/// pinned memory emulated by copies; submits and uploads run at once (in order), so the engine's
/// ordering is exercised but not its overlap.
std::unique_ptr<engine_vm> make_reference_vm();
/// The Vulkan VM.
std::unique_ptr<engine_vm> make_vulkan_vm(const vm::vulkan_options& o);

}  // namespace octo::runtime::detail
