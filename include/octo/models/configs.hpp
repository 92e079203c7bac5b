// Built-in model configs at their published shapes (Hugging Face config.json of each model), and a
// tiny llama shaped like Karpathy's stories260K. Weight dtype f16 unless said; change it by copy.
#pragma once

#include "octo/models/model_config.hpp"

namespace octo::models {

inline constexpr model_config qwen2_5_0_5b{
    .name = "Qwen2.5-0.5B", .architecture = arch::qwen2, .vocab = 151936, .hidden = 896, .layers = 24,
    .heads = 14, .kv_heads = 2, .head_dim = 64, .ffn = 4864, .rope_theta = 1000000.0, .rms_eps = 1e-6,
    .tied_embeddings = true, .qkv_bias = true, .qk_norm = false, .rope = rope_style::neox, .max_ctx = 32768};

inline constexpr model_config qwen2_5_1_5b{
    .name = "Qwen2.5-1.5B", .architecture = arch::qwen2, .vocab = 151936, .hidden = 1536, .layers = 28,
    .heads = 12, .kv_heads = 2, .head_dim = 128, .ffn = 8960, .rope_theta = 1000000.0, .rms_eps = 1e-6,
    .tied_embeddings = true, .qkv_bias = true, .qk_norm = false, .rope = rope_style::neox, .max_ctx = 32768};

inline constexpr model_config qwen2_5_7b{
    .name = "Qwen2.5-7B", .architecture = arch::qwen2, .vocab = 152064, .hidden = 3584, .layers = 28,
    .heads = 28, .kv_heads = 4, .head_dim = 128, .ffn = 18944, .rope_theta = 1000000.0, .rms_eps = 1e-6,
    .tied_embeddings = false, .qkv_bias = true, .qk_norm = false, .rope = rope_style::neox, .max_ctx = 32768};

inline constexpr model_config qwen3_0_6b{
    .name = "Qwen3-0.6B", .architecture = arch::qwen3, .vocab = 151936, .hidden = 1024, .layers = 28,
    .heads = 16, .kv_heads = 8, .head_dim = 128, .ffn = 3072, .rope_theta = 1000000.0, .rms_eps = 1e-6,
    .tied_embeddings = true, .qkv_bias = false, .qk_norm = true, .rope = rope_style::neox, .max_ctx = 40960};

inline constexpr model_config qwen3_8b{
    .name = "Qwen3-8B", .architecture = arch::qwen3, .vocab = 151936, .hidden = 4096, .layers = 36,
    .heads = 32, .kv_heads = 8, .head_dim = 128, .ffn = 12288, .rope_theta = 1000000.0, .rms_eps = 1e-6,
    .tied_embeddings = false, .qkv_bias = false, .qk_norm = true, .rope = rope_style::neox, .max_ctx = 40960};

/// Llama 3.1+'s RoPE scaling ("llama3": low and high frequency factors 1 and 4 over 8192 original
/// positions, as Llama 3.1 8B and 3.2 1B ship it) as the ramp semantics::rope_ramp defines.
constexpr semantics::rope_ramp llama3_rope_ramp(double factor) {
  constexpr double pi = 3.141592653589793, original = 8192.0, low = 1.0, high = 4.0;
  return {static_cast<float>(1.0 / factor), static_cast<float>(original / (2.0 * pi * (high - low))),
          static_cast<float>(-low / (high - low))};
}

/// Llama 3.2 1B and Llama 3.1 8B as their GGUFs load: interleaved RoPE (the converter permutes q and k for
/// it), the llama3 scaling (factor 32 and 8).
inline constexpr model_config llama3_2_1b{
    .name = "Llama-3.2-1B", .architecture = arch::llama, .vocab = 128256, .hidden = 2048, .layers = 16,
    .heads = 32, .kv_heads = 8, .head_dim = 64, .ffn = 8192, .rope_theta = 500000.0, .rms_eps = 1e-5,
    .tied_embeddings = true, .qkv_bias = false, .qk_norm = false, .rope = rope_style::interleaved,
    .rope_ramp = llama3_rope_ramp(32.0), .max_ctx = 131072};

inline constexpr model_config llama3_1_8b{
    .name = "Llama-3.1-8B", .architecture = arch::llama, .vocab = 128256, .hidden = 4096, .layers = 32,
    .heads = 32, .kv_heads = 8, .head_dim = 128, .ffn = 14336, .rope_theta = 500000.0, .rms_eps = 1e-5,
    .tied_embeddings = false, .qkv_bias = false, .qk_norm = false, .rope = rope_style::interleaved,
    .rope_ramp = llama3_rope_ramp(8.0), .max_ctx = 131072};

/// stories260K (llama2.c TinyStories, as GGUF): F32 weights, untied head, interleaved RoPE as GGUF
/// llama stores q/k permuted for it.
inline constexpr model_config stories260k{
    .name = "stories260K", .architecture = arch::llama, .vocab = 512, .hidden = 64, .layers = 5, .heads = 8,
    .kv_heads = 4, .head_dim = 8, .ffn = 172, .rope_theta = 10000.0, .rms_eps = 1e-5, .tied_embeddings = false,
    .qkv_bias = false, .qk_norm = false, .rope = rope_style::interleaved, .max_ctx = 2048,
    .weight_dtype = ir::dtype::f32};

}  // namespace octo::models
