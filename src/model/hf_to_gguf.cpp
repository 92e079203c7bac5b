// Hugging Face → GGUF conversion for llama / qwen2 / qwen3: config.json to llama.cpp's metadata keys,
// safetensors to llama.cpp's tensor names (shapes checked, llama q/k permuted), the tokenizer to
// tokenizer.ggml.*, weights encoded with quant_blocks.
#include "octo/model_file/hf_to_gguf.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "octo/detail/quant_blocks.hpp"
#include "octo/error.hpp"
#include "octo/model_file/gguf_writer.hpp"
#include "octo/model_file/safetensors.hpp"
#include "octo/model_file/vocabulary.hpp"

namespace octo::model_file {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

json read_json(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw error("convert: cannot open '" + path.string() + "'");
  std::ostringstream s;
  s << in.rdbuf();
  try {
    return json::parse(s.str());
  } catch (const json::exception& e) {
    throw error("convert: '" + path.string() + "' is not valid JSON: " + e.what());
  }
}

struct hf_config {
  std::string hf_arch, arch;
  std::int64_t vocab = 0, hidden = 0, ffn = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, ctx = 0;
  double eps = 1e-6, rope_theta = 10000.0;
  bool tied = false, qkv_bias = false;
  std::int64_t bos = -1, eos = -1, pad = -1;  // ids config.json names (fallbacks for the tokenizer's)
};

std::int64_t get_int(const json& c, const char* key, const fs::path& path, std::int64_t fallback = -1) {
  if (!c.contains(key) || c[key].is_null()) {
    if (fallback >= 0) return fallback;
    throw error("convert: '" + path.string() + "' lacks \"" + key + "\"");
  }
  if (!c[key].is_number_integer() || c[key].get<std::int64_t>() <= 0 || c[key].get<std::int64_t>() > (1ll << 32))
    throw error("convert: '" + path.string() + "': \"" + key + "\" is not a positive integer");
  return c[key].get<std::int64_t>();
}

// A special id in config.json: an integer, or a list whose first one counts; -1 when absent.
std::int64_t special_id(const json& c, const char* key) {
  if (!c.contains(key)) return -1;
  const json& v = c[key];
  if (v.is_number_integer()) return v.get<std::int64_t>();
  if (v.is_array() && !v.empty() && v[0].is_number_integer()) return v[0].get<std::int64_t>();
  return -1;
}

hf_config read_config(const fs::path& folder) {
  const auto path = folder / "config.json";
  const json c = read_json(path);
  if (!c.is_object()) throw error("convert: '" + path.string() + "' is not a JSON object");
  hf_config h;
  if (!c.contains("architectures") || !c["architectures"].is_array() || c["architectures"].empty() ||
      !c["architectures"][0].is_string())
    throw error("convert: '" + path.string() + "' names no \"architectures\"");
  h.hf_arch = c["architectures"][0].get<std::string>();
  if (h.hf_arch == "LlamaForCausalLM") h.arch = "llama";
  else if (h.hf_arch == "Qwen2ForCausalLM") h.arch = "qwen2";
  else if (h.hf_arch == "Qwen3ForCausalLM") h.arch = "qwen3";
  else throw error("convert: unknown architecture '" + h.hf_arch +
                   "' (supported: LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM)");
  h.vocab = get_int(c, "vocab_size", path);
  h.hidden = get_int(c, "hidden_size", path);
  h.ffn = get_int(c, "intermediate_size", path);
  h.layers = get_int(c, "num_hidden_layers", path);
  h.heads = get_int(c, "num_attention_heads", path);
  h.kv_heads = get_int(c, "num_key_value_heads", path, h.heads);
  h.ctx = get_int(c, "max_position_embeddings", path, 2048);
  h.head_dim = get_int(c, "head_dim", path, h.hidden % h.heads == 0 ? h.hidden / h.heads : 0);
  if (h.head_dim <= 0) throw error("convert: hidden_size is not a multiple of num_attention_heads and no head_dim is given");
  if (h.heads % h.kv_heads != 0) throw error("convert: num_attention_heads is not a multiple of num_key_value_heads");
  if (h.arch == "llama" && h.head_dim % 2 != 0) throw error("convert: llama head_dim must be even");
  if (c.contains("rms_norm_eps") && c["rms_norm_eps"].is_number()) h.eps = c["rms_norm_eps"].get<double>();
  // transformers 5 moves rope_theta into rope_parameters.
  const json* rope = c.contains("rope_parameters") && c["rope_parameters"].is_object() ? &c["rope_parameters"] : nullptr;
  if (c.contains("rope_theta") && c["rope_theta"].is_number()) h.rope_theta = c["rope_theta"].get<double>();
  else if (rope && rope->contains("rope_theta") && (*rope)["rope_theta"].is_number())
    h.rope_theta = (*rope)["rope_theta"].get<double>();
  const json* scaling = c.contains("rope_scaling") && c["rope_scaling"].is_object() ? &c["rope_scaling"] : rope;
  if (scaling) {
    std::string type = scaling->value("rope_type", scaling->value("type", std::string("default")));
    if (type != "default")
      throw error("convert: RoPE scaling '" + type + "' is not supported (only plain RoPE)");
  }
  if (c.contains("hidden_act") && c["hidden_act"].is_string() && c["hidden_act"].get<std::string>() != "silu")
    throw error("convert: hidden_act '" + c["hidden_act"].get<std::string>() + "' is not supported (only silu)");
  if (c.contains("use_sliding_window") && c["use_sliding_window"].is_boolean() && c["use_sliding_window"].get<bool>())
    throw error("convert: sliding-window attention is not supported");
  // Hugging Face's defaults: llama and qwen3 untied unless said; qwen2 as well.
  h.tied = c.contains("tie_word_embeddings") && c["tie_word_embeddings"].is_boolean() && c["tie_word_embeddings"].get<bool>();
  if (h.arch == "qwen2") h.qkv_bias = true;
  else if (c.contains("attention_bias") && c["attention_bias"].is_boolean()) h.qkv_bias = c["attention_bias"].get<bool>();
  if (c.contains("mlp_bias") && c["mlp_bias"].is_boolean() && c["mlp_bias"].get<bool>())
    throw error("convert: mlp_bias is not supported");
  h.bos = special_id(c, "bos_token_id");
  h.eos = special_id(c, "eos_token_id");
  h.pad = special_id(c, "pad_token_id");
  return h;
}

// A special token named in tokenizer_config.json / special_tokens_map.json.
std::string token_name(const json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_object() && j.contains("content") && j["content"].is_string()) return j["content"].get<std::string>();
  return {};
}

vocabulary read_tokenizer(const fs::path& folder, const hf_config& h) {
  vocabulary v;
  if (fs::exists(folder / "tokenizer.json")) {
    v = load_tokenizer_json(folder / "tokenizer.json");
  } else if (fs::exists(folder / "vocab.json")) {
    v = load_hf_vocabulary(folder);
  } else if (fs::exists(folder / "tokenizer.model")) {
    throw error("convert: '" + folder.string() +
                "' has only tokenizer.model (SentencePiece protobuf), which octo does not read; add tokenizer.json");
  } else {
    throw error("convert: '" + folder.string() + "' has no tokenizer (tokenizer.json or vocab.json + merges.txt)");
  }
  // Special tokens as llama.cpp's SpecialVocab finds them: tokenizer_config.json, then
  // special_tokens_map.json by name, then config.json's ids.
  json config = json::object(), map = json::object();
  if (fs::exists(folder / "tokenizer_config.json")) config = read_json(folder / "tokenizer_config.json");
  if (fs::exists(folder / "special_tokens_map.json")) map = read_json(folder / "special_tokens_map.json");
  auto by_name = [&](const char* key) -> std::int64_t {
    std::string name;
    if (config.is_object() && config.contains(key)) name = token_name(config[key]);
    if (name.empty() && map.is_object() && map.contains(key)) name = token_name(map[key]);
    if (name.empty()) return -1;
    for (std::size_t i = 0; i < v.tokens.size(); ++i)
      if (v.tokens[i] == name) return std::int64_t(i);
    throw error("convert: special token " + std::string(key) + " '" + name + "' is not in the vocabulary");
  };
  auto pick = [&](std::int32_t& id, const char* key, std::int64_t from_config) {
    std::int64_t named = by_name(key);
    if (named < 0 && id >= 0) return;  // the tokenizer file's own (BOS of its post-processor)
    if (named < 0) named = from_config;
    if (named >= std::int64_t(v.tokens.size()) && named >= h.vocab)
      throw error("convert: " + std::string(key) + " id " + std::to_string(named) + " is outside the vocabulary");
    id = std::int32_t(named);
  };
  pick(v.bos, "bos_token", h.bos);
  pick(v.eos, "eos_token", h.eos);
  pick(v.pad, "pad_token", h.pad);
  if (config.is_object() && config.contains("add_bos_token") && config["add_bos_token"].is_boolean())
    v.add_bos = config["add_bos_token"].get<bool>();
  if (config.is_object() && config.contains("chat_template") && config["chat_template"].is_string())
    v.chat_template = config["chat_template"].get<std::string>();
  if (v.chat_template.empty() && fs::exists(folder / "chat_template.jinja")) {
    std::ifstream in(folder / "chat_template.jinja", std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    v.chat_template = s.str();
  }
  // The embedding may have more rows than the tokenizer has tokens (Qwen pads to a multiple of 128):
  // pad as llama.cpp does.
  if (std::int64_t(v.tokens.size()) > h.vocab)
    throw error("convert: the tokenizer has " + std::to_string(v.tokens.size()) + " tokens but vocab_size is " +
                std::to_string(h.vocab));
  while (std::int64_t(v.tokens.size()) < h.vocab) {
    v.tokens.push_back("[PAD" + std::to_string(v.tokens.size()) + "]");
    v.token_types.push_back(token_type::unused);
    if (!v.scores.empty()) v.scores.push_back(-1e9f);
  }
  return v;
}

std::string shape_text(const std::vector<std::int64_t>& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(s[i]);
  }
  out += "]";
  return out;
}

// llama.cpp's LlamaModel.permute: within each head, rows (j * head_dim/2 + i) move to (i * 2 + j), turning
// Hugging Face's rotate-half RoPE layout into GGML's interleaved pairs.
std::vector<float> permute_rows(const std::vector<float>& w, std::int64_t rows, std::int64_t cols, std::int64_t heads) {
  std::vector<float> out(w.size());
  const std::int64_t hd = rows / heads, half = hd / 2;
  for (std::int64_t h = 0; h < heads; ++h)
    for (std::int64_t j = 0; j < 2; ++j)
      for (std::int64_t i = 0; i < half; ++i) {
        const std::int64_t src = h * hd + j * half + i, dst = h * hd + i * 2 + j;
        std::copy_n(w.begin() + src * cols, cols, out.begin() + dst * cols);
      }
  return out;
}

std::uint32_t file_type_of(ir::dtype t) {
  switch (t) {
    case ir::dtype::f32: return 0;
    case ir::dtype::f16: return 1;
    case ir::dtype::q4_0: return 2;
    case ir::dtype::q4_1: return 3;
    case ir::dtype::q8_0: return 7;
    case ir::dtype::q5_0: return 8;
    case ir::dtype::q5_1: return 9;
    case ir::dtype::q2_k: return 10;
    case ir::dtype::q3_k: return 11;  // Q3_K_S: every matrix Q3_K
    case ir::dtype::q4_k: return 14;  // Q4_K_S
    case ir::dtype::q5_k: return 16;  // Q5_K_S
    case ir::dtype::q6_k: return 18;
    case ir::dtype::bf16: return 32;
    default: return 0;
  }
}

class converter {
 public:
  converter(const safetensors_model& st, const hf_convert_options& o, gguf_writer& w) : st_(st), o_(o), w_(w) {}

  // Adds HF tensor `hf` as GGUF `name`, checking its row-major shape; `heads` > 0 permutes rows.
  void add(const std::string& hf, const std::string& name, std::vector<std::int64_t> shape, std::int64_t heads = 0) {
    const safetensors_tensor& t = st_.get(hf);
    used_.insert(hf);
    if (t.shape != shape)
      throw error("convert: tensor '" + hf + "' has shape " + shape_text(t.shape) + ", expected " + shape_text(shape));
    if (!t.type)
      throw error("convert: tensor '" + hf + "' has unsupported dtype " + t.dtype_name + " (F32, F16, BF16 are read)");
    std::vector<float> v = to_f32(t);
    const std::int64_t cols = shape.back(), rows = t.elements() / std::max<std::int64_t>(cols, 1);
    if (heads > 0) v = permute_rows(v, rows, cols, heads);
    ir::dtype type = ir::dtype::f32;
    if (shape.size() == 2) {
      type = o_.type;
      if (cols % ir::layout(type).block_elems != 0) type = ir::dtype::f16;
    }
    std::vector<std::byte> bytes(std::size_t(ir::nbytes(type, t.elements())));
    for (std::int64_t r = 0; r < rows; ++r)
      detail::quantize_row(type, v.data() + r * cols,
                           reinterpret_cast<std::uint8_t*>(bytes.data()) + r * ir::nbytes(type, cols), cols);
    std::vector<std::int64_t> dims(shape.rbegin(), shape.rend());
    if (o_.log) o_.log(name + " " + shape_text(dims) + " " + std::string(ir::name(type)));
    w_.add_tensor(name, type, std::move(dims), bytes);
  }

  void check_all_used() const {
    for (const auto& n : st_.names())
      if (!used_.contains(n) && !n.ends_with("rotary_emb.inv_freq"))
        throw error("convert: unexpected tensor '" + n + "' (not part of this architecture's layout)");
  }
  void skip(const std::string& hf) { used_.insert(hf); }

 private:
  const safetensors_model& st_;
  const hf_convert_options& o_;
  gguf_writer& w_;
  std::set<std::string> used_;
};

}  // namespace

ir::dtype parse_weight_type(std::string_view s) {
  std::string l(s);
  for (auto& c : l) c = char(std::tolower(static_cast<unsigned char>(c)));
  static const std::map<std::string, ir::dtype> types = {
      {"f32", ir::dtype::f32},   {"f16", ir::dtype::f16},   {"bf16", ir::dtype::bf16}, {"q8_0", ir::dtype::q8_0},
      {"q4_0", ir::dtype::q4_0}, {"q4_1", ir::dtype::q4_1}, {"q5_0", ir::dtype::q5_0}, {"q5_1", ir::dtype::q5_1},
      {"q2_k", ir::dtype::q2_k}, {"q3_k", ir::dtype::q3_k}, {"q4_k", ir::dtype::q4_k}, {"q5_k", ir::dtype::q5_k},
      {"q6_k", ir::dtype::q6_k}};
  auto it = types.find(l);
  if (it == types.end())
    throw error("unknown weight type '" + std::string(s) +
                "' (choose f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k)");
  return it->second;
}

hf_convert_summary convert_hf_to_gguf(const fs::path& folder, const fs::path& out, const hf_convert_options& o) {
  if (!fs::is_directory(folder)) throw error("convert: '" + folder.string() + "' is not a folder");
  if (!ir::is_block_quantized(o.type) && o.type != ir::dtype::f32 && o.type != ir::dtype::f16 && o.type != ir::dtype::bf16)
    throw error("convert: " + std::string(ir::name(o.type)) + " is not a weight type");
  const hf_config h = read_config(folder);
  const vocabulary v = read_tokenizer(folder, h);
  const safetensors_model st = safetensors_model::open(folder);

  gguf_writer w;
  const std::string& a = h.arch;
  std::string name = o.name;
  if (name.empty()) name = fs::absolute(folder).lexically_normal().filename().string();
  if (name.empty()) name = fs::absolute(folder).lexically_normal().parent_path().filename().string();
  w.set_string("general.architecture", a);
  w.set_string("general.name", name);
  w.set_u32("general.file_type", file_type_of(o.type));
  w.set_u32("general.quantization_version", 2);
  w.set_u32(a + ".block_count", std::uint32_t(h.layers));
  w.set_u32(a + ".context_length", std::uint32_t(h.ctx));
  w.set_u32(a + ".embedding_length", std::uint32_t(h.hidden));
  w.set_u32(a + ".feed_forward_length", std::uint32_t(h.ffn));
  w.set_u32(a + ".attention.head_count", std::uint32_t(h.heads));
  w.set_u32(a + ".attention.head_count_kv", std::uint32_t(h.kv_heads));
  w.set_f32(a + ".rope.freq_base", float(h.rope_theta));
  w.set_f32(a + ".attention.layer_norm_rms_epsilon", float(h.eps));
  if (a == "llama") {
    w.set_u32(a + ".vocab_size", std::uint32_t(h.vocab));
    w.set_u32(a + ".rope.dimension_count", std::uint32_t(h.head_dim));
  }
  if (a == "qwen3" || h.head_dim * h.heads != h.hidden) {
    w.set_u32(a + ".attention.key_length", std::uint32_t(h.head_dim));
    w.set_u32(a + ".attention.value_length", std::uint32_t(h.head_dim));
  }

  const bool spm = v.kind == vocabulary::model::llama_spm;
  w.set_string("tokenizer.ggml.model", spm ? "llama" : "gpt2");
  if (!spm) w.set_string("tokenizer.ggml.pre", v.pre);
  w.set("tokenizer.ggml.tokens", gguf_value::array_of_strings(v.tokens));
  if (spm) w.set("tokenizer.ggml.scores", gguf_value::array_of_f32(v.scores));
  std::vector<std::int32_t> types = v.token_types;
  if (types.empty()) types.assign(v.tokens.size(), token_type::normal);
  w.set("tokenizer.ggml.token_type", gguf_value::array_of_i32(types));
  if (!spm) w.set("tokenizer.ggml.merges", gguf_value::array_of_strings(v.merges));
  if (v.bos >= 0) w.set_u32("tokenizer.ggml.bos_token_id", std::uint32_t(v.bos));
  if (v.eos >= 0) w.set_u32("tokenizer.ggml.eos_token_id", std::uint32_t(v.eos));
  if (v.pad >= 0) w.set_u32("tokenizer.ggml.padding_token_id", std::uint32_t(v.pad));
  w.set_bool("tokenizer.ggml.add_bos_token", v.add_bos && v.bos >= 0);
  if (spm) w.set_bool("tokenizer.ggml.add_space_prefix", v.add_space_prefix);
  if (!v.chat_template.empty()) w.set_string("tokenizer.chat_template", v.chat_template);

  converter c(st, o, w);
  const std::int64_t d = h.hidden, hd = h.head_dim, q_rows = h.heads * hd, kv_rows = h.kv_heads * hd;
  const bool permute = a == "llama";
  // Tied checkpoints saved by safetensors' deduplication may keep only lm_head.weight.
  const bool embed_in_head = h.tied && !st.find("model.embed_tokens.weight") && st.find("lm_head.weight");
  c.add(embed_in_head ? "lm_head.weight" : "model.embed_tokens.weight", "token_embd.weight", {h.vocab, d});
  for (std::int64_t l = 0; l < h.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".", b = "blk." + std::to_string(l) + ".";
    c.add(p + "input_layernorm.weight", b + "attn_norm.weight", {d});
    c.add(p + "self_attn.q_proj.weight", b + "attn_q.weight", {q_rows, d}, permute ? h.heads : 0);
    if (h.qkv_bias) c.add(p + "self_attn.q_proj.bias", b + "attn_q.bias", {q_rows}, permute ? h.heads : 0);
    c.add(p + "self_attn.k_proj.weight", b + "attn_k.weight", {kv_rows, d}, permute ? h.kv_heads : 0);
    if (h.qkv_bias) c.add(p + "self_attn.k_proj.bias", b + "attn_k.bias", {kv_rows}, permute ? h.kv_heads : 0);
    c.add(p + "self_attn.v_proj.weight", b + "attn_v.weight", {kv_rows, d});
    if (h.qkv_bias) c.add(p + "self_attn.v_proj.bias", b + "attn_v.bias", {kv_rows});
    c.add(p + "self_attn.o_proj.weight", b + "attn_output.weight", {d, q_rows});
    if (a == "qwen3") {
      c.add(p + "self_attn.q_norm.weight", b + "attn_q_norm.weight", {hd});
      c.add(p + "self_attn.k_norm.weight", b + "attn_k_norm.weight", {hd});
    }
    c.add(p + "post_attention_layernorm.weight", b + "ffn_norm.weight", {d});
    c.add(p + "mlp.gate_proj.weight", b + "ffn_gate.weight", {h.ffn, d});
    c.add(p + "mlp.up_proj.weight", b + "ffn_up.weight", {h.ffn, d});
    c.add(p + "mlp.down_proj.weight", b + "ffn_down.weight", {d, h.ffn});
  }
  c.add("model.norm.weight", "output_norm.weight", {d});
  if (h.tied) {
    if (st.find("lm_head.weight")) c.skip("lm_head.weight");  // the embedding itself, or a saved copy
  } else {
    c.add("lm_head.weight", "output.weight", {h.vocab, d});
  }
  c.check_all_used();
  w.write(out);
  hf_convert_summary s;
  s.architecture = a;
  s.tensors = std::int64_t(w.tensor_count());
  s.file_bytes = fs::file_size(out);
  return s;
}

}  // namespace octo::model_file
