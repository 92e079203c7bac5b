// Device selection and creation. Vulkan-Hpp's exceptions stop here as octo::errors (one line each).
#include "device.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "octo/error.hpp"

VULKAN_HPP_DEFAULT_DISPATCH_LOADER_DYNAMIC_STORAGE

namespace octo::vm::vulkan {
namespace {

std::string version_text(std::uint32_t v) {
  // snprintf rather than string concatenation: g++ 12 -O3 warns falsely (-Wrestrict) on the latter.
  char buf[48];
  std::snprintf(buf, sizeof buf, "%u.%u.%u", VK_API_VERSION_MAJOR(v), VK_API_VERSION_MINOR(v), VK_API_VERSION_PATCH(v));
  return buf;
}

const char* type_name(vk::PhysicalDeviceType t) {
  switch (t) {
    case vk::PhysicalDeviceType::eDiscreteGpu: return "discrete";
    case vk::PhysicalDeviceType::eIntegratedGpu: return "integrated";
    case vk::PhysicalDeviceType::eVirtualGpu: return "virtual";
    case vk::PhysicalDeviceType::eCpu: return "cpu";
    default: return "other";
  }
}

int preference(vk::PhysicalDeviceType t) {
  switch (t) {
    case vk::PhysicalDeviceType::eDiscreteGpu: return 4;
    case vk::PhysicalDeviceType::eIntegratedGpu: return 3;
    case vk::PhysicalDeviceType::eVirtualGpu: return 2;
    case vk::PhysicalDeviceType::eCpu: return 1;
    default: return 0;
  }
}

bool has_extension(const std::vector<vk::ExtensionProperties>& exts, const char* name) {
  return std::any_of(exts.begin(), exts.end(),
                     [&](const vk::ExtensionProperties& e) { return std::strcmp(e.extensionName, name) == 0; });
}

std::unique_ptr<vk::raii::Context> open_loader() {
  try {
    return std::make_unique<vk::raii::Context>();
  } catch (const std::exception& e) {
    throw octo::error(std::string("octo: no Vulkan loader (libvulkan.so.1 could not be opened: ") + e.what() +
                      "); install a Vulkan driver and loader, e.g. mesa-vulkan-drivers and libvulkan1");
  }
}

vk::raii::Instance make_instance(const vk::raii::Context& ctx, bool validation, bool& debug_utils) {
  vk::ApplicationInfo app("octo", 1, "octo", 1, VK_API_VERSION_1_3);
  std::vector<const char*> layers, extensions;
  debug_utils = false;
  if (validation) {
    auto available = ctx.enumerateInstanceLayerProperties();
    bool found = std::any_of(available.begin(), available.end(), [](const vk::LayerProperties& l) {
      return std::strcmp(l.layerName, "VK_LAYER_KHRONOS_validation") == 0;
    });
    if (!found)
      throw octo::error("octo: validation requested (OCTO_VALIDATION=1) but VK_LAYER_KHRONOS_validation is not installed "
                        "(Debian: vulkan-validationlayers)");
    layers.push_back("VK_LAYER_KHRONOS_validation");
    auto exts = ctx.enumerateInstanceExtensionProperties();
    if (has_extension(exts, VK_EXT_DEBUG_UTILS_EXTENSION_NAME)) {
      extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
      debug_utils = true;
    }
  }
  vk::InstanceCreateInfo info({}, &app, layers, extensions);
  try {
    return vk::raii::Instance(ctx, info);
  } catch (const vk::IncompatibleDriverError&) {
    // What the loader answers when it finds no driver (ICD) at all.
    throw octo::error("octo: no Vulkan device found (the Vulkan loader found no driver; install one, e.g. mesa-vulkan-drivers)");
  }
}

device_entry describe(const vk::raii::PhysicalDevice& pd, std::uint32_t index) {
  auto p = pd.getProperties();
  device_entry e;
  e.index = index;
  e.name = p.deviceName.data();
  e.type = type_name(p.deviceType);
  e.api_version = p.apiVersion;
  e.driver_version = p.driverVersion;
  auto mem = pd.getMemoryProperties();
  for (std::uint32_t i = 0; i < mem.memoryHeapCount; ++i)
    if (mem.memoryHeaps[i].flags & vk::MemoryHeapFlagBits::eDeviceLocal)
      e.device_local_bytes = std::max<std::uint64_t>(e.device_local_bytes, mem.memoryHeaps[i].size);
  if (p.apiVersion < VK_API_VERSION_1_2) {
    e.why_not = "Vulkan " + version_text(p.apiVersion) + " < 1.2";
  } else {
    auto chain = pd.getFeatures2<vk::PhysicalDeviceFeatures2, vk::PhysicalDeviceVulkan12Features>();
    if (!chain.get<vk::PhysicalDeviceVulkan12Features>().bufferDeviceAddress)
      e.why_not = "no buffer device address";
  }
  e.suitable = e.why_not.empty();
  return e;
}

VKAPI_ATTR VkBool32 VKAPI_CALL on_validation_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                     VkDebugUtilsMessageTypeFlagsEXT,
                                                     const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  if (severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
    static_cast<std::atomic<std::uint64_t>*>(user)->fetch_add(1);
    std::fprintf(stderr, "octo: validation: %s\n", data && data->pMessage ? data->pMessage : "(no message)");
  }
  return VK_FALSE;
}

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::string_view(v) != "0";
}

}  // namespace

void rethrow_vulkan(const char* doing) {
  try {
    throw;
  } catch (const octo::error&) {
    throw;
  } catch (const vk::SystemError& e) {
    throw octo::error(std::string("octo: Vulkan error while ") + doing + ": " + e.code().message());
  } catch (const std::exception& e) {
    throw octo::error(std::string("octo: error while ") + doing + ": " + e.what());
  }
}

std::vector<device_entry> device::enumerate() {
  try {
    auto ctx = open_loader();
    bool debug = false;
    auto instance = make_instance(*ctx, false, debug);
    std::vector<device_entry> out;
    vk::raii::PhysicalDevices pds(instance);
    for (std::uint32_t i = 0; i < pds.size(); ++i) out.push_back(describe(pds[i], i));
    return out;
  } catch (...) {
    rethrow_vulkan("listing Vulkan devices");
  }
}

device::device(const device_options& options) {
  try {
    context_ = open_loader();
    bool validation = options.validation || env_flag("OCTO_VALIDATION");
    bool debug_utils = false;
    instance_ = make_instance(*context_, validation, debug_utils);
    if (debug_utils) {
      vk::DebugUtilsMessengerCreateInfoEXT info(
          {},
          vk::DebugUtilsMessageSeverityFlagBitsEXT::eWarning | vk::DebugUtilsMessageSeverityFlagBitsEXT::eError,
          vk::DebugUtilsMessageTypeFlagBitsEXT::eGeneral | vk::DebugUtilsMessageTypeFlagBitsEXT::eValidation |
              vk::DebugUtilsMessageTypeFlagBitsEXT::ePerformance,
          &on_validation_message, validation_messages_.get());
      messenger_ = vk::raii::DebugUtilsMessengerEXT(instance_, info);
    }

    vk::raii::PhysicalDevices pds(instance_);
    if (pds.empty())
      throw octo::error("octo: no Vulkan device found (the loader sees no driver; install one, e.g. mesa-vulkan-drivers)");
    std::vector<device_entry> entries;
    for (std::uint32_t i = 0; i < pds.size(); ++i) entries.push_back(describe(pds[i], i));

    std::string selector = options.selector;
    if (selector.empty())
      if (const char* env = std::getenv("OCTO_DEVICE")) selector = env;
    std::optional<std::uint32_t> chosen;
    if (!selector.empty()) {
      bool numeric = std::all_of(selector.begin(), selector.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (numeric) {
        auto idx = static_cast<std::uint32_t>(std::stoul(selector));
        if (idx >= entries.size())
          throw octo::error("octo: OCTO_DEVICE=" + selector + " but there are only " + std::to_string(entries.size()) +
                            " Vulkan devices");
        chosen = idx;
      } else {
        for (const auto& e : entries)
          if (e.name.find(selector) != std::string::npos) {
            chosen = e.index;
            break;
          }
        if (!chosen) throw octo::error("octo: no Vulkan device's name contains '" + selector + "' (OCTO_DEVICE)");
      }
      if (!entries[*chosen].suitable)
        throw octo::error("octo: Vulkan device " + std::to_string(*chosen) + " (" + entries[*chosen].name +
                          ") cannot run octo: " + entries[*chosen].why_not);
    } else {
      int best = -1;
      for (const auto& e : entries) {
        if (!e.suitable) continue;
        int score = preference(pds[e.index].getProperties().deviceType);
        if (score > best) {
          best = score;
          chosen = e.index;
        }
      }
      if (!chosen)
        throw octo::error("octo: no usable Vulkan device (" + std::to_string(entries.size()) +
                          " found, none with Vulkan 1.2 and buffer device address)");
    }
    physical_ = std::move(pds[*chosen]);
    entry_ = entries[*chosen];
    properties_ = physical_.getProperties();
    memory_ = physical_.getMemoryProperties();

    // Queues: the first compute family; a transfer-only family if the device has one.
    auto families = physical_.getQueueFamilyProperties();
    std::optional<std::uint32_t> compute;
    for (std::uint32_t i = 0; i < families.size(); ++i) {
      auto f = families[i].queueFlags;
      if ((f & vk::QueueFlagBits::eCompute) && !compute) compute = i;
      if ((f & vk::QueueFlagBits::eTransfer) && !(f & vk::QueueFlagBits::eCompute) &&
          !(f & vk::QueueFlagBits::eGraphics) && !transfer_family_)
        transfer_family_ = i;
    }
    if (!compute) throw octo::error("octo: Vulkan device " + entry_.name + " has no compute queue");
    compute_family_ = *compute;

    // Features: what the device has of what the kernels use; buffer device address is required.
    auto exts = physical_.enumerateDeviceExtensionProperties();
    bool coop_nv = has_extension(exts, "VK_NV_cooperative_matrix");
    auto sup = physical_.getFeatures2<vk::PhysicalDeviceFeatures2, vk::PhysicalDeviceVulkan11Features,
                                      vk::PhysicalDeviceVulkan12Features>();
    const auto& s10 = sup.get<vk::PhysicalDeviceFeatures2>().features;
    const auto& s11 = sup.get<vk::PhysicalDeviceVulkan11Features>();
    const auto& s12 = sup.get<vk::PhysicalDeviceVulkan12Features>();
    vk::StructureChain<vk::DeviceCreateInfo, vk::PhysicalDeviceFeatures2, vk::PhysicalDeviceVulkan11Features,
                       vk::PhysicalDeviceVulkan12Features, vk::PhysicalDeviceVulkan13Features,
                       vk::PhysicalDeviceCooperativeMatrixFeaturesNV, vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR>
        want;
    auto& f10 = want.get<vk::PhysicalDeviceFeatures2>().features;
    f10.shaderInt64 = s10.shaderInt64;
    f10.shaderInt16 = s10.shaderInt16;
    f10.shaderFloat64 = s10.shaderFloat64;
    auto& f11 = want.get<vk::PhysicalDeviceVulkan11Features>();
    f11.storageBuffer16BitAccess = s11.storageBuffer16BitAccess;
    f11.uniformAndStorageBuffer16BitAccess = s11.uniformAndStorageBuffer16BitAccess;
    f11.storagePushConstant16 = s11.storagePushConstant16;
    auto& f12 = want.get<vk::PhysicalDeviceVulkan12Features>();
    f12.storageBuffer8BitAccess = s12.storageBuffer8BitAccess;
    f12.uniformAndStorageBuffer8BitAccess = s12.uniformAndStorageBuffer8BitAccess;
    f12.storagePushConstant8 = s12.storagePushConstant8;
    f12.shaderFloat16 = s12.shaderFloat16;
    f12.shaderInt8 = s12.shaderInt8;
    f12.scalarBlockLayout = s12.scalarBlockLayout;
    f12.shaderSubgroupExtendedTypes = s12.shaderSubgroupExtendedTypes;
    f12.timelineSemaphore = s12.timelineSemaphore;
    f12.bufferDeviceAddress = VK_TRUE;
    f12.vulkanMemoryModel = s12.vulkanMemoryModel;
    f12.vulkanMemoryModelDeviceScope = s12.vulkanMemoryModelDeviceScope;
    f12.shaderBufferInt64Atomics = s12.shaderBufferInt64Atomics;
    bool v13 = properties_.apiVersion >= VK_API_VERSION_1_3;
    bool int_dot = false, int_dot_accelerated = false;
    if (v13) {
      auto sup13 = physical_.getFeatures2<vk::PhysicalDeviceFeatures2, vk::PhysicalDeviceVulkan13Features>();
      const auto& s13 = sup13.get<vk::PhysicalDeviceVulkan13Features>();
      auto& f13 = want.get<vk::PhysicalDeviceVulkan13Features>();
      f13.subgroupSizeControl = s13.subgroupSizeControl;
      f13.computeFullSubgroups = s13.computeFullSubgroups;
      f13.synchronization2 = s13.synchronization2;
      f13.maintenance4 = s13.maintenance4;
      f13.shaderIntegerDotProduct = s13.shaderIntegerDotProduct;
      int_dot = s13.shaderIntegerDotProduct;
      if (int_dot) {
        auto p13 = physical_.getProperties2<vk::PhysicalDeviceProperties2, vk::PhysicalDeviceShaderIntegerDotProductProperties>();
        int_dot_accelerated =
            p13.get<vk::PhysicalDeviceShaderIntegerDotProductProperties>().integerDotProduct4x8BitPackedSignedAccelerated;
      }
    } else {
      want.unlink<vk::PhysicalDeviceVulkan13Features>();
    }
    std::vector<const char*> dev_exts;
    if (coop_nv) {
      auto supc = physical_.getFeatures2<vk::PhysicalDeviceFeatures2, vk::PhysicalDeviceCooperativeMatrixFeaturesNV>();
      coop_nv = supc.get<vk::PhysicalDeviceCooperativeMatrixFeaturesNV>().cooperativeMatrix;
    }
    if (coop_nv) {
      dev_exts.push_back("VK_NV_cooperative_matrix");
      want.get<vk::PhysicalDeviceCooperativeMatrixFeaturesNV>().cooperativeMatrix = VK_TRUE;
    } else {
      want.unlink<vk::PhysicalDeviceCooperativeMatrixFeaturesNV>();
    }

    // OCTO_PIPELINE_STATS=1: the driver's statistics of every pipeline (a measurement aid: which kernels
    // the registers hold to few workgroups a SM), where the device reports them.
    if (const char* e = std::getenv("OCTO_PIPELINE_STATS"); e && std::string_view(e) == "1") {
      if (has_extension(exts, "VK_KHR_pipeline_executable_properties")) {
        auto supe = physical_.getFeatures2<vk::PhysicalDeviceFeatures2, vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR>();
        pipeline_statistics_ = supe.get<vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR>().pipelineExecutableInfo;
      }
      if (!pipeline_statistics_)
        std::fprintf(stderr, "octo: OCTO_PIPELINE_STATS: %s reports no pipeline statistics (VK_KHR_pipeline_executable_properties)\n",
                     entry_.name.c_str());
    }
    if (pipeline_statistics_) {
      dev_exts.push_back("VK_KHR_pipeline_executable_properties");
      want.get<vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR>().pipelineExecutableInfo = VK_TRUE;
    } else {
      want.unlink<vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR>();
    }

    // The compute family's second queue (where it has one) at the lowest priority: the keep-awake work.
    const float priorities[2] = {1.0f, 0.0f};
    const float& priority = priorities[0];
    const std::uint32_t compute_queues = families[compute_family_].queueCount >= 2 ? 2 : 1;
    std::vector<vk::DeviceQueueCreateInfo> queues{vk::DeviceQueueCreateInfo({}, compute_family_, compute_queues, priorities)};
    if (transfer_family_) queues.emplace_back(vk::DeviceQueueCreateInfo({}, *transfer_family_, 1, &priority));
    auto& dci = want.get<vk::DeviceCreateInfo>();
    dci.setQueueCreateInfos(queues);
    dci.setPEnabledExtensionNames(dev_exts);
    device_ = vk::raii::Device(physical_, dci);
    compute_queue_ = vk::raii::Queue(device_, compute_family_, 0);
    if (compute_queues == 2) spare_compute_queue_ = vk::raii::Queue(device_, compute_family_, 1);
    if (transfer_family_) transfer_queue_ = vk::raii::Queue(device_, *transfer_family_, 0);

    // Facts.
    auto props = physical_.getProperties2<vk::PhysicalDeviceProperties2, vk::PhysicalDeviceSubgroupProperties,
                                          vk::PhysicalDeviceMaintenance3Properties>();
    const auto& sg = props.get<vk::PhysicalDeviceSubgroupProperties>();
    bool compute_sg = static_cast<bool>(sg.supportedStages & vk::ShaderStageFlagBits::eCompute);
    facts_.subgroup_size = sg.subgroupSize;
    facts_.subgroup_arithmetic = compute_sg && (sg.supportedOperations & vk::SubgroupFeatureFlagBits::eArithmetic);
    facts_.subgroup_shuffle = compute_sg && (sg.supportedOperations & vk::SubgroupFeatureFlagBits::eShuffle);
    facts_.float16_arithmetic = s12.shaderFloat16;
    facts_.int8_arithmetic = s12.shaderInt8;
    facts_.storage_8bit = s12.storageBuffer8BitAccess;
    facts_.storage_16bit = s11.storageBuffer16BitAccess;
    facts_.cooperative_matrix_nv = coop_nv;
    facts_.int_dot = int_dot;
    facts_.int_dot_accelerated = int_dot_accelerated;
    facts_.max_workgroup_size_x = properties_.limits.maxComputeWorkGroupSize[0];
    facts_.max_shared_memory = properties_.limits.maxComputeSharedMemorySize;
    facts_.max_push_constants = std::min<std::uint32_t>(properties_.limits.maxPushConstantsSize, 256);
    facts_.cpu = properties_.deviceType == vk::PhysicalDeviceType::eCpu;
    timeline_ = s12.timelineSemaphore;
    facts_.shader_int64 = s10.shaderInt64;
    facts_.scalar_block_layout = s12.scalarBlockLayout;
    facts_.timeline_semaphores = timeline_;
    max_allocation_size_ = props.get<vk::PhysicalDeviceMaintenance3Properties>().maxMemoryAllocationSize;
  } catch (...) {
    rethrow_vulkan("opening the Vulkan device");
  }
}

}  // namespace octo::vm::vulkan
