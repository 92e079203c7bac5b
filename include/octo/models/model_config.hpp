// model_config: the numbers that fix a decoder-only transformer's graph (llama, qwen2, qwen3). A plain
// literal type, so built-in configs are constexpr and the same struct is filled from a GGUF file at run time.
#pragma once

#include <cstdint>
#include <string_view>

#include "octo/graph/extents.hpp"
#include "octo/graph/ops/rope.hpp"
#include "octo/ir/enums.hpp"

namespace octo::models {

enum class arch : std::uint8_t { llama, qwen2, qwen3 };

constexpr std::string_view name(arch a) {
  switch (a) {
    case arch::llama: return "llama";
    case arch::qwen2: return "qwen2";
    case arch::qwen3: return "qwen3";
  }
  return "?";
}

struct model_config {
  std::string_view name;  // for provenance (the program's meta "model"); static storage or empty
  arch architecture = arch::llama;
  std::int64_t vocab = 0;
  std::int64_t hidden = 0;
  std::int64_t layers = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;
  std::int64_t head_dim = 0;  // Qwen3: not hidden / heads
  std::int64_t ffn = 0;
  double rope_theta = 10000.0;
  double rms_eps = 1e-5;
  bool tied_embeddings = false;  // the LM head reads token_embd.weight
  bool qkv_bias = false;         // Qwen2
  bool qk_norm = false;          // Qwen3: per-head RMSNorm of q and k before RoPE
  rope_style rope = rope_style::neox;
  // RoPE frequency scaling (Llama 3.1+: the GGUF's rope_freqs.weight, config.json's "llama3" rope
  // scaling); the default scales nothing (semantics::rope_ramp).
  semantics::rope_ramp rope_ramp{};
  std::int64_t max_ctx = 2048;   // KV cache rows
  std::int64_t trained_ctx = 0;  // the context the model was trained for (GGUF context_length); 0: unknown
  ir::dtype weight_dtype = ir::dtype::f16;  // matrices; norms and biases are f32 as in GGUF

  /// Throws (a compile error in constant evaluation) when the numbers cannot make a model.
  constexpr void check() const {
    if (vocab <= 0 || hidden <= 0 || layers <= 0 || heads <= 0 || kv_heads <= 0 || head_dim <= 0 || ffn <= 0 ||
        max_ctx <= 0)
      detail::graph_error("octo::models::model_config: every size must be positive");
    // Bounded so that every product the graphs form (heads x head_dim, vocab x hidden, ...) stays far
    // inside int64: a hostile file must not reach signed overflow.
    constexpr std::int64_t size_limit = std::int64_t(1) << 31;
    if (vocab > size_limit || hidden > size_limit || layers > size_limit || heads > size_limit ||
        kv_heads > size_limit || head_dim > size_limit || ffn > size_limit || max_ctx > size_limit)
      detail::graph_error("octo::models::model_config: a size exceeds 2^31");
    if (heads * head_dim > size_limit || kv_heads * head_dim > size_limit)
      detail::graph_error("octo::models::model_config: heads x head_dim exceeds 2^31");
    if (heads % kv_heads != 0) detail::graph_error("octo::models::model_config: heads must be a multiple of kv_heads");
    if (head_dim % 2 != 0) detail::graph_error("octo::models::model_config: head_dim must be even (RoPE pairs)");
    if (!(rope_theta > 0.0) || !(rms_eps > 0.0))
      detail::graph_error("octo::models::model_config: rope_theta and rms_eps must be positive");
    if (!(rope_ramp.low_scale > 0.0f && rope_ramp.low_scale <= 1.0f) || rope_ramp.slope != rope_ramp.slope ||
        rope_ramp.offset != rope_ramp.offset)
      detail::graph_error("octo::models::model_config: rope_ramp needs low_scale in (0, 1] and finite slope and offset");
    if (!ir::is_float(weight_dtype) && !ir::is_block_quantized(weight_dtype))
      detail::graph_error("octo::models::model_config: weight_dtype must be float or block-quantized");
  }
};

}  // namespace octo::models
