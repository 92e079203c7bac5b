// Micro-benchmark (ninth session): the NV cooperative-matrix multiply rate on whatever Vulkan device
// comes first, with the factors in registers and with them loaded from shared memory (mma.comp).
#include <vulkan/vulkan_raii.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

static std::vector<uint32_t> read_spv(const char* p) {
  std::ifstream f(p, std::ios::binary);
  std::vector<char> b((std::istreambuf_iterator<char>(f)), {});
  std::vector<uint32_t> w(b.size() / 4);
  std::memcpy(w.data(), b.data(), b.size());
  return w;
}

int main(int argc, char** argv) {
  const char* dir = argc > 1 ? argv[1] : ".";
  vk::raii::Context ctx;
  vk::ApplicationInfo ai("mma", 1, nullptr, 0, VK_API_VERSION_1_2);
  vk::raii::Instance inst(ctx, vk::InstanceCreateInfo({}, &ai));
  vk::raii::PhysicalDevices pds(inst);
  std::size_t pick = 0;
  for (std::size_t i = 0; i < pds.size(); ++i)
    if (pds[i].getProperties().deviceType == vk::PhysicalDeviceType::eDiscreteGpu) { pick = i; break; }
  vk::raii::PhysicalDevice pd = std::move(pds[pick]);
  auto props = pd.getProperties();
  std::printf("{\"device\":\"%s\"}\n", props.deviceName.data());
  uint32_t qf = 0;
  auto qfs = pd.getQueueFamilyProperties();
  for (uint32_t i = 0; i < qfs.size(); ++i)
    if (qfs[i].queueFlags & vk::QueueFlagBits::eCompute) { qf = i; break; }
  float prio = 1.0f;
  vk::DeviceQueueCreateInfo qci({}, qf, 1, &prio);
  vk::PhysicalDeviceVulkan12Features f12;
  f12.bufferDeviceAddress = true;
  vk::DeviceCreateInfo dci({}, qci);
  f12.shaderFloat16 = true;
  vk::PhysicalDeviceVulkan11Features f11;
  f11.storageBuffer16BitAccess = true;
  vk::PhysicalDeviceCooperativeMatrixFeaturesNV fcm;
  fcm.cooperativeMatrix = true;
  f12.pNext = &f11;
  f11.pNext = &fcm;
  const char* exts[] = {"VK_NV_cooperative_matrix"};
  dci.enabledExtensionCount = 1;
  dci.ppEnabledExtensionNames = exts;
  dci.pNext = &f12;
  vk::raii::Device dev(pd, dci);
  vk::raii::Queue q(dev, qf, 0);
  const uint64_t bytes = 1 << 20;
  vk::raii::Buffer buf(dev, vk::BufferCreateInfo({}, bytes, vk::BufferUsageFlagBits::eStorageBuffer |
                                                              vk::BufferUsageFlagBits::eShaderDeviceAddress));
  auto req = buf.getMemoryRequirements();
  auto mp = pd.getMemoryProperties();
  uint32_t mt = 0;
  for (uint32_t i = 0; i < mp.memoryTypeCount; ++i)
    if ((req.memoryTypeBits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & vk::MemoryPropertyFlagBits::eDeviceLocal)) { mt = i; break; }
  vk::MemoryAllocateFlagsInfo mfi(vk::MemoryAllocateFlagBits::eDeviceAddress);
  vk::MemoryAllocateInfo mai(req.size, mt);
  mai.pNext = &mfi;
  vk::raii::DeviceMemory mem(dev, mai);
  buf.bindMemory(*mem, 0);
  const uint64_t base = dev.getBufferAddress(vk::BufferDeviceAddressInfo(*buf));
  vk::PushConstantRange pcr(vk::ShaderStageFlagBits::eCompute, 0, 16);
  vk::raii::PipelineLayout layout(dev, vk::PipelineLayoutCreateInfo({}, {}, pcr));
  auto words = read_spv((std::string(dir) + "/mma.spv").c_str());
  vk::raii::ShaderModule sm(dev, vk::ShaderModuleCreateInfo({}, words.size() * 4, words.data()));
  vk::raii::CommandPool pool(dev, vk::CommandPoolCreateInfo(vk::CommandPoolCreateFlagBits::eResetCommandBuffer, qf));
  vk::raii::CommandBuffers cbs(dev, vk::CommandBufferAllocateInfo(*pool, vk::CommandBufferLevel::ePrimary, 1));
  auto& cb = cbs[0];
  vk::raii::QueryPool qp(dev, vk::QueryPoolCreateInfo({}, vk::QueryType::eTimestamp, 2));
  vk::raii::Fence fence(dev, vk::FenceCreateInfo());
  const double ns = props.limits.timestampPeriod;
  struct pcs { uint64_t out; uint32_t iters, pad; };
  const uint32_t iters = 2048;
  struct cfg { uint32_t mode, fm, fn, sk; };
  for (int rep = 0; rep < 2; ++rep)
  for (cfg c : {cfg{0, 4, 4, 5}, cfg{0, 2, 4, 5}, cfg{0, 2, 2, 5}, cfg{0, 4, 8, 5}, cfg{1, 4, 4, 5}, cfg{1, 4, 4, 9},
                cfg{1, 4, 4, 4}, cfg{1, 2, 4, 5}, cfg{1, 2, 2, 5}, cfg{1, 4, 8, 5}}) {
    uint32_t spec[4] = {c.mode, c.fm, c.fn, c.sk};
    vk::SpecializationMapEntry e[4] = {{0, 0, 4}, {1, 4, 4}, {2, 8, 4}, {3, 12, 4}};
    vk::SpecializationInfo si(4, e, 16, spec);
    vk::ComputePipelineCreateInfo ci({}, vk::PipelineShaderStageCreateInfo({}, vk::ShaderStageFlagBits::eCompute, *sm, "main", &si), *layout);
    vk::raii::Pipeline pipe(dev, nullptr, ci);
    for (uint32_t wgs : {132u, 264u, 528u}) {
      cb.reset();
      cb.begin(vk::CommandBufferBeginInfo(vk::CommandBufferUsageFlagBits::eOneTimeSubmit));
      cb.resetQueryPool(*qp, 0, 2);
      cb.bindPipeline(vk::PipelineBindPoint::eCompute, *pipe);
      pcs p{base, iters, 0};
      cb.pushConstants<pcs>(*layout, vk::ShaderStageFlagBits::eCompute, 0, p);
      cb.dispatch(wgs, 1, 1);  // warm-up
      cb.writeTimestamp(vk::PipelineStageFlagBits::eTopOfPipe, *qp, 0);
      cb.dispatch(wgs, 1, 1);
      cb.writeTimestamp(vk::PipelineStageFlagBits::eBottomOfPipe, *qp, 1);
      cb.end();
      dev.resetFences(*fence);
      q.submit(vk::SubmitInfo({}, {}, *cb), *fence);
      (void)dev.waitForFences(*fence, true, 10'000'000'000ull);
      auto r = qp.getResults<uint64_t>(0, 2, 16, 8, vk::QueryResultFlagBits::e64 | vk::QueryResultFlagBits::eWait);
      const double us = double(r.second[1] - r.second[0]) * ns / 1000.0;
      const double flop = double(wgs) * 8 * iters * c.fm * c.fn * 16.0 * 8 * 16 * 2;
      std::printf("{\"mode\":%u,\"fm\":%u,\"fn\":%u,\"sk\":%u,\"workgroups\":%u,\"us\":%.1f,\"tflops\":%.1f}\n", c.mode, c.fm, c.fn,
                  c.sk, wgs, us, flop / us / 1e6);
    }
  }
  return 0;
}
