// The greedy token loop: a decode program resubmitted step after step with no host round trip between
// tokens. Each step is one submit of two command buffers, the program's own (recorded once, used
// simultaneously) and a tail (shaders/vm_token_loop.comp) that feeds the step's argmax into the next
// step's input token, advances the position on the device and keeps the token in a ring indexed by
// position. The host keeps several steps in flight on the compute timeline and reads their tokens behind
// (token_step_result), so the GPU never idles waiting for the host to read a token and write it back.
#include "vm_impl.hpp"

namespace octo::vm {

using namespace octo::vm::vulkan;

namespace {

/// One i32 element of the program's buffer `name`, or octo::error saying what the loop needs.
const placed& loop_buffer(instance_state& is, std::string_view name, program_id id) {
  auto it = is.by_name.find(name);
  const ir::buffer* b = it == is.by_name.end() ? nullptr : &is.program.buffers[static_cast<std::size_t>(it->second)];
  if (!b || b->dtype != ir::dtype::i32 || b->numel() != 1)
    throw octo::error("octo: vulkan_vm::enable_token_loop: program " + std::to_string(id) +
                      " needs a one-element I32 buffer '" + std::string(name) +
                      "' (a decode step: input tokens and pos, output next_token)");
  return is.buffers[static_cast<std::size_t>(it->second)];
}

}  // namespace

void vulkan_vm::impl::enable_token_loop(program_id id, std::uint32_t ring_slots) {
  need_timeline("enable_token_loop");
  auto& ps = program(id, "enable_token_loop");
  if (ps.instances.size() != 1) throw octo::error("octo: vulkan_vm::enable_token_loop: a chain of instances has no token loop");
  if (ring_slots == 0) throw octo::error("octo: vulkan_vm::enable_token_loop: the ring needs at least one slot");
  if (ps.loop) {
    if (ps.loop->ring_slots == ring_slots) return;
    if (!ps.loop->unread.empty())
      throw octo::error("octo: vulkan_vm::enable_token_loop: program " + std::to_string(id) + " has " +
                        std::to_string(ps.loop->unread.size()) + " unread token-loop steps (read them first)");
    finish_pending();  // the ring is about to be freed
    memory->free(ps.loop->ring);
    ps.loop.reset();
  }
  auto& is = ps.instances[0];
  const placed& next = loop_buffer(is, "next_token", id);
  const placed& tokens = loop_buffer(is, "tokens", id);
  const placed& pos = loop_buffer(is, "pos", id);
  auto loop = std::make_unique<token_loop_state>();
  loop->ring_slots = ring_slots;
  loop->ring = memory->allocate("token loop ring", std::uint64_t{ring_slots} * 4, memory_class::readback);
  try {
    vk::raii::CommandBuffers cbs(dev->logical(), vk::CommandBufferAllocateInfo(*pool, vk::CommandBufferLevel::ePrimary, 1));
    loop->tail = std::move(cbs[0]);
    auto& cb = loop->tail;
    kernel_launch l = plan_vm_token_loop(next.address, tokens.address, pos.address, globals.address,
                                         loop->ring.address, ring_slots);
    auto& pc = l.push_constants.bytes;
    pc.resize((pc.size() + 3) / 4 * 4, std::byte{0});
    cb.begin(vk::CommandBufferBeginInfo(vk::CommandBufferUsageFlagBits::eSimultaneousUse));
    // The step's kernels (the argmax's write; every read of tokens, pos and globals) -> the tail. The
    // program's own command buffer ends with a barrier toward host and transfer only.
    const vk::MemoryBarrier before(vk::AccessFlagBits::eShaderWrite | vk::AccessFlagBits::eShaderRead,
                                   vk::AccessFlagBits::eShaderRead | vk::AccessFlagBits::eShaderWrite);
    cb.pipelineBarrier(vk::PipelineStageFlagBits::eComputeShader, vk::PipelineStageFlagBits::eComputeShader, {}, before,
                       {}, {});
    cb.bindPipeline(vk::PipelineBindPoint::eCompute, pipes->get(l.shader, l.spec_constants));
    cb.pushConstants<std::byte>(*pipes->layout(), vk::ShaderStageFlagBits::eCompute, 0, pc);
    cb.dispatch(1, 1, 1);
    // The tail's writes -> the host's read of the ring, and the next step's kernels (whose command buffer
    // also begins with a barrier from compute writes).
    const vk::MemoryBarrier after(vk::AccessFlagBits::eShaderWrite,
                                  vk::AccessFlagBits::eHostRead | vk::AccessFlagBits::eShaderRead |
                                      vk::AccessFlagBits::eShaderWrite | vk::AccessFlagBits::eTransferRead);
    cb.pipelineBarrier(vk::PipelineStageFlagBits::eComputeShader,
                       vk::PipelineStageFlagBits::eHost | vk::PipelineStageFlagBits::eComputeShader |
                           vk::PipelineStageFlagBits::eTransfer,
                       {}, after, {}, {});
    cb.end();
  } catch (const octo::error&) {
    memory->free(loop->ring);
    throw;
  } catch (...) {
    memory->free(loop->ring);
    rethrow_vulkan("recording the token loop's command buffer");
  }
  ++st.recordings;
  ps.loop = std::move(loop);
}

std::uint64_t vulkan_vm::impl::submit_token_step(program_id id) {
  need_timeline("submit_token_step");
  auto& ps = program(id, "submit_token_step");
  if (!ps.loop) throw octo::error("octo: vulkan_vm::submit_token_step: program " + std::to_string(id) + " has no token loop (enable_token_loop)");
  auto& loop = *ps.loop;
  // A step writes its ring slot whether or not the host read the slot's last token: never more unread
  // steps than slots.
  if (loop.unread.size() >= loop.ring_slots)
    throw octo::error("octo: vulkan_vm::submit_token_step: " + std::to_string(loop.unread.size()) +
                      " steps unread, as many as the ring's slots (read one with token_step_result first)");
  if (pending) {  // a fence-path execute that timed out
    wait(fence, "the previous execute");
    pending = false;
  }
  // Profiling: the program's command buffer resets its query pool before its first barrier, so two
  // steps of it in flight would race on the timestamps; profiled steps run one at a time.
  if (profiling && compute_value > compute_seen) wait_compute(compute_value);
  refresh_weight_copies(ps);
  const std::uint64_t signal = compute_value + 1;
  try {
    const vk::CommandBuffer cbs[2] = {*ps.cb, *loop.tail};
    submit_on_timelines(dev->compute_queue(), cbs, *transfer_timeline, 0, *compute_timeline, signal);
  } catch (const vk::DeviceLostError&) {
    lost = true;
    throw octo::error("octo: the Vulkan device was lost submitting a token-loop step of program " + std::to_string(id));
  } catch (...) {
    rethrow_vulkan("submitting a token-loop step");
  }
  compute_value = signal;
  ++st.submits;
  ++ps.submits;
  ps.profiled_run = profiling;
  last_run = id;
  loop.unread.push_back({signal, position % loop.ring_slots});
  ++position;
  return signal;
}

std::int32_t vulkan_vm::impl::token_step_result(program_id id, std::uint64_t value) {
  auto& ps = program(id, "token_step_result");
  if (!ps.loop || ps.loop->unread.empty() || ps.loop->unread.front().value != value)
    throw octo::error("octo: vulkan_vm::token_step_result(" + std::to_string(value) +
                      "): not the oldest unread token-loop step of program " + std::to_string(id));
  wait_compute(value);  // bounded by the VM's timeout
  auto& loop = *ps.loop;
  std::int32_t t = 0;
  std::memcpy(&t, loop.ring.mapped + std::uint64_t{loop.unread.front().slot} * 4, 4);
  loop.unread.pop_front();
  return t;
}

void vulkan_vm::enable_token_loop(program_id id, std::uint32_t ring_slots) {
  if (!impl_) throw octo::error("octo: vulkan_vm::enable_token_loop before boot");
  impl_->enable_token_loop(id, ring_slots);
}

std::uint64_t vulkan_vm::submit_token_step(program_id id) {
  if (!impl_) throw octo::error("octo: vulkan_vm::submit_token_step before boot");
  return impl_->submit_token_step(id);
}

std::int32_t vulkan_vm::token_step_result(program_id id, std::uint64_t value) {
  if (!impl_) throw octo::error("octo: vulkan_vm::token_step_result before boot");
  return impl_->token_step_result(id, value);
}

}  // namespace octo::vm
