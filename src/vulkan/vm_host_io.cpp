// Host I/O: a program's buffers by name (host-visible IO by memcpy, the rest through staging), registers
// and the statistics.
#include "vm_impl.hpp"

namespace octo::vm {

using namespace octo::vm::vulkan;

const placed& vulkan_vm::impl::find(std::string_view name, std::uint32_t inst, const ir::buffer** info) {
  check_usable("read/write");
  if (programs.empty() || !programs[0]) throw octo::error("octo: no program loaded (buffer '" + std::string(name) + "')");
  auto& ps = *programs[0];
  if (inst >= ps.instances.size())
    throw octo::error("octo: instance " + std::to_string(inst) + " has no program (" +
                      std::to_string(ps.instances.size()) + " loaded)");
  return find_in(ps.instances[inst], name, info);
}

const placed& vulkan_vm::impl::find(program_id id, std::string_view name, const ir::buffer** info) {
  return find_in(program(id, "read/write").instances[0], name, info);
}

const placed& vulkan_vm::impl::find_in(instance_state& is, std::string_view name, const ir::buffer** info) {
  auto it = is.by_name.find(name);
  if (it == is.by_name.end()) throw octo::error("octo: the program has no buffer named '" + std::string(name) + "'");
  *info = &is.program.buffers[static_cast<std::size_t>(it->second)];
  return is.buffers[static_cast<std::size_t>(it->second)];
}

std::string vulkan_vm::impl::name_of(std::int32_t id, std::uint32_t inst) {
  if (programs.empty() || !programs[0] || inst >= programs[0]->instances.size() || id < 0 ||
      static_cast<std::size_t>(id) >= programs[0]->instances[inst].program.buffers.size())
    throw octo::error("octo: no buffer with id " + std::to_string(id));
  return programs[0]->instances[inst].program.buffers[static_cast<std::size_t>(id)].name.str();
}

void vulkan_vm::impl::write_placed(const placed& pl, std::string_view name, std::span<const std::byte> bytes) {
  if (bytes.size() != pl.bytes)
    throw octo::error("octo: buffer '" + std::string(name) + "' holds " + std::to_string(pl.bytes) + " bytes, got " +
                      std::to_string(bytes.size()));
  // A weight's f16 copies go stale, and are filled again right after the write (at load, not in the
  // first pass that reads them; if the write throws they stay stale and are filled before a run).
  std::vector<shared_buffer*> copies;
  for (auto& [n, sb] : shared) {
    if (sb.a.address == pl.address) sb.written = true;
    if (sb.fill && pl.address < sb.source + sb.source_bytes && sb.source < pl.address + pl.bytes) {
      sb.stale = true;
      copies.push_back(&sb);
    }
  }
  if (pl.mapped) {
    finish_pending();  // the GPU may still read it
    std::memcpy(pl.mapped, bytes.data(), bytes.size());
  } else {
    upload(pl.buffer, pl.offset, bytes.data(), bytes.size());
  }
  if (!copies.empty()) fill_weight_copies(copies);
}

void vulkan_vm::impl::read_placed(const placed& pl, std::span<std::byte> dst, std::uint64_t from) {
  if (pl.mapped) {
    finish_pending();
    std::memcpy(dst.data(), pl.mapped + from, dst.size());
    return;
  }
  download(pl.buffer, pl.offset + from, dst.data(), dst.size());
}

void vulkan_vm::impl::require_f32(const ir::buffer* b, std::string_view name, const char* use) {
  if (b->dtype != ir::dtype::f32)
    throw octo::error("octo: buffer '" + std::string(name) + "' is " + std::string(ir::name(b->dtype)) + ", not F32 (use " +
                      use + ")");
}

std::vector<float> vulkan_vm::impl::as_floats(const std::vector<std::byte>& bytes) {
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), out.size() * 4);
  return out;
}

void vulkan_vm::impl::write_bytes(std::string_view name, std::span<const std::byte> bytes, std::uint32_t inst) {
  const ir::buffer* b = nullptr;
  write_placed(find(name, inst, &b), name, bytes);
}

void vulkan_vm::impl::write_f32(std::string_view name, std::span<const float> v, std::uint32_t inst) {
  const ir::buffer* b = nullptr;
  const auto& pl = find(name, inst, &b);
  require_f32(b, name, "write_bytes");
  write_placed(pl, name, std::as_bytes(v));
}

std::vector<std::byte> vulkan_vm::impl::read_bytes(std::string_view name, std::uint32_t inst) {
  const ir::buffer* b = nullptr;
  const auto& pl = find(name, inst, &b);
  std::vector<std::byte> out(pl.bytes);
  read_placed(pl, out);
  return out;
}

std::vector<float> vulkan_vm::impl::read_f32(std::string_view name, std::uint32_t inst) {
  const ir::buffer* b = nullptr;
  find(name, inst, &b);
  require_f32(b, name, "read_bytes");
  return as_floats(read_bytes(name, inst));
}

void vulkan_vm::impl::check_register(std::uint32_t inst, std::uint32_t reg, std::size_t count) {
  check_usable("register access");
  if (inst >= options.instances || reg >= register_count || count > options.register_floats)
    throw octo::error("octo: register R" + std::to_string(reg) + " of instance " + std::to_string(inst) + " (" +
                      std::to_string(count) + " floats) is outside the " + std::to_string(options.instances) +
                      " instances x 32 registers x " + std::to_string(options.register_floats) + " floats");
}

vulkan_stats vulkan_vm::impl::stats_of(const program_state* ps) const {
  vulkan_stats s = st;
  s.dispatches = s.task_dispatches = s.exclusive_dispatches = s.indirect_dispatches = s.barriers = 0;
  if (ps) {
    s.dispatches = ps->dispatches;
    s.task_dispatches = ps->task_dispatches;
    s.exclusive_dispatches = ps->exclusive_dispatches;
    s.indirect_dispatches = ps->indirect_dispatches;
    s.barriers = ps->barriers;
  }
  s.validation_messages = dev->validation_messages();
  auto m = memory->stats();
  s.memory_in_use = m.in_use;
  s.memory_budget = m.budget;
  s.memory_blocks = m.blocks;
  s.memory_block_bytes = m.block_bytes;
  s.largest_free_block = m.largest_free;
  s.fragmentation = m.fragmentation;
  s.pipelines = pipes->size();
  s.pipeline_cache_loaded = pipes->cache_loaded();
  for (const auto& [name, sb] : shared)
    if (sb.fill) {
      ++s.weight_copies;
      s.weight_copy_bytes += sb.bytes;
    }
  return s;
}

}  // namespace octo::vm
