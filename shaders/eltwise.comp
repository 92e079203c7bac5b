#version 450
// Elementwise ops over flat tensors: COPY (dtype conversion), ADD / MUL (b broadcast over rows by
// index modulo its numel), MUL by alpha, SILU_MUL, GELU (exact, erf), ALLREDUCE_SHARD (sum of up to 8).
// One invocation writes one 32-bit word of the output: one element, or two for 16-bit outputs (so
// no two invocations share a word). Grid-stride, so any numel fits any grid.
#include "common/octo.glsl"

layout(local_size_x_id = 0) in;

const uint OP_COPY = 0u, OP_ADD = 1u, OP_MUL = 2u, OP_SCALE = 3u, OP_SILU_MUL = 4u, OP_GELU = 5u, OP_SUM = 6u;

layout(push_constant) uniform params {
  uvec2 in_addr[8];
  uvec2 out_addr;
  uint n;          // output elements
  uint nb;         // elements of the second input (broadcast period) for ADD / MUL
  uint op;
  uint n_in;
  uint in_dtypes;  // 4 bits per input
  uint out_dtype;
  float alpha;
} pc;

float in_at(uint k, uint i) { return load_elem(pc.in_addr[k], i, (pc.in_dtypes >> (4u * k)) & 15u); }

// erf with |error| < 1.2e-7 (Numerical Recipes' erfc Chebyshev fit), enough for exact-GELU in f32.
float erf_approx(float x) {
  float z = abs(x);
  float t = 1.0 / (1.0 + 0.5 * z);
  float r = t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 +
            t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 +
            t * (-0.82215223 + t * 0.17087277)))))))));
  return x >= 0.0 ? 1.0 - r : r - 1.0;
}

float value(uint i) {
  if (pc.op == OP_COPY) return in_at(0u, i);
  if (pc.op == OP_ADD) return in_at(0u, i) + in_at(1u, i % pc.nb);
  if (pc.op == OP_MUL) return in_at(0u, i) * in_at(1u, i % pc.nb);
  if (pc.op == OP_SCALE) return pc.alpha * in_at(0u, i);
  if (pc.op == OP_SILU_MUL) {
    float g = in_at(0u, i);
    return g / (1.0 + exp(-g)) * in_at(1u, i);
  }
  if (pc.op == OP_GELU) {
    float x = in_at(0u, i);
    return 0.5 * x * (1.0 + erf_approx(x * 0.70710678118654752));
  }
  float s = 0.0;
  for (uint k = 0u; k < pc.n_in; ++k) s += in_at(k, i);
  return s;
}

void main() {
  u32_buf y = u32_buf(pc.out_addr);
  bool half_out = pc.out_dtype == DT_F16 || pc.out_dtype == DT_BF16;
  uint words = half_out ? (pc.n + 1u) / 2u : pc.n;
  uint stride = gl_NumWorkGroups.x * gl_NumWorkGroups.z * gl_WorkGroupSize.x;
  for (uint w = octo_group_linear() * gl_WorkGroupSize.x + gl_LocalInvocationID.x; w < words; w += stride) {
    if (!half_out) {
      y.d[w] = encode_elem(value(w), pc.out_dtype);
    } else {
      uint lo = encode_elem(value(2u * w), pc.out_dtype);
      // An odd numel leaves the upper half of the last word to whatever follows: keep it.
      uint hi = 2u * w + 1u < pc.n ? encode_elem(value(2u * w + 1u), pc.out_dtype) : (y.d[w] >> 16);
      y.d[w] = lo | (hi << 16);
    }
  }
}
