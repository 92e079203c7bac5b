// The VM's own kernels (shaders/vm_*.comp): the regulator, message passing between chained instances,
// the greedy token loop's step tail, and the workgroup counts of indirect launches.
// Every opcode's kernel is planned by src/vulkan/kernels/ (kernel_for).
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "kernel_registry.hpp"

namespace octo::vm::vulkan {

kernel_launch plan_vm_regulator(std::uint64_t outbox, std::uint64_t metrics, std::uint64_t control, std::uint32_t n,
                                std::uint32_t instance, std::uint32_t n_instances, bool regulate, float target_norm,
                                const device_facts& d);
kernel_launch plan_vm_message(std::uint64_t outbox, std::uint64_t inbox, std::uint64_t control, std::uint32_t n,
                              std::uint32_t receiver);
/// The layer observer (shaders/vm_observe.comp): `chunks` workgroups per record of `table` ({address lo,
/// hi, values, layer}), their partials in `partials` ([records][chunks][3] words, then a counter per
/// record, zeroed once), write {rms, max |x|, non-finite, values} into ring slot globals.pos % slots.
kernel_launch plan_vm_observe(std::uint64_t table, std::uint64_t ring, std::uint64_t globals, std::uint64_t partials,
                              std::uint32_t records, std::uint32_t slots, std::uint32_t chunks, const device_facts& d);
/// Workgroups per observed layer for `values` values: one per 16384 (64 KiB of f32), 1 to 1024.
std::uint32_t observe_chunks(std::uint64_t values);
/// The token loop's tail (shaders/vm_token_loop.comp): next_token -> tokens, pos and globals.pos + 1, the
/// token into ring slot globals.pos % ring_slots. One invocation.
kernel_launch plan_vm_token_loop(std::uint64_t next_token, std::uint64_t tokens, std::uint64_t pos,
                                 std::uint64_t globals, std::uint64_t ring, std::uint32_t ring_slots);

/// What lets an indirect launch run (control words, vulkan_options::control_words): with a layer, its
/// group count is zero unless that layer's skip word says active (when_skipped: says skipped); with a
/// precision gate, zero unless instance `instance`'s precision_mode word selects that precision.
inline constexpr std::uint32_t precision_gate_fast = 1, precision_gate_accurate = 2;
struct dispatch_gate {
  std::int32_t layer = -1;
  bool when_skipped = false;
  std::uint32_t precision = 0;  // 0: either, precision_gate_fast, precision_gate_accurate
  std::uint32_t instance = 0;
};
/// Layers the skip words cover (one uint each: 0 active, 1 skipped).
inline constexpr std::uint32_t layer_control_words = 4096;

/// The workgroup counts of a program's indirect launches (shaders/vm_dispatch_size.comp): one invocation
/// per launch turns its rule (`rules`, indirect_rule_words uints each, from indirect_rule_record), the
/// globals record and the control words (`control`: 4 floats per instance; `layer_control`: the skip
/// words) into a VkDispatchIndirectCommand at `args` + 12 x its index.
kernel_launch plan_vm_dispatch_size(std::uint64_t rules, std::uint64_t args, std::uint64_t globals,
                                    std::uint64_t control, std::uint64_t layer_control, std::uint32_t count);
inline constexpr std::size_t indirect_rule_words = 16;
/// One launch's rule as vm_dispatch_size reads it: add, limit, div, min, max, mul, tokens, groups y, z,
/// then the gate: 1 + layer (0: none), 1 when it runs while the layer is skipped, precision | instance << 8,
/// then n_min, n_max, and one unused word.
std::array<std::uint32_t, indirect_rule_words> indirect_rule_record(const indirect_groups& r,
                                                                    const std::array<std::uint32_t, 3>& groups,
                                                                    const dispatch_gate& gate = {});
/// A copy of `words` 32-bit words (shaders/vm_copy.comp): a skipped layer's input to its output.
kernel_launch plan_vm_copy(std::uint64_t src, std::uint64_t dst, std::uint64_t words);
/// One workgroup of 32 spinning through `iterations` dependent multiply-adds (shaders/vm_keep_awake.comp):
/// the work the keep-awake queue repeats while a model loads (vm_keep_awake.cpp). `sink`: 128 bytes it
/// never writes unless its result is NaN.
kernel_launch plan_vm_keep_awake(std::uint64_t sink, std::uint32_t iterations);
/// One subgroup writing which elements of a 16 x 8 f32 and a 16 x 16 f16 cooperative matrix each
/// invocation holds (shaders/vm_coop_layout.comp): 386 floats at `out`. The VM's probe at boot.
kernel_launch plan_vm_coop_layout(std::uint64_t out);
/// Where `probe` (what vm_coop_layout wrote) holds the elements of NVIDIA's mma.m16n8k16 fragments:
/// invocation l holds rows l / 4 and l / 4 + 8, columns 2 (l % 4) and the next (16 x 8: elements 0, 1 and
/// 2, 3 by row), and of a 16 x 16 factor the same for columns 0-7 and 8-15, its four pairs in one of the
/// two orders of device_facts::coop_factor_order, which it returns; nullopt for any other layout.
std::optional<std::uint32_t> coop_mma_factor_order(std::span<const float> probe);
/// The probe's elements per invocation as text (vulkan_device_facts::cooperative_matrix_layout).
std::string describe_coop_layout(std::span<const float> probe);
/// The same kernel with the same arguments (the precision switch records a second launch only if not).
bool same_launch(const kernel_launch& a, const kernel_launch& b);

}  // namespace octo::vm::vulkan
