// The contract between the Vulkan VM (recording, memory, pipelines) and the kernels (shaders/*.comp and
// their host-side launch planners in src/vulkan/kernels/). Private to octo_core: no Vulkan types here.
//
// How a task becomes a dispatch:
//   * Every IR buffer lives at a device address (buffer device address): weights in the heap,
//     activations in the register arena, KV caches in globals. Kernels reach their tensors through
//     64-bit addresses passed in push constants (GL_EXT_buffer_reference), so no descriptor set is
//     rebuilt per task and no binding-size limit applies.
//   * Per-token values live in the globals record (`globals_record`, device_abi.hpp), whose address every kernel
//     gets. The IR's params describe the pass at position 0; kernels add globals.pos to `pos`, `q_pos`
//     and `kv_len` (docs/opcodes.md, "Per-token values"), so one recorded command buffer serves every
//     token.
//   * A planner turns (task, program, addresses, device facts) into a kernel_launch: which SPIR-V
//     module, its specialization constants, the workgroup count, and the push-constant bytes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "octo/error.hpp"
#include "octo/ir/program.hpp"
#include "device_abi.hpp"

namespace octo::vm::vulkan {

/// What the device supports, as kernels need to know it (filled by the device layer at boot).
struct device_facts {
  /// The device is a CPU (VK_PHYSICAL_DEVICE_TYPE_CPU: lavapipe), whose driver runs a workgroup as one
  /// thread's loop over its invocations: planners that shape work for a GPU's many cores may shape it
  /// for a few threads instead (kernels/gemv.cpp).
  bool cpu = false;
  std::uint32_t subgroup_size = 32;
  bool subgroup_arithmetic = false;  // subgroupAdd / subgroupMax in compute
  bool subgroup_shuffle = false;
  bool float16_arithmetic = false;
  bool int8_arithmetic = false;
  bool storage_8bit = false;
  bool storage_16bit = false;
  bool cooperative_matrix_nv = false;
  bool int_dot = false;              // shaderIntegerDotProduct (OpSDot on packed int8)
  bool int_dot_accelerated = false;  // ... and integerDotProduct4x8BitPackedSignedAccelerated
  std::uint32_t max_workgroup_size_x = 1024;
  std::uint32_t max_shared_memory = 32768;
  std::uint32_t max_push_constants = 128;
  // Appended by the VM core (device layer):
  bool shader_int64 = false;          // uint64_t arithmetic on addresses in shaders
  bool scalar_block_layout = false;   // GL_EXT_scalar_block_layout
  bool timeline_semaphores = false;
  bool buffer_device_address = true;  // required: a device without it is refused at boot
  // Appended by the VM at boot (vulkan_vm.cpp, probe_coop_layout): the cooperative matrices' elements sit
  // in each invocation as in NVIDIA's mma.m16n8k16 fragments, so a kernel may read and write them by
  // element (attention_coop.comp's REGS). False wherever the probe did not run or did not match.
  bool coop_mma_layout = false;
  // Where coop_mma_layout holds: the order of a 16 x 16 f16 factor's four element pairs in an invocation
  // (rows g, g + 8 and columns 2t, 2t + 8 of its mma fragment): 0 as the PTX ISA lists them, (g, 2t),
  // (g + 8, 2t), (g, 2t + 8), (g + 8, 2t + 8); 1 columns first, (g, 2t), (g, 2t + 8), (g + 8, 2t),
  // (g + 8, 2t + 8), as NVIDIA's Vulkan driver holds them (580 on the H100). The 16 x 8 f32 accumulators
  // are in the PTX order on both.
  std::uint32_t coop_factor_order = 0;
};

/// One field a planner packed: what the shader's push-constant block must declare at that offset.
struct push_field {
  enum class kind : std::uint8_t { addr, u32, f32 };  // addr: a 64-bit device address (uvec2 or a buffer reference)
  kind type;
  std::uint32_t offset;
  friend bool operator==(const push_field&, const push_field&) = default;
};

/// A dispatch's push constants: the bytes, and the fields they were packed as (unit_vk_kernel_plans
/// compares those with the block the shader module declares).
struct push_block {
  std::vector<std::byte> bytes;
  std::vector<push_field> fields;
};

/// std430 push-constant packing: addresses as uvec2 (8-byte aligned), then 32-bit scalars. The one packer
/// of the kernels' planners and the VM's own kernels.
class push_builder {
 public:
  push_builder& addr(std::uint64_t a) { return put(push_field::kind::addr, &a, 8); }
  push_builder& u32(std::uint32_t v) { return put(push_field::kind::u32, &v, 4); }
  push_builder& f32(float v) { return put(push_field::kind::f32, &v, 4); }
  push_block take() const {
    return {{bytes_.begin(), bytes_.begin() + static_cast<std::ptrdiff_t>(size_)}, fields_};
  }

 private:
  // A fixed array rather than vector::insert: g++ 12 at -O3 reports a false stringop-overflow there.
  push_builder& put(push_field::kind k, const void* p, std::size_t n) {
    size_ = (size_ + n - 1) / n * n;  // std430: each scalar or uvec2 aligned to its own size
    if (size_ + n > bytes_.size()) throw octo::error("kernel push constants exceed 128 bytes");
    std::memcpy(bytes_.data() + size_, p, n);
    fields_.push_back({k, static_cast<std::uint32_t>(size_)});
    size_ += n;
    return *this;
  }
  std::array<std::byte, 128> bytes_{};
  std::size_t size_ = 0;
  std::vector<push_field> fields_;
};

/// The most f16 weight copies one launch reads (kernel_launch::weight_copies).
inline constexpr std::size_t kMaxWeightCopies = 2;

/// Inputs to a planner.
struct task_context {
  const ir::program& program;
  const ir::task& task;
  std::span<const std::uint64_t> buffer_address;  // indexed by buffer id
  std::uint64_t globals_address = 0;
  const device_facts& device;
  /// vulkan_options::precision is `fast` (docs/precision.md): GEMMs may multiply f16-rounded factors and
  /// decode GEMVs int8-rounded x (integer dot products).
  bool fast_precision = false;
  /// The task's scratch buffer: zero-filled once when the program is loaded, kept for its life, of the
  /// size the planner asked for (kernel_launch::scratch_bytes) on a first call without one (0 here). A
  /// kernel that uses it must leave it as it found it where it matters (e.g. arrival counters back at 0).
  std::uint64_t scratch_address = 0;
  /// Every task's own scratch by task id, for the tasks planned before this one (0 for the others), where
  /// the VM lets a kernel read what an earlier task's kernel left in its scratch (x rounded by the
  /// GEMV_ADD that wrote it, kernels/gemv.cpp); empty where it does not (a planner called alone, the
  /// VM's sizing passes, a recording with control words, whose layers may be skipped or switch precision).
  std::span<const std::uint64_t> task_scratch_address = {};
  /// The program's shared scratch (kernel_launch::shared_scratch_bytes), or 0 where there is none (the
  /// first call, or the memory left no room for it): a planner then plans its launch without it.
  std::uint64_t shared_scratch_address = 0;
  /// The task's private part of the shared scratch (kernel_launch::transient_scratch_bytes), or 0 where
  /// there is none (as shared_scratch_address).
  std::uint64_t transient_scratch_address = 0;
  /// The VM's f16 copies of the task's weights (kernel_launch::weight_copies, in its order), 0 where there
  /// is none (the first call, or the memory left no room for it): a planner then plans its launch
  /// without it.
  std::array<std::uint64_t, kMaxWeightCopies> weight_copy_address{};
};

/// A whole block-quantized weight kept as f16 rows of K beside it, which a kernel reads instead of
/// dequantizing the weight on every run (prefill GEMMs: the dequantization pass is 7-10% of a 7B
/// quantized prefill). The VM keeps one copy per weight where the memory left allows it ("#f16 copy"
/// shared buffers, vm_recording.cpp weight_copies_for), fills it with plan_weight_copy from what the
/// weight holds (when it is made, and after each write of the weight), and passes its address back in
/// task_context::weight_copy_address.
struct weight_copy_request {
  std::uint64_t weight = 0;        // the weight's address
  std::string_view fill_shader;    // shaders/weights_f16.comp's variant for the weight's dtype
  std::uint32_t rows = 0, K = 0;   // the whole weight: rows of K elements
  std::uint32_t row_bytes = 0;     // bytes of one quantized row
  std::uint64_t bytes() const { return std::uint64_t{rows} * K * 2; }
};

/// A workgroup count along x computed on the device when the command buffer runs, from the pass's
/// globals record, so that one recording serves every position and a kernel whose work grows with the
/// context (attention over the keys written so far) wakes only the workgroups the position needs:
///
///   n        = clamp(globals.pos + (tokens ? globals.n_tokens : 0) + add, 0, limit)   -- items, e.g. keys
///   groups.x = mul * clamp(ceil(n / div), min, max)
///
/// The VM evaluates every such rule of a program in one small kernel at the start of its command buffer
/// (shaders/vm_dispatch_size.comp, which mirrors groups_at below) and records the task with
/// vkCmdDispatchIndirect. kernel_launch::groups[0] must be the largest count, mul * max (the VM
/// dispatches that directly where indirect dispatch is off, OCTO_INDIRECT=0), and the kernel must be
/// correct for any count in [mul * min, mul * max]: the rule only saves the workgroups past the work.
struct indirect_groups {
  std::int32_t add = 0;
  std::uint32_t limit = 0xffffffffu;
  std::uint32_t div = 1;  // > 0
  std::uint32_t min = 1, max = 1;
  std::uint32_t mul = 1;
  bool tokens = false;  // count globals.n_tokens too
  /// The launch runs only while n_min <= n <= n_max (else no workgroups): two kernels recorded for one
  /// task, each for its own range of n, are a choice made on the device at every run (decode attention:
  /// kernel_launch::alternatives).
  std::uint32_t n_min = 0, n_max = 0xffffffffu;
  friend bool operator==(const indirect_groups&, const indirect_groups&) = default;

  /// groups.x at position `pos` with `n_tokens` tokens (what the device computes).
  std::uint32_t groups_at(std::uint32_t pos, std::uint32_t n_tokens) const {
    std::int64_t n = std::int64_t{pos} + (tokens ? std::int64_t{n_tokens} : 0) + add;
    n = n < 0 ? 0 : (n > std::int64_t{limit} ? std::int64_t{limit} : n);
    if (n < std::int64_t{n_min} || n > std::int64_t{n_max}) return 0;
    std::int64_t g = (n + div - 1) / div;
    g = g < min ? min : (g > max ? max : g);
    return static_cast<std::uint32_t>(g) * mul;
  }
};

/// A kernel_launch::spec_constants value that leaves the module's default for that constant_id (so that
/// a launch may set constants past ids it does not set, e.g. add_rope_ramp's).
inline constexpr std::uint32_t spec_default = 0xffffffffu;

/// One dispatch.
struct kernel_launch {
  std::string_view shader;                    // name of a compiled module, e.g. "gemv_f16" (shaders/gemv.comp variant)
  std::vector<std::uint32_t> spec_constants;  // values for constant_id 0, 1, 2... (0 is the workgroup size by
                                              // convention); spec_default: the module's own
  std::array<std::uint32_t, 3> groups{1, 1, 1};
  push_block push_constants;                  // at most device.max_push_constants bytes
  std::uint64_t scratch_bytes = 0;            // device scratch the kernel needs (task_context::scratch_address)
  /// groups[0] follows the position on the device (see indirect_groups); groups[1], groups[2] stay fixed.
  std::optional<indirect_groups> indirect;
  /// Other kernels recorded beside this one for the same task, each with an indirect rule whose n range
  /// (indirect_groups::n_min / n_max) excludes the others', so exactly one runs at any position. Where
  /// indirect dispatch is off (OCTO_INDIRECT=0) only this launch is recorded.
  std::vector<kernel_launch> alternatives;
  /// Kernels recorded beside this one for the same task and run with it at every step (no barrier
  /// between them): a task that takes several dispatches of one wavefront (RMSNORM_GEMV_QKV where its
  /// three projections cannot share one launch, kernels/gemv.cpp plan_qkv). None has `before` or
  /// alternatives of its own.
  std::vector<kernel_launch> beside;
  /// Scratch this launch (with `before`) uses only while its task runs (task_context::
  /// shared_scratch_address): the VM's one shared scratch, where each task of a wavefront has a part of
  /// its own and later wavefronts use the same memory again.
  std::uint64_t shared_scratch_bytes = 0;
  /// Names what the `before` kernels write into the shared scratch (empty: a part of the task's own).
  /// Tasks of one wavefront that ask with the same key get the same part, and the recorder records
  /// their identical `before` kernels once (e.g. one x row rounded once for the Q, K and V GEMVs that
  /// all read it with one norm).
  std::string shared_scratch_key;
  /// Scratch this launch uses only while its task runs and shares with no other task, whatever its
  /// shared_scratch_key (task_context::transient_scratch_address): a second part of the VM's shared
  /// scratch beside the first (e.g. a K-split GEMM's partial sums beside the x rows it shares with the
  /// wavefront's other GEMMs).
  std::uint64_t transient_scratch_bytes = 0;
  /// Kernels that must run before this one for the same task (e.g. a weight tile dequantized into the
  /// shared scratch, then the GEMM that reads it). The recorder puts a wavefront's `before` kernels
  /// together ahead of its tasks' kernels with a barrier between. They take the task's gate (control
  /// words) and go only with this launch, not with its alternatives.
  std::vector<kernel_launch> before;
  /// The f16 copies of its weights this launch would rather read (set on the planner's first call): at
  /// most kMaxWeightCopies (an RMSNORM_SWIGLU's gate and up).
  std::vector<weight_copy_request> weight_copies;
};

/// The launch that writes weight_copy_request `r`'s copy at `dst` (every row).
kernel_launch plan_weight_copy(const weight_copy_request& r, std::uint64_t dst);

/// Plans one task; throws octo::error naming the task when the op/dtype combination is unsupported.
using kernel_planner = kernel_launch (*)(const task_context&);

/// One opcode's row of the Vulkan column (src/vulkan/kernels/registry.cpp): its planner, or none and why.
struct kernel_row {
  ir::opcode op;
  kernel_planner planner = nullptr;  // null: no kernel; the VM refuses a task of this opcode with `no_kernel`
  std::string_view no_kernel;
};

/// The row of `op`; throws octo::error for a code outside the IR.
const kernel_row& kernel_for(ir::opcode op);

}  // namespace octo::vm::vulkan
