// decomposed: model_config <-> the manifest's stored config, and decompose_gguf (config_from_gguf + decompose).
#include "octo/runtime/decomposed.hpp"

#include <algorithm>

#include "octo/error.hpp"
#include "octo/runtime/model_source.hpp"

namespace octo::runtime {

stream::stored_config to_stored_config(const models::model_config& c, std::int64_t context_length) {
  stream::stored_config s;
  s.architecture = std::string(models::name(c.architecture));
  s.vocab = c.vocab;
  s.hidden = c.hidden;
  s.layers = c.layers;
  s.heads = c.heads;
  s.kv_heads = c.kv_heads;
  s.head_dim = c.head_dim;
  s.ffn = c.ffn;
  s.rope_theta = c.rope_theta;
  s.rms_eps = c.rms_eps;
  s.tied_embeddings = c.tied_embeddings;
  s.qkv_bias = c.qkv_bias;
  s.qk_norm = c.qk_norm;
  s.rope = c.rope == rope_style::interleaved ? "interleaved" : "neox";
  s.rope_low_scale = c.rope_ramp.low_scale;
  s.rope_ramp_slope = c.rope_ramp.slope;
  s.rope_ramp_offset = c.rope_ramp.offset;
  s.max_ctx = c.max_ctx;
  s.context_length = context_length;
  s.weight_dtype = c.weight_dtype;
  return s;
}

models::model_config config_from_manifest(const stream::manifest& m, std::int64_t ctx) {
  const auto& s = m.config();
  const std::string where = (m.directory() / "manifest.json").string();
  models::model_config c;
  if (s.architecture == "llama") c.architecture = models::arch::llama;
  else if (s.architecture == "qwen2") c.architecture = models::arch::qwen2;
  else if (s.architecture == "qwen3") c.architecture = models::arch::qwen3;
  else throw octo::error(where + ": unknown architecture '" + s.architecture + "' (octo runs llama, qwen2, qwen3)");
  c.vocab = s.vocab;
  c.hidden = s.hidden;
  c.layers = s.layers;
  c.heads = s.heads;
  c.kv_heads = s.kv_heads;
  c.head_dim = s.head_dim;
  c.ffn = s.ffn;
  c.rope_theta = s.rope_theta;
  c.rms_eps = s.rms_eps;
  c.tied_embeddings = s.tied_embeddings;
  c.qkv_bias = s.qkv_bias;
  c.qk_norm = s.qk_norm;
  c.rope = s.rope == "interleaved" ? rope_style::interleaved : rope_style::neox;
  c.rope_ramp = {static_cast<float>(s.rope_low_scale), static_cast<float>(s.rope_ramp_slope),
                 static_cast<float>(s.rope_ramp_offset)};
  c.weight_dtype = s.weight_dtype;
  if (ctx < 0) throw octo::error(where + ": context length " + std::to_string(ctx) + " is negative");
  c.max_ctx = ctx > 0 ? ctx : s.max_ctx;
  c.trained_ctx = s.context_length > 0 ? s.context_length : s.max_ctx;
  try {
    c.check();
  } catch (const std::exception& e) {
    throw octo::error(where + ": bad model config: " + e.what());
  }
  return c;
}

stream::decompose_outcome decompose_gguf(const std::filesystem::path& gguf, const std::filesystem::path& out_dir,
                                         const stream::decompose_options& o) {
  const auto f = model_file::gguf_file::open(gguf);
  const auto config = config_from_gguf(f);
  const auto arch = f.get_string("general.architecture");
  const std::int64_t context_length = std::int64_t(f.get_u64(arch + ".context_length"));
  return stream::decompose(f, gguf, out_dir, to_stored_config(config, context_length), o);
}

}  // namespace octo::runtime
