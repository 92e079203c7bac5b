#version 450
// A GEMM_TILE's weight rows n_off .. n_off + n_tile, dequantized once into f16 rows of K (scratch) for
// the tensor-core GEMM on F16 weights (gemm_coopf_f16). At prefill sizes a quantized weight dequantized
// inside the GEMM is dequantized again by every row block of the output (4 times at 512 rows with
// 128-row tiles), and that dequantization, not the tensor cores, set the GEMM's pace: on the H200 a 512-row
// Q4_K GEMM ran at 27-38 TFLOP/s and Q6_K at 12-18 where F16 ran at 55-83 (1.5B shapes; benchmarks/
// results/2026-11-28-h200-persistent, call5). Each unit goes through w16_unit, the conversion
// gemm_coopf stages its tiles with, so both paths multiply the same f16 values.
// Built over f32 rows as rows_f16_f32, the same pass rounds x's rows once for the GEMMs' X16 mode (the
// rounding gemm_coopf gives x as it stages it: pack_sat).
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#include "common/weights.glsl"
#include "common/w16.glsl"
layout(local_size_x_id = 0) in;

layout(push_constant) uniform params {
  uvec2 w, y;
  uint n_tile, n_off, units, w_row_bytes;  // units: K / 8 per row
} pc;

void main() {
  uint total = pc.n_tile * pc.units;
  uint stride = gl_NumWorkGroups.x * gl_NumWorkGroups.z * gl_WorkGroupSize.x;
  u4_buf y = u4_buf(pc.y);
  for (uint i = octo_group_linear() * gl_WorkGroupSize.x + gl_LocalInvocationID.x; i < total; i += stride) {
    uint n = i / pc.units, u = i - n * pc.units;
    y.d[i] = w16_unit(pc.w, (pc.n_off + n) * pc.w_row_bytes, u);
  }
}
