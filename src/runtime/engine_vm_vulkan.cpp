// The engine's VM seam on the Vulkan VM: a thin forwarding layer (regions, placements, pinned memory,
// transfer-queue uploads and timeline-semaphore submits are the VM's own).
#include <vector>

#include "engine_vm.hpp"

namespace octo::runtime::detail {

namespace {

class vulkan_engine_vm final : public engine_vm {
 public:
  explicit vulkan_engine_vm(const vm::vulkan_options& o) : vm_(o) {}

  std::string device_name() const override { return vm_.device().name; }
  void create_region(std::string_view name, std::uint64_t bytes) override { vm_.create_region(name, bytes); }
  std::uint32_t add_program(const ir::program& p, std::span<const placement> pl) override {
    std::vector<vm::buffer_placement> v;
    v.reserve(pl.size());
    for (const auto& x : pl) v.push_back({x.buffer, x.region, x.offset});
    return vm_.add_program(p, v);
  }
  void write_bytes(std::uint32_t prog, std::string_view buffer, std::span<const std::byte> bytes) override {
    vm_.write_bytes(prog, buffer, bytes);
  }
  void remove_program(std::uint32_t prog) override { vm_.remove_program(prog); }
  void read_into(std::uint32_t prog, std::string_view buffer, std::span<std::byte> dst, std::uint64_t offset) override {
    vm_.read_into(prog, buffer, dst, offset);
  }
  void run(std::uint32_t prog) override { vm_.execute(prog); }
  void set_position(std::int64_t pos, std::int64_t n) override {
    vm_.set_position(static_cast<std::uint32_t>(pos), static_cast<std::uint32_t>(n));
  }
  void enable_token_loop(std::uint32_t prog, std::uint32_t ring_slots) override { vm_.enable_token_loop(prog, ring_slots); }
  std::uint64_t submit_token_step(std::uint32_t prog) override { return vm_.submit_token_step(prog); }
  std::int32_t token_step_result(std::uint32_t prog, std::uint64_t value) override {
    return vm_.token_step_result(prog, value);
  }
  pinned_block allocate_pinned(std::uint64_t bytes) override {
    const auto p = vm_.allocate_pinned(bytes);
    return {p.id, p.data, p.bytes};
  }
  void free_pinned(std::uint32_t id) override { vm_.free_pinned(id); }
  std::uint64_t upload_async(std::uint32_t src, std::uint64_t src_offset, std::string_view region,
                             std::uint64_t dst_offset, std::uint64_t bytes, std::uint64_t after_compute) override {
    return vm_.upload_async(src, src_offset, region, dst_offset, bytes, after_compute);
  }
  std::uint64_t submit(std::uint32_t prog, std::uint64_t after_upload) override { return vm_.submit(prog, after_upload); }
  void wait_compute(std::uint64_t v) override { vm_.wait_compute(v); }
  void wait_upload(std::uint64_t v) override { vm_.wait_upload(v); }
  std::uint64_t completed_upload() const override { return vm_.completed_upload(); }
  std::uint64_t memory_in_use() const override { return vm_.stats().memory_in_use; }
  std::uint64_t memory_budget() const override { return vm_.stats().memory_budget; }
  std::uint64_t validation_messages() const override { return vm_.stats().validation_messages; }
  vm::vulkan_stats stats(std::uint32_t prog) const override { return vm_.stats(prog); }
  std::vector<vm::task_profile> profile(std::uint32_t prog) const override { return vm_.profile(prog); }
  void set_layer_skipped(std::int32_t layer, bool skipped) override { vm_.set_layer_skipped(layer, skipped); }
  void set_precision(vm::matmul_precision p) override { vm_.set_precision(p); }
  void keep_awake(bool on) override { (void)vm_.keep_awake(on); }
  std::vector<vm::layer_stats> layer_statistics(std::uint32_t prog, std::int64_t position) const override {
    return vm_.layer_statistics(prog, static_cast<std::uint32_t>(position));
  }

 private:
  vm::vulkan_vm vm_;
};

}  // namespace

std::unique_ptr<engine_vm> make_vulkan_vm(const vm::vulkan_options& o) {
  return std::make_unique<vulkan_engine_vm>(o);
}

}  // namespace octo::runtime::detail
