// Micro-benchmark (eighth session): the cost of a grid-wide barrier inside one dispatch (atomics and
// polling) against a pipeline barrier between dispatches, on whatever Vulkan device comes first.
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
  vk::ApplicationInfo ai("gridbar", 1, nullptr, 0, VK_API_VERSION_1_2);
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
  dci.pNext = &f12;
  vk::raii::Device dev(pd, dci);
  vk::raii::Queue q(dev, qf, 0);
  const uint64_t bytes = 64ull << 20;
  vk::raii::Buffer buf(dev, vk::BufferCreateInfo({}, bytes, vk::BufferUsageFlagBits::eStorageBuffer |
                                                              vk::BufferUsageFlagBits::eShaderDeviceAddress |
                                                              vk::BufferUsageFlagBits::eTransferDst));
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
  vk::raii::Buffer rb(dev, vk::BufferCreateInfo({}, 256, vk::BufferUsageFlagBits::eTransferDst));
  auto rreq = rb.getMemoryRequirements();
  uint32_t hmt = 0;
  for (uint32_t i = 0; i < mp.memoryTypeCount; ++i)
    if ((rreq.memoryTypeBits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & vk::MemoryPropertyFlagBits::eHostVisible) &&
        (mp.memoryTypes[i].propertyFlags & vk::MemoryPropertyFlagBits::eHostCoherent)) { hmt = i; break; }
  vk::raii::DeviceMemory rmem(dev, vk::MemoryAllocateInfo(rreq.size, hmt));
  rb.bindMemory(*rmem, 0);
  auto* rmap = static_cast<uint32_t*>(rmem.mapMemory(0, 256));
  vk::PushConstantRange pcr(vk::ShaderStageFlagBits::eCompute, 0, 24);
  vk::raii::PipelineLayout layout(dev, vk::PipelineLayoutCreateInfo({}, {}, pcr));
  auto make = [&](const char* name) {
    auto words = read_spv((std::string(dir) + "/" + name).c_str());
    vk::raii::ShaderModule sm(dev, vk::ShaderModuleCreateInfo({}, words.size() * 4, words.data()));
    vk::ComputePipelineCreateInfo ci({}, vk::PipelineShaderStageCreateInfo({}, vk::ShaderStageFlagBits::eCompute, *sm, "main"), *layout);
    return vk::raii::Pipeline(dev, nullptr, ci);
  };
  auto gridbar = make("gridbar.spv"), empty = make("empty.spv");
  vk::raii::CommandPool pool(dev, vk::CommandPoolCreateInfo(vk::CommandPoolCreateFlagBits::eResetCommandBuffer, qf));
  vk::raii::CommandBuffers cbs(dev, vk::CommandBufferAllocateInfo(*pool, vk::CommandBufferLevel::ePrimary, 1));
  auto& cb = cbs[0];
  vk::raii::QueryPool qp(dev, vk::QueryPoolCreateInfo({}, vk::QueryType::eTimestamp, 2));
  vk::raii::Fence fence(dev, vk::FenceCreateInfo());
  const double ns = props.limits.timestampPeriod;
  struct pcs { uint64_t counter, data; uint32_t rounds, mode; };
  auto run = [&](auto&& record) {
    cb.reset();
    cb.begin(vk::CommandBufferBeginInfo(vk::CommandBufferUsageFlagBits::eOneTimeSubmit));
    cb.resetQueryPool(*qp, 0, 2);
    cb.fillBuffer(*buf, 0, 256, 0);
    vk::MemoryBarrier mb(vk::AccessFlagBits::eTransferWrite | vk::AccessFlagBits::eShaderWrite,
                         vk::AccessFlagBits::eShaderRead | vk::AccessFlagBits::eShaderWrite);
    cb.pipelineBarrier(vk::PipelineStageFlagBits::eTransfer | vk::PipelineStageFlagBits::eComputeShader,
                       vk::PipelineStageFlagBits::eComputeShader, {}, mb, {}, {});
    cb.writeTimestamp(vk::PipelineStageFlagBits::eTopOfPipe, *qp, 0);
    record();
    cb.writeTimestamp(vk::PipelineStageFlagBits::eBottomOfPipe, *qp, 1);
    vk::MemoryBarrier mb2(vk::AccessFlagBits::eShaderWrite, vk::AccessFlagBits::eTransferRead);
    cb.pipelineBarrier(vk::PipelineStageFlagBits::eComputeShader, vk::PipelineStageFlagBits::eTransfer, {}, mb2, {}, {});
    cb.copyBuffer(*buf, *rb, vk::BufferCopy(0, 0, 16));
    vk::MemoryBarrier mb3(vk::AccessFlagBits::eTransferWrite, vk::AccessFlagBits::eHostRead);
    cb.pipelineBarrier(vk::PipelineStageFlagBits::eTransfer, vk::PipelineStageFlagBits::eHost, {}, mb3, {}, {});
    cb.end();
    dev.resetFences(*fence);
    q.submit(vk::SubmitInfo({}, {}, *cb), *fence);
    (void)dev.waitForFences(*fence, true, 10'000'000'000ull);
    auto r = qp.getResults<uint64_t>(0, 2, 16, 8, vk::QueryResultFlagBits::e64 | vk::QueryResultFlagBits::eWait);
    return double(r.second[1] - r.second[0]) * ns / 1000.0;  // us
  };
  const uint32_t R = argc > 2 ? uint32_t(std::atoi(argv[2])) : 1000;
  std::vector<uint32_t> gridbar_sizes{66u, 132u, 264u, 528u, 1056u};
  if (argc > 3) gridbar_sizes = {uint32_t(std::atoi(argv[3]))};
  for (uint32_t n : gridbar_sizes) {
    pcs p{base, base + 4096, R, 0};
    for (int rep = 0; rep < 3; ++rep) {
      p.mode = 0;
      double t0 = run([&] {
        cb.bindPipeline(vk::PipelineBindPoint::eCompute, *gridbar);
        cb.pushConstants<pcs>(*layout, vk::ShaderStageFlagBits::eCompute, 0, p);
        cb.dispatch(n, 1, 1);
      });
      p.mode = 1;
      double t1 = run([&] {
        cb.bindPipeline(vk::PipelineBindPoint::eCompute, *gridbar);
        cb.pushConstants<pcs>(*layout, vk::ShaderStageFlagBits::eCompute, 0, p);
        cb.dispatch(n, 1, 1);
      });
      const uint32_t counter_after = rmap[0], gave_up_after = rmap[1];
      // R dependent dispatches separated by pipeline barriers, and R without barriers.
      double t2 = run([&] {
        cb.bindPipeline(vk::PipelineBindPoint::eCompute, *empty);
        cb.pushConstants<pcs>(*layout, vk::ShaderStageFlagBits::eCompute, 0, p);
        vk::MemoryBarrier mb(vk::AccessFlagBits::eShaderWrite, vk::AccessFlagBits::eShaderRead | vk::AccessFlagBits::eShaderWrite);
        for (uint32_t r = 0; r < R; ++r) {
          cb.dispatch(n, 1, 1);
          cb.pipelineBarrier(vk::PipelineStageFlagBits::eComputeShader, vk::PipelineStageFlagBits::eComputeShader, {}, mb, {}, {});
        }
      });
      double t3 = run([&] {
        cb.bindPipeline(vk::PipelineBindPoint::eCompute, *empty);
        cb.pushConstants<pcs>(*layout, vk::ShaderStageFlagBits::eCompute, 0, p);
        for (uint32_t r = 0; r < R; ++r) cb.dispatch(n, 1, 1);
      });
      const uint32_t arrived = counter_after, gave_up = gave_up_after;
      std::printf("{\"workgroups\":%u,\"arrivals\":%u,\"waits_given_up\":%u,\"rounds\":%u,\"one_dispatch_no_sync_us\":%.3f,\"grid_barrier_us\":%.3f,"
                  "\"dispatch_plus_pipeline_barrier_us\":%.3f,\"dispatch_no_barrier_us\":%.3f}\n",
                  n, arrived, gave_up, R, t0 / R, (t1 - t0) / R, t2 / R, t3 / R);
    }
  }
  return 0;
}
