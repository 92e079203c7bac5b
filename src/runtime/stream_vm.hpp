// stream_vm: what the streaming engine needs of a VM (the multi-program / streaming API of
// notes/vm-streaming-api.md): the Vulkan VM, or the CPU reference VM behind an emulation of that API.
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

class stream_vm {
 public:
  virtual ~stream_vm() = default;
  virtual std::string device_name() const = 0;
  virtual void create_region(std::string_view name, std::uint64_t bytes) = 0;
  virtual std::uint32_t add_program(const ir::program& p, std::span<const placement> placements) = 0;
  virtual void write_bytes(std::uint32_t prog, std::string_view buffer, std::span<const std::byte> bytes) = 0;
  virtual std::vector<std::byte> read_bytes(std::uint32_t prog, std::string_view buffer) = 0;
  virtual std::vector<float> read_f32(std::uint32_t prog, std::string_view buffer) = 0;
  /// `count` floats from float `first` on (the last row of a prefill's logits without reading all T).
  virtual std::vector<float> read_f32_range(std::uint32_t prog, std::string_view buffer, std::size_t first,
                                            std::size_t count) {
    auto all = read_f32(prog, buffer);
    if (first > all.size() || count > all.size() - first)
      throw octo::error("octo: buffer '" + std::string(buffer) + "' is shorter than asked");
    return {all.begin() + static_cast<std::ptrdiff_t>(first), all.begin() + static_cast<std::ptrdiff_t>(first + count)};
  }
  virtual void set_position(std::int64_t pos, std::int64_t n_tokens) = 0;
  virtual pinned_block allocate_pinned(std::uint64_t bytes) = 0;
  virtual std::uint64_t upload_async(std::uint32_t src, std::uint64_t src_offset, std::string_view region,
                                     std::uint64_t dst_offset, std::uint64_t bytes, std::uint64_t after_compute) = 0;
  virtual std::uint64_t submit(std::uint32_t prog, std::uint64_t after_upload) = 0;
  virtual void wait_compute(std::uint64_t value) = 0;
  virtual void wait_upload(std::uint64_t value) = 0;
  virtual std::uint64_t completed_upload() const = 0;
  virtual std::uint64_t memory_in_use() const = 0;
  virtual std::uint64_t validation_messages() const = 0;
};

/// The CPU reference VM, one per program, with regions, placements, shared weights / KV caches and
/// pinned memory emulated by copies; submits and uploads run at once (in order), so the engine's
/// ordering is exercised but not its overlap.
std::unique_ptr<stream_vm> make_reference_stream_vm();
/// The Vulkan VM's streaming API.
std::unique_ptr<stream_vm> make_vulkan_stream_vm(const vm::vulkan_options& o);

}  // namespace octo::runtime::detail
