// The streaming VM API on the Vulkan VM: a thin forwarding layer (regions, placements, pinned memory,
// transfer-queue uploads and timeline-semaphore submits are the VM's own).
#include <vector>

#include "stream_vm.hpp"

namespace octo::runtime::detail {

namespace {

class vulkan_stream_vm final : public stream_vm {
 public:
  explicit vulkan_stream_vm(const vm::vulkan_options& o) : vm_(o) {}

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
  std::vector<std::byte> read_bytes(std::uint32_t prog, std::string_view buffer) override {
    return vm_.read_bytes(prog, buffer);
  }
  std::vector<float> read_f32(std::uint32_t prog, std::string_view buffer) override { return vm_.read_f32(prog, buffer); }
  std::vector<float> read_f32_range(std::uint32_t prog, std::string_view buffer, std::size_t first,
                                    std::size_t count) override {
    std::vector<float> out(count);
    vm_.read_into(prog, buffer, std::as_writable_bytes(std::span<float>(out)), std::uint64_t{first} * 4);
    return out;
  }
  void set_position(std::int64_t pos, std::int64_t n) override {
    vm_.set_position(static_cast<std::uint32_t>(pos), static_cast<std::uint32_t>(n));
  }
  pinned_block allocate_pinned(std::uint64_t bytes) override {
    const auto p = vm_.allocate_pinned(bytes);
    return {p.id, p.data, p.bytes};
  }
  std::uint64_t upload_async(std::uint32_t src, std::uint64_t src_offset, std::string_view region,
                             std::uint64_t dst_offset, std::uint64_t bytes, std::uint64_t after_compute) override {
    return vm_.upload_async(src, src_offset, region, dst_offset, bytes, after_compute);
  }
  std::uint64_t submit(std::uint32_t prog, std::uint64_t after_upload) override { return vm_.submit(prog, after_upload); }
  void wait_compute(std::uint64_t v) override { vm_.wait_compute(v); }
  void wait_upload(std::uint64_t v) override { vm_.wait_upload(v); }
  std::uint64_t completed_upload() const override { return vm_.completed_upload(); }
  std::uint64_t memory_in_use() const override { return vm_.stats().memory_in_use; }
  std::uint64_t validation_messages() const override { return vm_.stats().validation_messages; }

 private:
  vm::vulkan_vm vm_;
};

}  // namespace

std::unique_ptr<stream_vm> make_vulkan_stream_vm(const vm::vulkan_options& o) {
  return std::make_unique<vulkan_stream_vm>(o);
}

}  // namespace octo::runtime::detail
