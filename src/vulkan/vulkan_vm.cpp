// The Vulkan VM (include/octo/vm/vulkan_vm.hpp): seeds/000's bindings over the buddy-allocated device
// memory, one command buffer recorded per load, one submit per execute. This file: boot and release,
// waiting, and the public face; vm_impl.hpp lists the files of the other concerns.
#include "vm_impl.hpp"

namespace octo::vm {

using namespace octo::vm::vulkan;

void vulkan_vm::impl::release() {
  if (dev) {
    stop_awake();
    try {
      dev->logical().waitIdle();
    } catch (...) {
    }
  }
  free_awake_objects();  // after the waits above: its last submission is done
  programs.clear();
  upload_slots.clear();
  transfer_cb = nullptr;
  pool = nullptr;
  upload_pool = nullptr;
  fence = nullptr;
  transfer_fence = nullptr;
  compute_timeline = nullptr;
  transfer_timeline = nullptr;
  compute_value = transfer_value = compute_seen = 0;
  position = 0;
  pipes.reset();
  shared.clear();
  regions.clear();
  pinned_blocks.clear();
  last_run.reset();
  memory.reset();
  dev.reset();
  pending = false;
}

void vulkan_vm::impl::check_usable(const char* what) const {
  if (!dev) throw octo::error(std::string("octo: vulkan_vm::") + what + " before boot");
  if (lost) throw octo::error(std::string("octo: vulkan_vm::") + what + ": the Vulkan device was lost earlier");
}

void vulkan_vm::impl::need_timeline(const char* what) const {
  check_usable(what);
  if (!timeline())
    throw octo::error(std::string("octo: vulkan_vm::") + what + " needs timeline semaphores, which " +
                      dev->entry().name + " does not have");
}

std::uint64_t vulkan_vm::impl::register_address(std::uint32_t inst, std::uint32_t reg) const {
  return registers.address + (std::uint64_t{inst} * register_count + reg) * register_bytes();
}

void vulkan_vm::impl::wait(const vk::raii::Fence& f, const char* what) {
  vk::Result r;
  try {
    r = dev->logical().waitForFences({*f}, VK_TRUE, std::uint64_t{options.timeout_ms} * 1000000ull);
  } catch (const vk::DeviceLostError&) {
    lost = true;
    throw octo::error(std::string("octo: the Vulkan device was lost during ") + what);
  } catch (...) {
    rethrow_vulkan(what);
  }
  if (r == vk::Result::eTimeout)
    throw octo::error(std::string("octo: ") + what + " did not finish within the " + std::to_string(options.timeout_ms) +
                      " ms timeout");
}

void vulkan_vm::impl::wait_timeline(const vk::raii::Semaphore& sem, std::uint64_t value, const std::string& what) {
  vk::Result r;
  try {
    vk::Semaphore h = *sem;
    r = dev->logical().waitSemaphores(vk::SemaphoreWaitInfo({}, h, value), std::uint64_t{options.timeout_ms} * 1000000ull);
  } catch (const vk::DeviceLostError&) {
    lost = true;
    throw octo::error("octo: the Vulkan device was lost waiting for " + what);
  } catch (...) {
    rethrow_vulkan(what.c_str());
  }
  if (r == vk::Result::eTimeout)
    throw octo::error("octo: " + what + " did not finish within the " + std::to_string(options.timeout_ms) + " ms timeout");
}

std::uint64_t vulkan_vm::impl::counter(const vk::raii::Semaphore& sem) const {
  if (!*sem) return 0;
  try {
    return sem.getCounterValue();
  } catch (...) {
    rethrow_vulkan("reading a timeline semaphore");
  }
}

void vulkan_vm::impl::wait_compute(std::uint64_t v) {
  need_timeline("wait_compute");
  if (v > compute_value)
    throw octo::error("octo: wait_compute(" + std::to_string(v) + "): only " + std::to_string(compute_value) +
                      " program runs were submitted");
  if (v <= compute_seen) return;
  wait_timeline(compute_timeline, v, "program run " + std::to_string(v) + " (compute timeline)");
  compute_seen = v;
}

void vulkan_vm::impl::wait_upload(std::uint64_t v) {
  need_timeline("wait_upload");
  if (v > transfer_value)
    throw octo::error("octo: wait_upload(" + std::to_string(v) + "): only " + std::to_string(transfer_value) +
                      " uploads were submitted");
  wait_timeline(transfer_timeline, v, "upload " + std::to_string(v) + " (transfer timeline)");
}

void vulkan_vm::impl::finish_pending() {
  if (pending) {
    wait(fence, "the previous execute");
    pending = false;
  }
  if (dev && timeline() && compute_value > compute_seen) {
    wait_timeline(compute_timeline, compute_value, "the submitted programs (compute timeline)");
    compute_seen = compute_value;
  }
}

void vulkan_vm::impl::boot(const vulkan_options& o) {
  release();
  options = o;
  if (options.instances == 0) throw octo::error("octo: vulkan_options.instances must be at least 1");
  if (options.register_floats < 8) throw octo::error("octo: vulkan_options.register_floats must be at least 8");
  st = {};
  dev = std::make_unique<vulkan::device>(device_options{options.device, options.validation});
  profiling = options.profile || env_profile();
  options.precision = env_precision(options.precision);
  if (const char* v = std::getenv("OCTO_LAYER_STATS"); v && *v) options.observe_layers = std::string_view(v) != "0";
  if (profiling) {
    auto families = dev->physical().getQueueFamilyProperties();
    std::uint32_t bits = families[dev->compute_family()].timestampValidBits;
    if (bits == 0)
      throw octo::error("octo: profiling needs GPU timestamps, which the compute queue of " + dev->entry().name +
                        " does not have");
    timestamp_mask = bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
    ns_per_tick = static_cast<double>(dev->properties().limits.timestampPeriod);
  }
  memory = std::make_unique<device_memory>(*dev, options.memory_budget, options.block_size);
  pipes = std::make_unique<vulkan::pipelines>(*dev, options.pipeline_cache_dir);
  try {
    const auto& d = dev->logical();
    pool = vk::raii::CommandPool(
        d, vk::CommandPoolCreateInfo(vk::CommandPoolCreateFlagBits::eResetCommandBuffer, dev->compute_family()));
    upload_pool = vk::raii::CommandPool(
        d, vk::CommandPoolCreateInfo(vk::CommandPoolCreateFlagBits::eResetCommandBuffer,
                                     dev->transfer_family().value_or(dev->compute_family())));
    vk::raii::CommandBuffers cbs(d, vk::CommandBufferAllocateInfo(*pool, vk::CommandBufferLevel::ePrimary, 1));
    transfer_cb = std::move(cbs[0]);
    fence = vk::raii::Fence(d, vk::FenceCreateInfo());
    transfer_fence = vk::raii::Fence(d, vk::FenceCreateInfo());
    if (timeline()) {
      vk::StructureChain<vk::SemaphoreCreateInfo, vk::SemaphoreTypeCreateInfo> sci(
          vk::SemaphoreCreateInfo(), vk::SemaphoreTypeCreateInfo(vk::SemaphoreType::eTimeline, 0));
      compute_timeline = vk::raii::Semaphore(d, sci.get<vk::SemaphoreCreateInfo>());
      transfer_timeline = vk::raii::Semaphore(d, sci.get<vk::SemaphoreCreateInfo>());
    }
  } catch (...) {
    rethrow_vulkan("creating command buffers");
  }
  // The five bindings of seeds/000. Registers live in device memory; the small records the host
  // reads or writes every pass (metrics, globals record, control) are host-visible.
  std::uint64_t n = options.instances;
  registers = memory->allocate("registers", n * register_count * register_bytes(), memory_class::device_local);
  metrics = memory->allocate("metrics", n * metrics_floats * 4, memory_class::host_visible);
  control = memory->allocate("control", n * control_floats * 4, memory_class::host_visible);
  globals = memory->allocate("globals", sizeof(globals_record), memory_class::host_visible);
  layer_control = memory->allocate("layer skip words", layer_control_words * 4, memory_class::host_visible);
  std::memset(layer_control.mapped, 0, layer_control_words * 4);
  std::memset(metrics.mapped, 0, n * metrics_floats * 4);
  reset_control();
  globals_record g;
  std::memcpy(globals.mapped, &g, sizeof g);
  one_shot([&](const vk::raii::CommandBuffer& cb) { cb.fillBuffer(registers.buffer, registers.offset, registers.size, 0); },
           "zeroing the registers");
  probe_coop_layout();
}

// Kernels that read a cooperative matrix's elements by position (attention_coop.comp's REGS) rely on
// NVIDIA's mma fragment layout, which GL_NV_cooperative_matrix does not promise: one subgroup writes the
// layout it has (shaders/vm_coop_layout.comp) and the planners see device_facts::coop_mma_layout (and the
// 16 x 16 factor's pair order, coop_factor_order) only where it matches; otherwise octo_devices --boot
// prints what it found. A few microseconds and one pipeline, on devices with cooperative matrices only.
void vulkan_vm::impl::probe_coop_layout() {
  if (!dev->facts().cooperative_matrix_nv || dev->facts().subgroup_size != 32) return;
  constexpr std::uint64_t floats = 386;
  allocation out;
  std::optional<std::uint32_t> order;
  try {
    out = memory->allocate("cooperative-matrix layout probe", floats * 4, memory_class::host_visible);
    std::memset(out.mapped, 0, floats * 4);
    one_shot(
        [&](const vk::raii::CommandBuffer& cb) {
          record_launch(cb, plan_vm_coop_layout(out.address));
          vk::MemoryBarrier mb(vk::AccessFlagBits::eShaderWrite, vk::AccessFlagBits::eHostRead);
          cb.pipelineBarrier(vk::PipelineStageFlagBits::eComputeShader, vk::PipelineStageFlagBits::eHost, {}, mb, {}, {});
        },
        "probing the cooperative matrices' layout");
    std::vector<float> got(floats);
    std::memcpy(got.data(), out.mapped, floats * 4);
    order = coop_mma_factor_order(got);
    if (!order) dev->set_coop_layout_found(describe_coop_layout(got));
  } catch (const std::exception&) {
    // The probe is optional: a device that cannot run it (or find it memory) keeps the staged kernel
    // forms. A lost device is reported by the VM's next submit (one_shot marked it).
  }
  if (out) memory->free(out);
  dev->set_coop_mma_layout(order.has_value(), order.value_or(0));
}

void vulkan_vm::impl::reset_control() {
  auto* c = reinterpret_cast<float*>(control.mapped);
  for (std::uint32_t i = 0; i < options.instances; ++i) {
    c[i * control_floats + 0] = 1.0f;  // scale_factor
    c[i * control_floats + 1] = 0.0f;  // eviction_priority
    c[i * control_floats + 3] = 1.0f;  // active
  }
  write_precision_mode();
}

// precision_mode (control word 2 of every instance): 0 fast, 1 accurate; vm_dispatch_size reads it.
void vulkan_vm::impl::write_precision_mode() {
  auto* c = reinterpret_cast<float*>(control.mapped);
  for (std::uint32_t i = 0; i < options.instances; ++i)
    c[i * control_floats + 2] = options.precision == matmul_precision::accurate ? 1.0f : 0.0f;
}

void vulkan_vm::impl::set_layer_skipped(std::int32_t layer, bool skipped) {
  const std::string what = "octo: vulkan_vm::set_layer_skipped(" + std::to_string(layer) + "): ";
  if (!options.control_words)
    throw octo::error(what + "the VM records no control words (vulkan_options::control_words)");
  if (layer < 0 || static_cast<std::uint32_t>(layer) >= layer_control_words)
    throw octo::error(what + "not a layer (0.." + std::to_string(layer_control_words - 1) + ")");
  for (const auto& ps : programs)
    if (ps)
      for (const auto& [l, bypassable] : ps->gated_layers)
        if (l == layer && !bypassable && skipped)
          throw octo::error(what + "the layer's first task does not read an activation of its output's size, so "
                                   "nothing would carry the residual stream past it");
  finish_pending();  // a pass in flight reads the words
  reinterpret_cast<std::uint32_t*>(layer_control.mapped)[layer] = skipped ? 1u : 0u;
}

void vulkan_vm::impl::set_precision(matmul_precision p) {
  if (!options.control_words)
    throw octo::error("octo: vulkan_vm::set_precision: the VM records no control words (vulkan_options::control_words)");
  finish_pending();
  options.precision = p;
  write_precision_mode();
}

// ---- the public face -----------------------------------------------------------------------------

std::vector<vulkan_device_info> list_vulkan_devices() {
  std::vector<vulkan_device_info> out;
  for (const auto& e : vulkan::device::enumerate()) {
    vulkan_device_info i;
    i.index = e.index;
    i.name = e.name;
    i.type = e.type;
    i.api_version = std::to_string(VK_API_VERSION_MAJOR(e.api_version)) + "." +
                    std::to_string(VK_API_VERSION_MINOR(e.api_version)) + "." +
                    std::to_string(VK_API_VERSION_PATCH(e.api_version));
    i.device_local_bytes = e.device_local_bytes;
    i.suitable = e.suitable;
    i.why_not = e.why_not;
    out.push_back(std::move(i));
  }
  return out;
}

vulkan_vm::vulkan_vm() : impl_(std::make_unique<impl>()) {}
vulkan_vm::vulkan_vm(const vulkan_options& options) : vulkan_vm() { boot(options); }
vulkan_vm::~vulkan_vm() = default;
vulkan_vm::vulkan_vm(vulkan_vm&&) noexcept = default;
vulkan_vm& vulkan_vm::operator=(vulkan_vm&&) noexcept = default;

void vulkan_vm::boot(const vulkan_options& options) {
  if (!impl_) impl_ = std::make_unique<impl>();
  try {
    impl_->boot(options);
  } catch (...) {
    impl_->release();
    throw;
  }
}
bool vulkan_vm::booted() const { return impl_ && impl_->dev; }

void vulkan_vm::load(const ir::program& p) { load(std::span<const ir::program>(&p, 1)); }
void vulkan_vm::load(std::span<const ir::program> programs) {
  if (!impl_) throw octo::error("octo: vulkan_vm::load before boot");
  impl_->load(programs);
}

program_id vulkan_vm::add_program(const ir::program& p, std::span<const buffer_placement> placements) {
  if (!impl_) throw octo::error("octo: vulkan_vm::add_program before boot");
  return impl_->add_program(p, placements);
}
void vulkan_vm::remove_program(program_id id) {
  if (!impl_) throw octo::error("octo: vulkan_vm::remove_program before boot");
  impl_->remove_program(id);
}
std::size_t vulkan_vm::program_count() const { return impl_ ? impl_->program_count() : 0; }

void vulkan_vm::write_bytes(program_id id, std::string_view buffer, std::span<const std::byte> bytes) {
  if (!impl_) throw octo::error("octo: vulkan_vm::write_bytes before boot");
  const ir::buffer* b = nullptr;
  impl_->write_placed(impl_->find(id, buffer, &b), buffer, bytes);
}
std::vector<std::byte> vulkan_vm::read_bytes(program_id id, std::string_view buffer) {
  if (!impl_) throw octo::error("octo: vulkan_vm::read_bytes before boot");
  const ir::buffer* b = nullptr;
  const auto& pl = impl_->find(id, buffer, &b);
  std::vector<std::byte> out(pl.bytes);
  impl_->read_placed(pl, out);
  return out;
}
std::vector<float> vulkan_vm::read_f32(program_id id, std::string_view buffer) {
  if (!impl_) throw octo::error("octo: vulkan_vm::read_f32 before boot");
  const ir::buffer* b = nullptr;
  impl_->find(id, buffer, &b);
  impl::require_f32(b, buffer, "read_bytes");
  return impl::as_floats(read_bytes(id, buffer));
}
void vulkan_vm::read_into(program_id id, std::string_view buffer, std::span<std::byte> dst, std::uint64_t offset) {
  if (!impl_) throw octo::error("octo: vulkan_vm::read_into before boot");
  const ir::buffer* b = nullptr;
  const auto& pl = impl_->find(id, buffer, &b);
  if (offset > pl.bytes || dst.size() > pl.bytes - offset)
    throw octo::error("octo: read_into: buffer '" + std::string(buffer) + "' holds " + std::to_string(pl.bytes) +
                      " bytes, " + std::to_string(dst.size()) + " asked for from byte " + std::to_string(offset));
  impl_->read_placed(pl, dst, offset);
}
void vulkan_vm::execute(program_id id) {
  if (!impl_) throw octo::error("octo: vulkan_vm::execute before boot");
  impl_->execute(id);
}
vulkan_stats vulkan_vm::stats(program_id id) const {
  if (!impl_ || !impl_->dev) throw octo::error("octo: vulkan_vm::stats before boot");
  const auto& ps = impl_->program(id, "stats");
  auto s = impl_->stats_of(&ps);
  s.recordings = 1;
  s.submits = ps.submits;
  return s;
}
std::vector<task_profile> vulkan_vm::profile(program_id id) const {
  if (!impl_ || !impl_->dev) throw octo::error("octo: vulkan_vm::profile before boot");
  return impl_->profile(id);
}

void vulkan_vm::set_layer_skipped(std::int32_t layer, bool skipped) {
  if (!impl_ || !impl_->dev) throw octo::error("octo: vulkan_vm::set_layer_skipped before boot");
  impl_->set_layer_skipped(layer, skipped);
}

void vulkan_vm::set_precision(matmul_precision p) {
  if (!impl_ || !impl_->dev) throw octo::error("octo: vulkan_vm::set_precision before boot");
  impl_->set_precision(p);
}

std::vector<layer_stats> vulkan_vm::layer_statistics(program_id id, std::uint32_t position) const {
  if (!impl_ || !impl_->dev) throw octo::error("octo: vulkan_vm::layer_statistics before boot");
  return impl_->observed_stats(id, position);
}

void vulkan_vm::create_region(std::string_view name, std::uint64_t bytes) {
  if (!impl_) throw octo::error("octo: vulkan_vm::create_region before boot");
  impl_->create_region(name, bytes);
}
std::uint64_t vulkan_vm::region_bytes(std::string_view name) const {
  if (!impl_ || !impl_->dev) throw octo::error("octo: vulkan_vm::region_bytes before boot");
  return impl_->region(name, "region_bytes").bytes;
}
vulkan_vm::pinned vulkan_vm::allocate_pinned(std::uint64_t bytes) {
  if (!impl_) throw octo::error("octo: vulkan_vm::allocate_pinned before boot");
  return impl_->allocate_pinned(bytes);
}
void vulkan_vm::free_pinned(std::uint32_t id) {
  if (!impl_) throw octo::error("octo: vulkan_vm::free_pinned before boot");
  impl_->free_pinned(id);
}
std::uint64_t vulkan_vm::upload_async(std::uint32_t src, std::uint64_t src_offset, std::string_view region,
                                      std::uint64_t dst_offset, std::uint64_t bytes, std::uint64_t after_compute) {
  if (!impl_) throw octo::error("octo: vulkan_vm::upload_async before boot");
  return impl_->upload_async(src, src_offset, region, dst_offset, bytes, after_compute);
}
std::uint64_t vulkan_vm::submit(program_id id, std::uint64_t after_upload) {
  if (!impl_) throw octo::error("octo: vulkan_vm::submit before boot");
  return impl_->submit(id, after_upload);
}
void vulkan_vm::wait_compute(std::uint64_t value) {
  if (!impl_) throw octo::error("octo: vulkan_vm::wait_compute before boot");
  impl_->wait_compute(value);
}
void vulkan_vm::wait_upload(std::uint64_t value) {
  if (!impl_) throw octo::error("octo: vulkan_vm::wait_upload before boot");
  impl_->wait_upload(value);
}
std::uint64_t vulkan_vm::completed_compute() const {
  if (!impl_ || !impl_->dev) throw octo::error("octo: vulkan_vm::completed_compute before boot");
  return impl_->counter(impl_->compute_timeline);
}
std::uint64_t vulkan_vm::completed_upload() const {
  if (!impl_ || !impl_->dev) throw octo::error("octo: vulkan_vm::completed_upload before boot");
  return impl_->counter(impl_->transfer_timeline);
}

void vulkan_vm::write(std::string_view buffer, std::span<const float> values, std::uint32_t instance) {
  if (!impl_) throw octo::error("octo: vulkan_vm::write before boot");
  impl_->write_f32(buffer, values, instance);
}
void vulkan_vm::write(std::int32_t id, std::span<const float> values, std::uint32_t instance) {
  if (!impl_) throw octo::error("octo: vulkan_vm::write before boot");
  impl_->write_f32(impl_->name_of(id, instance), values, instance);
}
void vulkan_vm::write_bytes(std::string_view buffer, std::span<const std::byte> bytes, std::uint32_t instance) {
  if (!impl_) throw octo::error("octo: vulkan_vm::write_bytes before boot");
  impl_->write_bytes(buffer, bytes, instance);
}
std::vector<float> vulkan_vm::read_f32(std::string_view buffer, std::uint32_t instance) {
  if (!impl_) throw octo::error("octo: vulkan_vm::read_f32 before boot");
  return impl_->read_f32(buffer, instance);
}
std::vector<float> vulkan_vm::read_f32(std::int32_t id, std::uint32_t instance) {
  if (!impl_) throw octo::error("octo: vulkan_vm::read_f32 before boot");
  return impl_->read_f32(impl_->name_of(id, instance), instance);
}
std::vector<std::byte> vulkan_vm::read_bytes(std::string_view buffer, std::uint32_t instance) {
  if (!impl_) throw octo::error("octo: vulkan_vm::read_bytes before boot");
  return impl_->read_bytes(buffer, instance);
}

void vulkan_vm::write_register(std::uint32_t instance, std::uint32_t reg, std::span<const float> values) {
  if (!impl_) throw octo::error("octo: vulkan_vm::write_register before boot");
  impl_->check_register(instance, reg, values.size());
  auto addr = impl_->register_address(instance, reg);
  impl_->upload(impl_->registers.buffer, impl_->registers.offset + (addr - impl_->registers.address), values.data(),
                values.size_bytes());
}
std::vector<float> vulkan_vm::read_register(std::uint32_t instance, std::uint32_t reg, std::size_t count) {
  if (!impl_) throw octo::error("octo: vulkan_vm::read_register before boot");
  impl_->check_register(instance, reg, count);
  auto addr = impl_->register_address(instance, reg);
  std::vector<float> out(count);
  impl_->download(impl_->registers.buffer, impl_->registers.offset + (addr - impl_->registers.address), out.data(),
                  count * 4);
  return out;
}

void vulkan_vm::set_position(std::uint32_t pos, std::uint32_t n_tokens) {
  if (!impl_ || !impl_->dev) throw octo::error("octo: vulkan_vm::set_position before boot");
  impl_->finish_pending();  // the GPU may still read the record
  globals_record g;
  g.pos = pos;
  g.n_tokens = n_tokens;
  std::memcpy(impl_->globals.mapped, &g, sizeof g);
  impl_->position = pos;
}

void vulkan_vm::execute() {
  if (!impl_) throw octo::error("octo: vulkan_vm::execute before boot");
  impl_->check_usable("execute");
  if (impl_->programs.empty() || !impl_->programs[0]) throw octo::error("octo: vulkan_vm::execute before load");
  impl_->execute(0);
}

void vulkan_vm::set_timeout(std::uint32_t ms) {
  if (!impl_) throw octo::error("octo: vulkan_vm::set_timeout before boot");
  impl_->options.timeout_ms = ms;
}

layer_metrics vulkan_vm::metrics(std::uint32_t instance) const {
  if (!impl_ || !impl_->dev) throw octo::error("octo: vulkan_vm::metrics before boot");
  if (instance >= impl_->options.instances)
    throw octo::error("octo: no instance " + std::to_string(instance) + " (" + std::to_string(impl_->options.instances) + " booted)");
  impl_->finish_pending();
  const auto* m = reinterpret_cast<const float*>(impl_->metrics.mapped) + std::size_t{instance} * metrics_floats;
  layer_metrics r;
  r.activation_norm = m[0];
  r.max_abs = m[1];
  r.compute_ticks = m[2];
  r.memory_used = m[3];
  r.layer_idx = m[4];
  r.status_flags = static_cast<std::uint32_t>(m[5]);
  r.has_nan = m[6] != 0.0f;
  r.has_inf = m[7] != 0.0f;
  return r;
}

float vulkan_vm::scale_factor(std::uint32_t instance) const {
  if (!impl_ || !impl_->dev) throw octo::error("octo: vulkan_vm::scale_factor before boot");
  if (instance >= impl_->options.instances) throw octo::error("octo: no instance " + std::to_string(instance));
  impl_->finish_pending();
  return reinterpret_cast<const float*>(impl_->control.mapped)[std::size_t{instance} * control_floats];
}

vulkan_stats vulkan_vm::stats() const {
  vulkan_stats s;
  if (!impl_ || !impl_->dev) return s;
  const auto& ps = impl_->programs;
  return impl_->stats_of(!ps.empty() && ps[0] ? ps[0].get() : nullptr);
}

vulkan_device_facts vulkan_vm::device() const {
  if (!impl_ || !impl_->dev) throw octo::error("octo: vulkan_vm::device before boot");
  const auto& d = *impl_->dev;
  const auto& f = d.facts();
  vulkan_device_facts r;
  r.name = d.entry().name;
  r.type = d.entry().type;
  r.subgroup_size = f.subgroup_size;
  r.subgroup_arithmetic = f.subgroup_arithmetic;
  r.subgroup_shuffle = f.subgroup_shuffle;
  r.float16_arithmetic = f.float16_arithmetic;
  r.int8_arithmetic = f.int8_arithmetic;
  r.storage_8bit = f.storage_8bit;
  r.storage_16bit = f.storage_16bit;
  r.timeline_semaphores = d.timeline_semaphores();
  r.buffer_device_address = f.buffer_device_address;
  r.cooperative_matrix_nv = f.cooperative_matrix_nv;
  r.cooperative_matrix_mma_layout = f.coop_mma_layout;
  r.cooperative_matrix_layout = d.coop_layout_found();
  r.int_dot = f.int_dot;
  r.int_dot_accelerated = f.int_dot_accelerated;
  r.separate_transfer_queue = d.transfer_family().has_value();
  r.spare_compute_queue = d.spare_compute_queue() != nullptr;
  r.max_push_constants = f.max_push_constants;
  r.max_shared_memory = f.max_shared_memory;
  r.max_allocation_size = d.max_allocation_size();
  return r;
}

std::vector<task_profile> vulkan_vm::profile() const {
  if (!impl_ || !impl_->dev) throw octo::error("octo: vulkan_vm::profile before boot");
  if (!impl_->last_run) return {};
  return impl_->profile(*impl_->last_run);
}

void vulkan_vm::shutdown() {
  if (impl_) impl_->release();
}

}  // namespace octo::vm
