// The on-device ABI (IR spec §8) for GLSL kernels: the same codes, caps and record layouts as
// include/octo/vm/abi.hpp. tests/unit/abi_sync.cpp parses both files and fails on any drift from the IR.
//
// octo_instruction is for std430 storage buffers only (std140 would give its uint arrays a 16-byte
// stride). octo_buffer_record lays out the same under std140 and std430: 64-bit values are uvec2
// (low word first), shape/stride are uvec4. Keep one #define per line: the sync test reads them.
#ifndef OCTO_ABI_GLSL
#define OCTO_ABI_GLSL

#define OCTO_ABI_VERSION_MAJOR 0
#define OCTO_ABI_VERSION_MINOR 2

#define OCTO_MAX_INPUTS 8
#define OCTO_MAX_OUTPUTS 4
#define OCTO_MAX_WAITS 8
#define OCTO_MAX_RANK 4
#define OCTO_PARAM_SLOTS 32

// Element types (IR DType codes, incl. the appended GGUF block formats).
#define OCTO_DTYPE_F32 0
#define OCTO_DTYPE_F16 1
#define OCTO_DTYPE_BF16 2
#define OCTO_DTYPE_F8E4M3 3
#define OCTO_DTYPE_F8E5M2 4
#define OCTO_DTYPE_I32 5
#define OCTO_DTYPE_I8 6
#define OCTO_DTYPE_I4 7
#define OCTO_DTYPE_U8 8
#define OCTO_DTYPE_BOOL 9
#define OCTO_DTYPE_Q8_0 10
#define OCTO_DTYPE_Q4_0 11
#define OCTO_DTYPE_Q4_1 12
#define OCTO_DTYPE_Q5_0 13
#define OCTO_DTYPE_Q5_1 14
#define OCTO_DTYPE_Q2_K 15
#define OCTO_DTYPE_Q3_K 16
#define OCTO_DTYPE_Q4_K 17
#define OCTO_DTYPE_Q5_K 18
#define OCTO_DTYPE_Q6_K 19

// Memory spaces (IR MemSpace codes).
#define OCTO_MEM_HBM 0
#define OCTO_MEM_GLOBAL_SCRATCH 1
#define OCTO_MEM_SMEM 2
#define OCTO_MEM_REGISTER 3

// Opcodes (IR InstructionKind codes).
#define OCTO_OP_NOP 0
#define OCTO_OP_COPY 1
#define OCTO_OP_EMBED 2
#define OCTO_OP_RMSNORM 3
#define OCTO_OP_LAYERNORM 4
#define OCTO_OP_GEMV_TILE 5
#define OCTO_OP_GEMM_TILE 6
#define OCTO_OP_ATTENTION_TILE 7
#define OCTO_OP_ROPE 8
#define OCTO_OP_SILU_MUL 9
#define OCTO_OP_GELU 10
#define OCTO_OP_ADD 11
#define OCTO_OP_MUL 12
#define OCTO_OP_DEQUANT 13
#define OCTO_OP_SOFTMAX 14
#define OCTO_OP_ALLREDUCE_SHARD 15
#define OCTO_OP_KV_APPEND 16
#define OCTO_OP_SAMPLE_ARGMAX 17
#define OCTO_OP_ATTENTION_COMBINE 18

// Parameter slots (PARAM_FIELDS order), upper-cased names. Read with octo_param_int / octo_param_float
// as OCTO_PARAM_FLOAT_MASK says (bit k set: slot k is a float).
#define OCTO_PARAM_K 0
#define OCTO_PARAM_N_TILE 1
#define OCTO_PARAM_N_OFF 2
#define OCTO_PARAM_M_TILE 3
#define OCTO_PARAM_M_OFF 4
#define OCTO_PARAM_EPS 5
#define OCTO_PARAM_HIDDEN 6
#define OCTO_PARAM_HEAD_DIM 7
#define OCTO_PARAM_KV_START 8
#define OCTO_PARAM_KV_LEN 9
#define OCTO_PARAM_SCALE 10
#define OCTO_PARAM_N_HEADS 11
#define OCTO_PARAM_N_KV_HEADS 12
#define OCTO_PARAM_THETA 13
#define OCTO_PARAM_POS 14
#define OCTO_PARAM_QDTYPE 15
#define OCTO_PARAM_GROUP 16
#define OCTO_PARAM_ROPE_STYLE 17
#define OCTO_PARAM_CAUSAL 18
#define OCTO_PARAM_Q_POS 19
#define OCTO_PARAM_N_ROT 20
#define OCTO_PARAM_ALPHA 21
#define OCTO_PARAM_PARTIAL 22
#define OCTO_PARAM_DIM 23
#define OCTO_PARAM_LAYER 24
#define OCTO_PARAM_KV_BLOCK 25
#define OCTO_PARAM_FLOAT_MASK 0x00202420u

struct octo_params {
  uint slot[OCTO_PARAM_SLOTS];
};

struct octo_instruction {
  uint op;
  uint n_inputs;
  uint n_outputs;
  uint n_waits;
  int inputs[OCTO_MAX_INPUTS];
  int outputs[OCTO_MAX_OUTPUTS];
  int wait_counter[OCTO_MAX_WAITS];
  uint wait_threshold[OCTO_MAX_WAITS];
  int out_counter;
  int sm;
  uint param_present;
  uint reserved;
  octo_params params;
};

struct octo_buffer_record {
  uvec2 address;
  uvec2 numel;
  uint rank;
  uint dtype;
  uint space;
  uint reserved;
  uvec4 shape;
  uvec4 stride;
};

// Parameter access by slot, e.g. octo_param_int(ins, OCTO_PARAM_K), octo_param_float(ins, OCTO_PARAM_EPS).
#define octo_param_int(ins, k) int((ins).params.slot[(k)])
#define octo_param_float(ins, k) uintBitsToFloat((ins).params.slot[(k)])
#define octo_has_param(ins, k) ((((ins).param_present >> uint(k)) & 1u) != 0u)

#endif  // OCTO_ABI_GLSL
