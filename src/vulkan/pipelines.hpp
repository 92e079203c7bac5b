// Compute pipelines from the embedded SPIR-V: one pipeline layout (push constants only: kernels reach
// memory through buffer device addresses), a map keyed by (module, specialization constants), and a
// VkPipelineCache kept on disk, keyed by the SPIR-V's hash, the device's UUID and its driver version.
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "device.hpp"


namespace octo::vm::vulkan {

class pipelines {
 public:
  /// cache_dir: where the pipeline cache lives; empty: $XDG_CACHE_HOME/octo or ~/.cache/octo; "-": none.
  pipelines(const device& dev, std::string cache_dir);
  ~pipelines();  // saves the cache (errors ignored: a cache is an optimisation)
  pipelines(const pipelines&) = delete;
  pipelines& operator=(const pipelines&) = delete;

  const vk::raii::PipelineLayout& layout() const { return layout_; }
  std::uint32_t push_constant_bytes() const { return push_bytes_; }
  /// The pipeline for `shader` specialised with `spec` (constant_id i = spec[i]); builds it on first use.
  vk::Pipeline get(std::string_view shader, std::span<const std::uint32_t> spec);
  std::size_t size() const { return map_.size(); }
  const std::filesystem::path& cache_file() const { return cache_file_; }
  bool cache_loaded() const { return cache_loaded_; }
  void save() const;

 private:
  const device& dev_;
  std::uint32_t push_bytes_ = 128;
  vk::raii::PipelineLayout layout_{nullptr};
  vk::raii::PipelineCache cache_{nullptr};
  std::filesystem::path cache_file_;
  bool cache_loaded_ = false;
  void print_statistics(vk::Pipeline pipeline, const std::string& shader, const std::vector<std::uint32_t>& spec) const;
  std::map<std::string, vk::raii::ShaderModule, std::less<>> modules_;
  std::map<std::pair<std::string, std::vector<std::uint32_t>>, vk::raii::Pipeline> map_;
};

}  // namespace octo::vm::vulkan
