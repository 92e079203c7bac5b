// See vm_kernels.hpp. Their push blocks mirror shaders/vm_*.comp field for field.
#include "vm_kernels.hpp"

#include <algorithm>
#include <bit>
#include <string>

#include "octo/error.hpp"

namespace octo::vm::vulkan {
namespace {

[[noreturn]] void refuse(const task_context& c, const std::string& why) {
  throw octo::error("octo: task " + std::to_string(c.task.id) + " (" + std::string(ir::name(c.task.op)) +
                    "): " + why);
}

const ir::buffer& buf(const task_context& c, std::int32_t id) {
  if (id < 0 || static_cast<std::size_t>(id) >= c.program.buffers.size()) refuse(c, "names a missing buffer");
  const auto& b = c.program.buffers[static_cast<std::size_t>(id)];
  if (b.dtype != ir::dtype::f32)
    refuse(c, "buffer '" + b.name.str() + "' is " + std::string(ir::name(b.dtype)) + "; the VM's own kernel takes F32 only");
  return b;
}
std::uint64_t addr(const task_context& c, std::int32_t id) { return c.buffer_address[static_cast<std::size_t>(id)]; }

std::array<std::uint32_t, 3> stride_groups(std::int64_t n, std::uint32_t wg) {
  auto g = std::clamp<std::int64_t>((n + wg - 1) / wg, 1, 4096);
  return {static_cast<std::uint32_t>(g), 1, 1};
}

kernel_launch plan_copy(const task_context& c) {
  const auto& x = buf(c, c.task.inputs.at(0));
  const auto& y = buf(c, c.task.outputs.at(0));
  if (x.numel() != y.numel()) refuse(c, "input and output sizes differ");
  kernel_launch l;
  l.shader = "vm_copy";
  l.spec_constants = {64};
  l.groups = stride_groups(y.numel(), 64);
  l.push_constants = push_packer()
                         .addr(addr(c, c.task.inputs[0]))
                         .addr(addr(c, c.task.outputs[0]))
                         .u32(static_cast<std::uint32_t>(y.numel()))
                         .take();
  return l;
}

kernel_launch plan_add(const task_context& c) {
  const auto& a = buf(c, c.task.inputs.at(0));
  const auto& b = buf(c, c.task.inputs.at(1));
  const auto& y = buf(c, c.task.outputs.at(0));
  if (b.numel() == 0 || a.numel() % b.numel() != 0) refuse(c, "b's size does not divide a's");
  kernel_launch l;
  l.shader = "vm_add";
  l.spec_constants = {64};
  l.groups = stride_groups(a.numel(), 64);
  l.push_constants = push_packer()
                         .addr(addr(c, c.task.inputs[0]))
                         .addr(addr(c, c.task.inputs[1]))
                         .addr(addr(c, c.task.outputs[0]))
                         .u32(static_cast<std::uint32_t>(std::min(a.numel(), y.numel())))
                         .u32(static_cast<std::uint32_t>(b.numel()))
                         .take();
  return l;
}

kernel_launch plan_matvec(const task_context& c) {
  const auto& x = buf(c, c.task.inputs.at(0));
  buf(c, c.task.inputs.at(1));
  const auto& y = buf(c, c.task.outputs.at(0));
  bool bias = c.task.inputs.size() > 2;
  if (bias) buf(c, c.task.inputs[2]);
  auto K = c.task.params.get(ir::param_key::K);
  auto n_tile = c.task.params.get(ir::param_key::N_tile);
  auto n_off = c.task.params.get(ir::param_key::n_off);
  if (K <= 0 || x.numel() % K != 0) refuse(c, "K does not divide the input's size");
  auto rows = x.numel() / K;
  if (rows == 0 || y.numel() % rows != 0) refuse(c, "output rows do not match input rows");
  auto ldy = y.numel() / rows;
  if (n_off < 0 || n_tile <= 0 || n_off + n_tile > ldy) refuse(c, "n_off + N_tile exceeds the output row");
  kernel_launch l;
  l.shader = "vm_matvec";
  l.spec_constants = {64};
  l.groups = {static_cast<std::uint32_t>(n_tile), static_cast<std::uint32_t>(rows), 1};
  l.push_constants = push_packer()
                         .addr(addr(c, c.task.inputs[0]))
                         .addr(addr(c, c.task.inputs[1]))
                         .addr(bias ? addr(c, c.task.inputs[2]) : addr(c, c.task.inputs[1]))
                         .addr(addr(c, c.task.outputs[0]))
                         .u32(static_cast<std::uint32_t>(K))
                         .u32(static_cast<std::uint32_t>(ldy))
                         .u32(static_cast<std::uint32_t>(n_off))
                         .u32(bias ? 1u : 0u)
                         .take();
  return l;
}

}  // namespace

kernel_planner find_vm_planner(ir::opcode op) {
  switch (op) {
    case ir::opcode::copy: return plan_copy;
    case ir::opcode::add: return plan_add;
    case ir::opcode::gemv_tile: return plan_matvec;
    default: return nullptr;
  }
}

kernel_launch plan_vm_regulator(std::uint64_t outbox, std::uint64_t metrics, std::uint64_t control, std::uint32_t n,
                                std::uint32_t instance, std::uint32_t n_instances, bool regulate, float target_norm,
                                const device_facts& d) {
  kernel_launch l;
  l.shader = "vm_regulator";
  l.spec_constants = {std::min<std::uint32_t>(256, std::bit_floor(std::max<std::uint32_t>(d.max_workgroup_size_x, 1)))};
  l.groups = {1, 1, 1};
  l.push_constants = push_packer()
                         .addr(outbox)
                         .addr(metrics)
                         .addr(control)
                         .u32(n)
                         .u32(instance)
                         .u32(n_instances)
                         .u32(regulate ? 1u : 0u)
                         .f32(target_norm)
                         .take();
  return l;
}

kernel_launch plan_vm_message(std::uint64_t outbox, std::uint64_t inbox, std::uint64_t control, std::uint32_t n,
                              std::uint32_t receiver) {
  kernel_launch l;
  l.shader = "vm_message";
  l.spec_constants = {64};
  l.groups = stride_groups(static_cast<std::int64_t>(n) + 4, 64);
  l.push_constants = push_packer().addr(outbox).addr(inbox).addr(control).u32(n).u32(receiver).take();
  return l;
}

}  // namespace octo::vm::vulkan
