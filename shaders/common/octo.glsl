// Shared declarations for every octo kernel: tensors reached by buffer device address (uvec2 in push
// constants), the globals record, dtype codes, and word-granular element loads/stores.
// Why 32-bit words: GGUF blocks sit at 2-byte alignment and 8/16-bit storage is optional in Vulkan, so
// every kernel reads aligned uint words and unpacks; it runs on any device with buffer device address.
#ifndef OCTO_COMMON_GLSL
#define OCTO_COMMON_GLSL

#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference_uvec2 : require
#extension GL_EXT_control_flow_attributes : enable

layout(buffer_reference, std430, buffer_reference_align = 4) buffer u32_buf { uint d[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer i32_buf { int d[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer f32_buf { float d[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) buffer v4_buf { vec4 d[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) buffer u4_buf { uvec4 d[]; };
// The globals record (globals_buf) and the dtype codes (DT_*), generated at build time from
// src/vulkan/device_abi.hpp.
#include "octo_device_abi.glsl"

// The workgroup's linear index over an (x, z) grid: the planners split large counts over z because
// maxComputeWorkGroupCount[0] may be as small as 65535.
uint octo_group_linear() { return gl_WorkGroupID.x + gl_WorkGroupID.z * gl_NumWorkGroups.x; }

float bf16_to_f32(uint h) { return uintBitsToFloat(h << 16); }
uint f32_to_bf16(float f) {
  uint u = floatBitsToUint(f);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu) != 0u) return (u >> 16) | 0x40u;  // quiet NaN
  return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;  // round to nearest even
}
float f16_to_f32(uint h) { return unpackHalf2x16(h).x; }
uint f32_to_f16(float f) { return packHalf2x16(vec2(f, 0.0)) & 0xffffu; }

// Values 0-3 / 4-7 of eight packed 16-bit values (F16 or BF16, dt) of one 16-byte load, as floats
// (unpack8_lo also serves four values of an 8-byte load in .xy).
vec4 unpack8_lo(uvec4 w, uint dt) {
  if (dt == DT_BF16)
    return vec4(uintBitsToFloat(w.x << 16), uintBitsToFloat(w.x & 0xffff0000u), uintBitsToFloat(w.y << 16),
                uintBitsToFloat(w.y & 0xffff0000u));
  return vec4(unpackHalf2x16(w.x), unpackHalf2x16(w.y));
}
vec4 unpack8_hi(uvec4 w, uint dt) { return unpack8_lo(uvec4(w.z, w.w, 0u, 0u), dt); }

// A byte / a 16-bit unit at a byte offset of a word buffer.
uint load_u8(u32_buf b, uint byte_off) { return (b.d[byte_off >> 2] >> ((byte_off & 3u) * 8u)) & 0xffu; }
uint load_u16(u32_buf b, uint byte_off) { return (b.d[byte_off >> 2] >> ((byte_off & 2u) * 8u)) & 0xffffu; }
int load_i8(u32_buf b, uint byte_off) { return bitfieldExtract(int(b.d[byte_off >> 2]), int((byte_off & 3u) * 8u), 8); }
// Eight bytes starting at an even byte offset, as two little-endian words.
uvec2 load8_even(u32_buf b, uint byte_off) {
  uint w = byte_off >> 2;
  uint w0 = b.d[w];
  uint w1 = b.d[w + 1u];
  if ((byte_off & 2u) == 0u) return uvec2(w0, w1);
  uint w2 = b.d[w + 2u];
  return uvec2((w0 >> 16) | (w1 << 16), (w1 >> 16) | (w2 << 16));
}

// Element i of a plain-dtype tensor (F32, F16, BF16, I32, I8, U8) or of a Q8_0 one (GGUF blocks of
// 32: an f16 scale, then 32 int8 quants; KV caches) as float.
float load_elem(uvec2 addr, uint i, uint dt) {
  u32_buf b = u32_buf(addr);
  if (dt == DT_F32) return uintBitsToFloat(b.d[i]);
  if (dt == DT_F16) return f16_to_f32(load_u16(b, i * 2u));
  if (dt == DT_BF16) return bf16_to_f32(load_u16(b, i * 2u));
  if (dt == DT_I32) return float(int(b.d[i]));
  if (dt == DT_I8) return float(load_i8(b, i));
  if (dt == DT_U8) return float(load_u8(b, i));
  if (dt == DT_Q8_0) {
    uint blk = (i >> 5) * 34u;
    return float(load_i8(b, blk + 2u + (i & 31u))) * f16_to_f32(load_u16(b, blk));
  }
  return 0.0;
}

// Elements e..e+3 of a norm weight (F32, F16 or BF16): one 16-byte load for F32 (16-byte-aligned
// tensor, e % 4 == 0), else four. A fused RMSNORM multiplies x by them as it loads x.
vec4 load_norm4(uvec2 addr, uint e, uint dt) {
  if (dt == DT_F32) return v4_buf(addr).d[e >> 2];
  return vec4(load_elem(addr, e, dt), load_elem(addr, e + 1u, dt), load_elem(addr, e + 2u, dt), load_elem(addr, e + 3u, dt));
}

// Bits of element i as stored in dtype dt (16-bit types in the low half).
uint encode_elem(float v, uint dt) {
  if (dt == DT_F16) return f32_to_f16(v);
  if (dt == DT_BF16) return f32_to_bf16(v);
  if (dt == DT_I32) return uint(int(v));
  return floatBitsToUint(v);
}

#endif
