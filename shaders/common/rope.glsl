// RoPE's rotation for dimension pair i of a head at position p, as the reference (and Hugging Face)
// compute it in f32: inv_freq = 1 / theta^(2i/n_rot), angle = p * inv_freq. Shared by shaders/rope.comp
// and the fused GEMV epilogue (shaders/gemv.comp).
#ifndef OCTO_ROPE_GLSL
#define OCTO_ROPE_GLSL

vec2 rope_cos_sin(float p, uint i, uint n_rot, float log2_theta) {
  float inv_freq = 1.0 / exp2(float(2u * i) / float(n_rot) * log2_theta);
  float ang = p * inv_freq;
  // Vulkan leaves sin/cos precision undefined outside [-pi, pi]: reduce first (Cody-Waite, 2pi split
  // into an 8-bit head, exact times k < 2^16, and a tail).
  float k = round(ang * 0.15915494309189535);
  float r = fma(-k, 6.28125, ang);
  r = fma(-k, 0.0019353071795864769, r);
  return vec2(cos(r), sin(r));
}

#endif
