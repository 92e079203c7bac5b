// See pipelines.hpp. A cache file that is missing, corrupt, from another device or unwritable is never
// an error: the pipelines are simply built from scratch.
#include "pipelines.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <span>

#define XXH_INLINE_ALL
#include <xxhash.h>


#include "kernel_registry.hpp"
#include "octo/error.hpp"
#include "octo/file_io.hpp"
#include "spirv_registry.hpp"

namespace octo::vm::vulkan {

namespace {

std::filesystem::path default_cache_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::filesystem::path(x) / "octo";
  if (const char* h = std::getenv("HOME"); h && *h) return std::filesystem::path(h) / ".cache" / "octo";
  return {};
}

std::string hex(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

/// The header VkPipelineCache data starts with (Vulkan spec, "Pipeline Cache Header").
bool header_matches(const std::vector<char>& data, const vk::PhysicalDeviceProperties& p) {
  if (data.size() < 32) return false;
  std::uint32_t len, version, vendor, dev;
  std::memcpy(&len, data.data(), 4);
  std::memcpy(&version, data.data() + 4, 4);
  std::memcpy(&vendor, data.data() + 8, 4);
  std::memcpy(&dev, data.data() + 12, 4);
  return len >= 32 && version == 1 && vendor == p.vendorID && dev == p.deviceID &&
         std::memcmp(data.data() + 16, p.pipelineCacheUUID.data(), VK_UUID_SIZE) == 0;
}

}  // namespace

pipelines::pipelines(const device& dev, std::string cache_dir) : dev_(dev) {
  try {
    push_bytes_ = dev.facts().max_push_constants;
    vk::PushConstantRange range(vk::ShaderStageFlagBits::eCompute, 0, push_bytes_);
    layout_ = vk::raii::PipelineLayout(dev.logical(), vk::PipelineLayoutCreateInfo({}, {}, range));

    if (cache_dir != "-") {
      std::filesystem::path dir = cache_dir.empty() ? default_cache_dir() : std::filesystem::path(cache_dir);
      if (!dir.empty()) {
        // The key: every SPIR-V module (name and words), the driver's cache UUID and version (XXH3, as
        // the layer files' checksums).
        const std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> st(XXH3_createState(), &XXH3_freeState);
        if (!st) throw std::bad_alloc();
        XXH3_64bits_reset(st.get());
        for (auto name : spirv_names()) {
          auto words = find_spirv(name);
          XXH3_64bits_update(st.get(), name.data(), name.size());
          XXH3_64bits_update(st.get(), words.data(), words.size_bytes());
        }
        const auto& p = dev.properties();
        XXH3_64bits_update(st.get(), p.pipelineCacheUUID.data(), VK_UUID_SIZE);
        XXH3_64bits_update(st.get(), &p.driverVersion, sizeof p.driverVersion);
        cache_file_ = dir / ("pipelines-" + hex(XXH3_64bits_digest(st.get())) + ".bin");
      }
    }
    std::vector<char> data;
    if (!cache_file_.empty()) {
      std::ifstream in(cache_file_, std::ios::binary);
      if (in) data.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      if (!header_matches(data, dev.properties())) data.clear();
    }
    try {
      cache_ = vk::raii::PipelineCache(dev.logical(), vk::PipelineCacheCreateInfo({}, data.size(), data.data()));
      cache_loaded_ = !data.empty();
    } catch (const vk::SystemError&) {
      cache_ = vk::raii::PipelineCache(dev.logical(), vk::PipelineCacheCreateInfo());
    }
  } catch (...) {
    rethrow_vulkan("creating the pipeline layout and cache");
  }
}

pipelines::~pipelines() { save(); }

void pipelines::save() const {
  if (cache_file_.empty() || !*cache_) return;
  try {
    auto data = cache_.getData();
    std::error_code ec;
    std::filesystem::create_directories(cache_file_.parent_path(), ec);
    // A temporary sibling renamed into place: readers never see half a file, and two processes saving at
    // once never share a temporary.
    octo::output_file out(cache_file_);
    out.write(std::as_bytes(std::span(data)));
    out.commit();
  } catch (...) {
  }
}

// One line a pipeline executable on stderr: the shader, its specialization constants, and every
// statistic the driver reports (NVIDIA: registers, shared memory, ...).
void pipelines::print_statistics(vk::Pipeline pipeline, const std::string& shader, const std::vector<std::uint32_t>& spec) const {
  const auto& d = dev_.logical();
  const auto execs = d.getPipelineExecutablePropertiesKHR(vk::PipelineInfoKHR(pipeline));
  for (std::uint32_t e = 0; e < execs.size(); ++e) {
    std::string line = "octo: pipeline " + shader + " [";
    for (std::size_t i = 0; i < spec.size(); ++i) line += (i ? " " : "") + std::to_string(spec[i]);
    line += "]";
    if (execs.size() > 1) line += " " + std::string(execs[e].name.data());
    for (const auto& st : d.getPipelineExecutableStatisticsKHR(vk::PipelineExecutableInfoKHR(pipeline, e))) {
      line += ", " + std::string(st.name.data()) + " ";
      switch (st.format) {
        case vk::PipelineExecutableStatisticFormatKHR::eBool32: line += st.value.b32 ? "true" : "false"; break;
        case vk::PipelineExecutableStatisticFormatKHR::eInt64: line += std::to_string(st.value.i64); break;
        case vk::PipelineExecutableStatisticFormatKHR::eUint64: line += std::to_string(st.value.u64); break;
        case vk::PipelineExecutableStatisticFormatKHR::eFloat64: line += std::to_string(st.value.f64); break;
      }
    }
    std::fprintf(stderr, "%s\n", line.c_str());
  }
}

vk::Pipeline pipelines::get(std::string_view shader, std::span<const std::uint32_t> spec) {
  auto key = std::make_pair(std::string(shader), std::vector<std::uint32_t>(spec.begin(), spec.end()));
  if (auto it = map_.find(key); it != map_.end()) return *it->second;
  auto words = find_spirv(shader);
  if (words.empty()) throw octo::error("octo: no compiled shader named '" + std::string(shader) + "'");
  try {
    auto mod = modules_.find(shader);
    if (mod == modules_.end())
      mod = modules_.emplace(std::string(shader),
                             vk::raii::ShaderModule(dev_.logical(), vk::ShaderModuleCreateInfo({}, words.size_bytes(), words.data())))
                .first;
    std::vector<vk::SpecializationMapEntry> entries;
    for (std::uint32_t i = 0; i < spec.size(); ++i)
      if (spec[i] != spec_default)  // kernel_registry.hpp: the module's default
        entries.emplace_back(i, static_cast<std::uint32_t>(i * sizeof(std::uint32_t)), sizeof(std::uint32_t));
    vk::SpecializationInfo si(static_cast<std::uint32_t>(entries.size()), entries.data(), spec.size_bytes(), spec.data());
    vk::PipelineShaderStageCreateInfo stage({}, vk::ShaderStageFlagBits::eCompute, *mod->second, "main",
                                            spec.empty() ? nullptr : &si);
    vk::ComputePipelineCreateInfo ci({}, stage, *layout_);
    if (dev_.pipeline_statistics()) ci.flags |= vk::PipelineCreateFlagBits::eCaptureStatisticsKHR;
    auto it = map_.emplace(std::move(key), vk::raii::Pipeline(dev_.logical(), cache_, ci)).first;
    if (dev_.pipeline_statistics()) print_statistics(*it->second, it->first.first, it->first.second);
    return *it->second;
  } catch (...) {
    rethrow_vulkan(("building the compute pipeline for shader '" + std::string(shader) + "'").c_str());
  }
}

}  // namespace octo::vm::vulkan
