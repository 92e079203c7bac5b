// The on-device ABI (IR spec §8): the fixed-size records the host loader fills from a program and the
// GPU kernels read. shaders/abi.glsl mirrors this file; tests/unit/abi_sync.cpp parses both against the IR.
#pragma once

// Deliberately free of IR and Vulkan includes: this is the wire format, readable on its own.
// include/octo/vm/abi_marshal.hpp ties it to the IR (with static_asserts) and fills the records.
//
// Layout rules, so one struct reads identically in C++ and in GLSL:
//  - every field is a 32-bit scalar, a 32-bit array, or a 64-bit value at an 8-byte offset;
//  - `instruction` is read through std430 storage buffers only (std140 would give its uint arrays a
//    16-byte stride); all its members are 4-byte aligned, so std430 places them exactly as C++ does;
//  - `buffer_record` is valid under std140 AND std430: its 64-bit values are uvec2 in GLSL (no int64
//    extension needed; low word first, as on every little-endian host), shape/stride are uvec4 there.
// Keep the format by appending fields into `reserved` words or at the end; never reorder.
// Lines of the form `name = code,` and `inline constexpr ... name = value;` are parsed by abi_sync.cpp:
// keep one per line.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace octo::vm::abi {

inline constexpr std::uint32_t version_major = 0;
inline constexpr std::uint32_t version_minor = 2;

inline constexpr std::uint32_t max_inputs = 8;
inline constexpr std::uint32_t max_outputs = 4;
inline constexpr std::uint32_t max_waits = 8;
inline constexpr std::uint32_t max_rank = 4;
/// 32-bit parameter slots per instruction: one per ir::param_key, with room to append keys.
inline constexpr std::uint32_t param_slots = 32;

/// Element types (IR DType codes, incl. the appended GGUF block formats).
enum class dtype : std::uint32_t {
  f32 = 0,
  f16 = 1,
  bf16 = 2,
  f8e4m3 = 3,
  f8e5m2 = 4,
  i32 = 5,
  i8 = 6,
  i4 = 7,
  u8 = 8,
  boolean = 9,
  q8_0 = 10,
  q4_0 = 11,
  q4_1 = 12,
  q5_0 = 13,
  q5_1 = 14,
  q2_k = 15,
  q3_k = 16,
  q4_k = 17,
  q5_k = 18,
  q6_k = 19,
};

/// Memory spaces (IR MemSpace codes).
enum class mem_space : std::uint32_t {
  hbm = 0,
  global_scratch = 1,
  smem = 2,
  reg = 3,
};

/// Opcodes (IR InstructionKind codes).
enum class opcode : std::uint32_t {
  nop = 0,
  copy = 1,
  embed = 2,
  rmsnorm = 3,
  layernorm = 4,
  gemv_tile = 5,
  gemm_tile = 6,
  attention_tile = 7,
  rope = 8,
  silu_mul = 9,
  gelu = 10,
  add = 11,
  mul = 12,
  dequant = 13,
  softmax = 14,
  allreduce_shard = 15,
  kv_append = 16,
  sample_argmax = 17,
  attention_combine = 18,
};

/// Slot of each parameter in `params::slot` (ir::param_key order, i.e. PARAM_FIELDS order).
enum class param_slot : std::uint32_t {
  K = 0,
  N_tile = 1,
  n_off = 2,
  M_tile = 3,
  m_off = 4,
  eps = 5,
  hidden = 6,
  head_dim = 7,
  kv_start = 8,
  kv_len = 9,
  scale = 10,
  n_heads = 11,
  n_kv_heads = 12,
  theta = 13,
  pos = 14,
  qdtype = 15,
  group = 16,
  rope_style = 17,
  causal = 18,
  q_pos = 19,
  n_rot = 20,
  alpha = 21,
  partial = 22,
  dim = 23,
  layer = 24,
  kv_block = 25,
};

/// Bit k set: slot k holds an IEEE float (PARAM_FIELDS type 'f'); clear: a two's-complement int32.
/// eps (5), scale (10), theta (13) and alpha (21).
inline constexpr std::uint32_t param_float_mask = 0x00202420;

/// A task's scalar parameters. One 32-bit word per slot rather than a union, because GLSL has no
/// unions and C++ may not read the inactive member of one: the kernel reads int(slot[k]) or
/// uintBitsToFloat(slot[k]) as param_float_mask says; the host writes through set_int / set_float.
struct params {
  std::uint32_t slot[param_slots];

  constexpr void set_int(param_slot k, std::int32_t v) { slot[static_cast<std::uint32_t>(k)] = static_cast<std::uint32_t>(v); }
  constexpr void set_float(param_slot k, float v) { slot[static_cast<std::uint32_t>(k)] = std::bit_cast<std::uint32_t>(v); }
  constexpr std::int32_t get_int(param_slot k) const { return static_cast<std::int32_t>(slot[static_cast<std::uint32_t>(k)]); }
  constexpr float get_float(param_slot k) const { return std::bit_cast<float>(slot[static_cast<std::uint32_t>(k)]); }
};

/// One task == one instruction (IR spec §8). Unused array entries are 0; ids index the program's
/// buffer / counter tables.
struct instruction {
  std::uint32_t op;                          // offset   0: opcode code
  std::uint32_t n_inputs;                    //          4
  std::uint32_t n_outputs;                   //          8
  std::uint32_t n_waits;                     //         12
  std::int32_t inputs[max_inputs];           //         16: buffer ids read
  std::int32_t outputs[max_outputs];         //         48: buffer ids written
  std::int32_t wait_counter[max_waits];      //         64
  std::uint32_t wait_threshold[max_waits];   //         96: wait until counters[c] >= threshold
  std::int32_t out_counter;                  //        128: += 1 after all outputs are written
  std::int32_t sm;                           //        132: queue (SM / workgroup) it runs on, >= 0
  std::uint32_t param_present;               //        136: bit k set when slot k was given
  std::uint32_t reserved;                    //        140: zero; keeps params 16-byte aligned
  abi::params params;                        //        144
};                                           // size   272

/// A buffer as the kernels see it: where it lives and its row-major element layout.
struct buffer_record {
  std::uint64_t address;            // offset  0: device address or arena byte offset (the VM's choice)
  std::uint64_t numel;              //         8
  std::uint32_t rank;               //        16
  std::uint32_t dtype;              //        20: dtype code
  std::uint32_t space;              //        24: mem_space code
  std::uint32_t reserved;           //        28: zero
  std::uint32_t shape[max_rank];    //        32: unused dims are 1
  std::uint32_t stride[max_rank];   //        48: element strides; unused dims are 0
};                                  // size   64

// ---- layout checks: these offsets are what shaders/abi.glsl assumes ---------------------------------

static_assert(std::is_standard_layout_v<params> && std::is_trivially_copyable_v<params>);
static_assert(std::is_standard_layout_v<instruction> && std::is_trivially_copyable_v<instruction>);
static_assert(std::is_standard_layout_v<buffer_record> && std::is_trivially_copyable_v<buffer_record>);
static_assert(sizeof(params) == 4 * param_slots);
static_assert(offsetof(instruction, op) == 0);
static_assert(offsetof(instruction, n_waits) == 12);
static_assert(offsetof(instruction, inputs) == 16);
static_assert(offsetof(instruction, outputs) == 48);
static_assert(offsetof(instruction, wait_counter) == 64);
static_assert(offsetof(instruction, wait_threshold) == 96);
static_assert(offsetof(instruction, out_counter) == 128);
static_assert(offsetof(instruction, sm) == 132);
static_assert(offsetof(instruction, param_present) == 136);
static_assert(offsetof(instruction, params) == 144);
static_assert(sizeof(instruction) == 272 && sizeof(instruction) % 16 == 0);
static_assert(alignof(instruction) == 4);
static_assert(offsetof(buffer_record, numel) == 8);
static_assert(offsetof(buffer_record, rank) == 16);
static_assert(offsetof(buffer_record, space) == 24);
static_assert(offsetof(buffer_record, shape) == 32);
static_assert(offsetof(buffer_record, stride) == 48);
static_assert(sizeof(buffer_record) == 64);

}  // namespace octo::vm::abi
