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
  const uint64_t bytes = 640ull << 20;
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
  vk::PushConstantRange pcr(vk::ShaderStageFlagBits::eCompute, 0, 40);
  vk::raii::PipelineLayout layout(dev, vk::PipelineLayoutCreateInfo({}, {}, pcr));
  auto make = [&](const char* name, uint32_t persistent, uint32_t prefetch) {
    auto words = read_spv((std::string(dir) + "/" + name).c_str());
    vk::raii::ShaderModule sm(dev, vk::ShaderModuleCreateInfo({}, words.size() * 4, words.data()));
    uint32_t spec[2] = {persistent, prefetch};
    vk::SpecializationMapEntry e[2] = {{0, 0, 4}, {1, 4, 4}};
    vk::SpecializationInfo si(2, e, 8, spec);
    vk::ComputePipelineCreateInfo ci({}, vk::PipelineShaderStageCreateInfo({}, vk::ShaderStageFlagBits::eCompute, *sm, "main", &si), *layout);
    return vk::raii::Pipeline(dev, nullptr, ci);
  };
  auto per_stage = make("stage.spv", 0, 0), persistent = make("stage.spv", 1, 0), persistent_pf = make("stage.spv", 1, 1);
  vk::raii::CommandPool pool(dev, vk::CommandPoolCreateInfo(vk::CommandPoolCreateFlagBits::eResetCommandBuffer, qf));
  vk::raii::CommandBuffers cbs(dev, vk::CommandBufferAllocateInfo(*pool, vk::CommandBufferLevel::ePrimary, 1));
  auto& cb = cbs[0];
  vk::raii::QueryPool qp(dev, vk::QueryPoolCreateInfo({}, vk::QueryType::eTimestamp, 2));
  vk::raii::Fence fence(dev, vk::FenceCreateInfo());
  const double ns = props.limits.timestampPeriod;
  // The stage table (rows, K, weight offset in 16-byte units): a Qwen2.5-0.5B-shaped step, int8 weights.
  std::vector<uint32_t> table;
  uint64_t off = 0, wbytes = 0;
  auto add = [&](uint32_t rows, uint32_t K) {
    table.insert(table.end(), {rows, K, uint32_t(off)});
    off += uint64_t(rows) * K / 16;
    wbytes += uint64_t(rows) * K;
  };
  const uint32_t layers = argc > 2 ? uint32_t(std::atoi(argv[2])) : 24;
  for (uint32_t l = 0; l < layers; ++l) {
    add(1152, 896);  // q|k|v
    add(64, 896);    // a small stage where attention's sync point is
    add(896, 896);   // o
    add(9728, 896);  // gate|up
    add(896, 4864);  // down
  }
  add(151936, 896);  // LM head
  const uint32_t stages = uint32_t(table.size() / 3);
  // Layout in `buf`: [0, 4096) counters, [4096, 4096 + 64 KiB) table, [1 MiB, 2 MiB) activations, weights from 4 MiB.
  const uint64_t table_at = 4096, act_at = 1 << 20, w_at = 4 << 20;
  if (w_at + off * 16 > bytes) { std::printf("weights do not fit\n"); return 1; }
  struct pcs { uint64_t w, act, counter, table; uint32_t first, count; };
  pcs p{base + w_at, base + act_at, base, base + table_at, 0, stages};
  auto run = [&](auto&& record) {
    cb.reset();
    cb.begin(vk::CommandBufferBeginInfo(vk::CommandBufferUsageFlagBits::eOneTimeSubmit));
    cb.resetQueryPool(*qp, 0, 2);
    cb.fillBuffer(*buf, 0, 256, 0);
    cb.updateBuffer<uint32_t>(*buf, table_at, vk::ArrayProxy<const uint32_t>(uint32_t(table.size()), table.data()));
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
  auto report = [&](const char* how, uint32_t wgs, double us) {
    std::printf("{\"how\":\"%s\",\"workgroups\":%u,\"stages\":%u,\"weight_mb\":%.1f,\"step_us\":%.1f,\"tok_s\":%.1f,"
                "\"gb_s\":%.1f,\"waits_given_up\":%u}\n", how, wgs, stages, wbytes / 1e6, us, 1e6 / us, wbytes / us / 1e3, rmap[1]);
  };
  for (int rep = 0; rep < 3; ++rep) {
    for (bool with_barriers : {true, false}) {
      double t = run([&] {
        cb.bindPipeline(vk::PipelineBindPoint::eCompute, *per_stage);
        vk::MemoryBarrier mb(vk::AccessFlagBits::eShaderWrite, vk::AccessFlagBits::eShaderRead | vk::AccessFlagBits::eShaderWrite);
        for (uint32_t s = 0; s < stages; ++s) {
          pcs ps = p;
          ps.first = s;
          ps.count = 1;
          cb.pushConstants<pcs>(*layout, vk::ShaderStageFlagBits::eCompute, 0, ps);
          const uint32_t rows = table[3 * s];
          cb.dispatch(std::min<uint32_t>((rows + 7) / 8, 65535), 1, 1);
          if (with_barriers)
            cb.pipelineBarrier(vk::PipelineStageFlagBits::eComputeShader, vk::PipelineStageFlagBits::eComputeShader, {}, mb, {}, {});
        }
      });
      report(with_barriers ? "dispatch per stage, pipeline barriers" : "dispatch per stage, no barriers (not a correct program)", 0, t);
    }
    for (uint32_t wgs : {132u, 264u, 528u}) {
      for (int pf = 0; pf < 2; ++pf) {
        double t = run([&] {
          cb.bindPipeline(vk::PipelineBindPoint::eCompute, pf ? *persistent_pf : *persistent);
          cb.pushConstants<pcs>(*layout, vk::ShaderStageFlagBits::eCompute, 0, p);
          cb.dispatch(wgs, 1, 1);
        });
        report(pf ? "persistent, grid barrier, next stage touched before it" : "persistent, grid barrier", wgs, t);
      }
    }
  }
  return 0;
}
