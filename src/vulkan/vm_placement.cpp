// Placement: a program's buffers into the VM's bindings (registers, heap, globals, scratch, regions,
// shared buffers by name), loading, adding and removing programs.
#include "vm_impl.hpp"

namespace octo::vm {

using namespace octo::vm::vulkan;

void vulkan_vm::impl::place(instance_state& is, std::uint32_t inst, bool share,
                            std::span<const buffer_placement> placements, std::vector<allocation>& fresh,
                            std::vector<std::string>& fresh_shared) {
  const auto& p = is.program;
  is.buffers.assign(p.buffers.size(), {});
  for (const auto& b : p.buffers) is.by_name.emplace(b.name.str(), b.id);
  // Placements first: every one must name a buffer of the program and a region it fits.
  std::map<std::string_view, const buffer_placement*> placed_in;
  for (const auto& pm : placements) {
    auto it = is.by_name.find(pm.buffer);
    if (it == is.by_name.end())
      throw octo::error("octo: placement: the program has no buffer named '" + pm.buffer + "'");
    if (!placed_in.emplace(pm.buffer, &pm).second)
      throw octo::error("octo: placement: buffer '" + pm.buffer + "' is placed twice");
    auto r = regions.find(pm.region);
    if (r == regions.end())
      throw octo::error("octo: placement of buffer '" + pm.buffer + "': no region named '" + pm.region + "'");
    const auto& b = p.buffers[static_cast<std::size_t>(it->second)];
    const auto bytes = static_cast<std::uint64_t>(b.nbytes());
    if (register_index(b.name))
      throw octo::error("octo: placement: buffer '" + pm.buffer + "' is a register and cannot live in a region");
    if (pm.offset % 16 != 0)
      throw octo::error("octo: placement of buffer '" + pm.buffer + "': offset " + std::to_string(pm.offset) +
                        " in region '" + pm.region + "' is not a multiple of 16");
    if (pm.offset > r->second.bytes || bytes > r->second.bytes - pm.offset)
      throw octo::error("octo: placement of buffer '" + pm.buffer + "' (" + std::to_string(bytes) + " bytes) at offset " +
                        std::to_string(pm.offset) + " does not fit region '" + pm.region + "' (" +
                        std::to_string(r->second.bytes) + " bytes)");
  }
  for (const auto& b : p.buffers) {
    auto& pl = is.buffers[static_cast<std::size_t>(b.id)];
    pl.bytes = static_cast<std::uint64_t>(b.nbytes());
    std::string label = b.name.str();
    if (options.instances > 1 && !share) label = "instance " + std::to_string(inst) + " " + label;
    if (auto r = register_index(b.name)) {
      if (shared_kind(b.kind))
        throw octo::error("octo: buffer '" + label + "' is named like a register but is a " +
                          std::string(ir::name(b.kind)));
      std::uint64_t room = register_bytes() - (*r == 30 ? 16 : 0);  // R30 keeps 4 telemetry words
      if (pl.bytes > room)
        throw octo::error("octo: buffer '" + label + "' (" + std::to_string(pl.bytes) + " bytes) does not fit register R" +
                          std::to_string(*r) + " (" + std::to_string(room) + " bytes)");
      pl.address = register_address(inst, *r);
      pl.buffer = registers.buffer;
      pl.offset = registers.offset + (pl.address - registers.address);
      pl.binding = "registers";
      continue;
    }
    const char* binding = "registers";
    switch (b.kind) {
      case ir::buffer_kind::weight:
      case ir::buffer_kind::constant: binding = "heap"; break;
      case ir::buffer_kind::kv_cache: binding = "globals"; break;
      default: break;
    }
    pl.binding = binding;
    if (auto pm = placed_in.find(b.name.view()); pm != placed_in.end()) {
      const auto& reg = regions.find(pm->second->region)->second;
      pl.address = reg.a.address + pm->second->offset;
      pl.buffer = reg.a.buffer;
      pl.offset = reg.a.offset + pm->second->offset;
      pl.mapped = nullptr;
      pl.binding = "region";
      continue;
    }
    if (share && shared_kind(b.kind)) {
      auto it = shared.find(b.name.view());
      if (it != shared.end()) {
        if (it->second.bytes != pl.bytes || it->second.kind != b.kind)
          throw octo::error("octo: buffer '" + label + "' (" + std::string(ir::name(b.kind)) + ", " +
                            std::to_string(pl.bytes) + " bytes) is shared by name with an earlier program's " +
                            std::string(ir::name(it->second.kind)) + " of " + std::to_string(it->second.bytes) +
                            " bytes");
      } else {
        shared_buffer sb;
        sb.a = memory->allocate(label, std::max<std::uint64_t>(pl.bytes, 4), memory_class::device_local);
        sb.bytes = pl.bytes;
        sb.kind = b.kind;
        fresh.push_back(sb.a);
        it = shared.emplace(b.name.str(), sb).first;
        fresh_shared.push_back(b.name.str());
      }
      ++it->second.users;
      is.shared_names.push_back(b.name.str());
      pl.address = it->second.a.address;
      pl.buffer = it->second.a.buffer;
      pl.offset = it->second.a.offset;
      continue;
    }
    memory_class cls = memory_class::device_local;
    if (pl.bytes <= host_io_limit) {
      if (b.kind == ir::buffer_kind::io_input) cls = memory_class::host_visible;
      if (b.kind == ir::buffer_kind::io_output) cls = memory_class::readback;
    }
    auto a = memory->allocate(label, std::max<std::uint64_t>(pl.bytes, 4), cls);
    is.owned.push_back(a);
    fresh.push_back(a);
    pl.address = a.address;
    pl.buffer = a.buffer;
    pl.offset = a.offset;
    pl.mapped = a.mapped;
  }
}

void vulkan_vm::impl::release_instance(instance_state& is) {
  for (auto& a : is.owned) memory->free(a);
  is.owned.clear();
  for (const auto& n : is.shared_names) {
    auto it = shared.find(n);
    if (it == shared.end()) continue;
    if (--it->second.users == 0) {
      memory->free(it->second.a);
      shared.erase(it);
      // The weight's f16 copy (weight_copies_for) lives as long as the weight.
      if (auto c = shared.find(weight_copy_name(n)); c != shared.end()) {
        memory->free(c->second.a);
        shared.erase(c);
      }
    }
  }
  is.shared_names.clear();
}

void vulkan_vm::impl::release_program(program_state& ps) {
  if (ps.loop) {
    memory->free(ps.loop->ring);
    ps.loop.reset();
  }
  if (ps.observe_table) memory->free(ps.observe_table);
  if (ps.observe_ring) memory->free(ps.observe_ring);
  if (ps.observe_partials) memory->free(ps.observe_partials);
  ps.observe_table = ps.observe_ring = ps.observe_partials = {};
  ps.observed_layers.clear();
  for (auto& is : ps.instances) release_instance(is);
  ps.instances.clear();
}

void vulkan_vm::impl::validate_program(const ir::program& p, const std::string& which) {
  auto r = octo::ir::validate(p);
  if (!r.ok) {
    std::string first = r.errors.empty() ? std::string("(no detail)") : r.errors.front().str();
    throw octo::error("octo: " + which + " refused (validate found " + std::to_string(r.errors.size()) +
                      " errors): " + first);
  }
}

void vulkan_vm::impl::zero(const std::vector<allocation>& fresh, bool registers_too) {
  one_shot(
      [&](const vk::raii::CommandBuffer& cb) {
        if (registers_too) cb.fillBuffer(registers.buffer, registers.offset, registers.size / 4 * 4, 0);
        for (const auto& a : fresh) cb.fillBuffer(a.buffer, a.offset, (a.size + 3) / 4 * 4, 0);
      },
      "zeroing the program's buffers");
}

void vulkan_vm::impl::load(std::span<const ir::program> progs) {
  check_usable("load");
  if (progs.empty()) throw octo::error("octo: vulkan_vm::load needs at least one program");
  if (progs.size() > options.instances)
    throw octo::error("octo: " + std::to_string(progs.size()) + " programs but the VM was booted with " +
                      std::to_string(options.instances) + " instances");
  for (std::size_t i = 0; i < progs.size(); ++i) validate_program(progs[i], "program " + std::to_string(i));
  finish_pending();
  wait_device_idle("waiting for the device before a load");
  unload();
  auto ps = std::make_unique<program_state>();
  try {
    // A single program shares its weights by name with programs added later; the instances of a
    // chain each have their own (they are different layers).
    const bool share = progs.size() == 1;
    std::vector<allocation> fresh;
    std::vector<std::string> fresh_shared;
    ps->instances.resize(progs.size());
    for (std::size_t i = 0; i < progs.size(); ++i) {
      ps->instances[i].program = progs[i];
      place(ps->instances[i], static_cast<std::uint32_t>(i), share, {}, fresh, fresh_shared);
    }
    // Zero every placed buffer (and the registers: a new program starts from a clean machine).
    zero(fresh, true);
    std::memset(metrics.mapped, 0, std::uint64_t{options.instances} * metrics_floats * 4);
    reset_control();
    auto* m = reinterpret_cast<float*>(metrics.mapped);
    for (std::size_t i = 0; i < ps->instances.size(); ++i) {
      std::uint64_t weights = 0;
      for (const auto& b : ps->instances[i].program.buffers)
        if (b.kind == ir::buffer_kind::weight) weights += static_cast<std::uint64_t>(b.nbytes());
      m[i * metrics_floats + 3] = static_cast<float>(weights);  // memory_used
      m[i * metrics_floats + 4] = static_cast<float>(i);        // layer_idx
    }
    record(*ps);
    programs.push_back(std::move(ps));
  } catch (...) {
    release_program(*ps);
    unload();
    throw;
  }
}

program_id vulkan_vm::impl::add_program(const ir::program& p, std::span<const buffer_placement> placements) {
  check_usable("add_program");
  const auto id = static_cast<program_id>(programs.size());
  validate_program(p, "program " + std::to_string(id));
  auto ps = std::make_unique<program_state>();
  ps->instances.resize(1);
  ps->instances[0].program = p;
  try {
    std::vector<allocation> fresh;
    std::vector<std::string> fresh_shared;
    place(ps->instances[0], 0, true, placements, fresh, fresh_shared);
    zero(fresh, false);  // other programs' registers and shared buffers are left as they are
    record(*ps);
  } catch (...) {
    release_program(*ps);
    throw;
  }
  programs.push_back(std::move(ps));
  return id;
}

void vulkan_vm::impl::remove_program(program_id id) {
  program_state& ps = program(id, "remove_program");
  finish_pending();
  wait_device_idle("waiting for the device before removing a program");  // its command buffer may still be pending
  release_program(ps);
  programs[id].reset();
  if (last_run == id) last_run.reset();
}

std::size_t vulkan_vm::impl::program_count() const {
  return static_cast<std::size_t>(std::count_if(programs.begin(), programs.end(), [](const auto& p) { return p != nullptr; }));
}

void vulkan_vm::impl::unload() {
  for (auto& ps : programs)
    if (ps) release_program(*ps);
  programs.clear();
  for (auto& [name, sb] : shared) memory->free(sb.a);
  shared.clear();
  last_run.reset();
}

program_state& vulkan_vm::impl::program(program_id id, const char* what) {
  check_usable(what);
  if (id >= programs.size() || !programs[id])
    throw octo::error("octo: vulkan_vm::" + std::string(what) + ": no program with id " + std::to_string(id) + " (" +
                      std::to_string(program_count()) + " loaded)");
  return *programs[id];
}

const program_state& vulkan_vm::impl::program(program_id id, const char* what) const {
  return const_cast<impl*>(this)->program(id, what);
}

}  // namespace octo::vm
