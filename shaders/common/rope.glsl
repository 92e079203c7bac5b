// RoPE's rotation for dimension pair i of a head at position p, as the reference (and Hugging Face)
// compute it in f32: inv_freq = 1 / theta^(2i/n_rot), angle = p * inv_freq. Shared by every kernel that
// rotates (rope.comp, norm_rope.comp, the GEMV and GEMM epilogues).
#ifndef OCTO_ROPE_GLSL
#define OCTO_ROPE_GLSL

// The frequency ramp (Llama 3.1+'s RoPE scaling; semantics::rope_ramp, kernels' add_rope_ramp): inv_freq
// times low_scale + clamp(slope * inv_freq + offset, 0, 1) * (1 - low_scale). Specialization constants,
// ids 16-19 (above every module's own), so a model without it compiles to the plain rotation.
layout(constant_id = 16) const bool ROPE_RAMP = false;
layout(constant_id = 17) const float ROPE_LOW_SCALE = 1.0;
layout(constant_id = 18) const float ROPE_RAMP_SLOPE = 0.0;
layout(constant_id = 19) const float ROPE_RAMP_OFFSET = 0.0;

vec2 rope_cos_sin(float p, uint i, uint n_rot, float log2_theta) {
  float inv_freq = 1.0 / exp2(float(2u * i) / float(n_rot) * log2_theta);
  if (ROPE_RAMP)
    inv_freq *= ROPE_LOW_SCALE + clamp(ROPE_RAMP_SLOPE * inv_freq + ROPE_RAMP_OFFSET, 0.0, 1.0) * (1.0 - ROPE_LOW_SCALE);
  float ang = p * inv_freq;
  // Vulkan leaves sin/cos precision undefined outside [-pi, pi]: reduce first (Cody-Waite, 2pi split
  // into an 8-bit head, exact times k < 2^16, and a tail).
  float k = round(ang * 0.15915494309189535);
  float r = fma(-k, 6.28125, ang);
  r = fma(-k, 0.0019353071795864769, r);
  return vec2(cos(r), sin(r));
}

#endif
