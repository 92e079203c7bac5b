#version 450
// RMSNORM (mode 0) and LAYERNORM (mode 1, biased variance, optional bias): one workgroup per row.
// Built as norm_f16 (NORM_F16): the rows written as f16 (y as halves, pairs rounded by pack_sat) for the
// tensor-core GEMMs' X16 mode, the RMSNORM of an RMSNORM_GEMV / RMSNORM_SWIGLU over many rows in one
// pass ahead of them (src/vulkan/kernels/gemm.cpp, plan_norm_x): the values this kernel writes in f32,
// rounded as rows_f16_f32 rounds them. Needs an even hidden.
#ifdef NORM_F16
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define WUNIT wunit_f32
#include "common/weights.glsl"
#include "common/w16.glsl"  // pack_sat
#endif
#include "common/octo.glsl"
layout(local_size_x_id = 0) in;
#include "common/reduce.glsl"

layout(push_constant) uniform params {
  uvec2 x, w, b, y;
  uint hidden, rows, mode, has_b, w_dtype, b_dtype;
  float eps;
} pc;

void main() {
  uint row = octo_group_linear();
  if (row >= pc.rows) return;
  uint tid = gl_LocalInvocationID.x, WG = gl_WorkGroupSize.x;
  f32_buf x = f32_buf(pc.x);
  f32_buf y = f32_buf(pc.y);
  uint base = row * pc.hidden;
  float mean = 0.0;
  if (pc.mode == 1u) {
    float s = 0.0;
    for (uint i = tid; i < pc.hidden; i += WG) s += x.d[base + i];
    mean = wg_sum(s) / float(pc.hidden);
  }
  float ss = 0.0;
  for (uint i = tid; i < pc.hidden; i += WG) {
    float v = x.d[base + i] - mean;
    ss += v * v;
  }
  float inv = inversesqrt(wg_sum(ss) / float(pc.hidden) + pc.eps);
#ifdef NORM_F16
  u32_buf yh = u32_buf(pc.y);
  for (uint p = tid; p < pc.hidden / 2u; p += WG) {
    uint i = 2u * p;
    float a = (x.d[base + i] - mean) * inv * load_elem(pc.w, i, pc.w_dtype);
    float b = (x.d[base + i + 1u] - mean) * inv * load_elem(pc.w, i + 1u, pc.w_dtype);
    if (pc.has_b != 0u) {
      a += load_elem(pc.b, i, pc.b_dtype);
      b += load_elem(pc.b, i + 1u, pc.b_dtype);
    }
    yh.d[(base >> 1) + p] = pack_sat(a, b);
  }
#else
  for (uint i = tid; i < pc.hidden; i += WG) {
    float v = (x.d[base + i] - mean) * inv * load_elem(pc.w, i, pc.w_dtype);
    if (pc.has_b != 0u) v += load_elem(pc.b, i, pc.b_dtype);
    y.d[base + i] = v;
  }
#endif
}
