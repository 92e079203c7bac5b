// Hugging Face → GGUF conversion for llama / qwen2 / qwen3: config.json to llama.cpp's metadata keys,
// safetensors to llama.cpp's tensor names (shapes checked, llama q/k permuted), the tokenizer to
// tokenizer.ggml.*, weights encoded with quant_blocks (llama.cpp's type mixtures) and streamed to the
// file tensor by tensor.
#include "octo/model_file/hf_to_gguf.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <exception>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <sys/mman.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "octo/detail/quant_blocks.hpp"
#include "octo/error.hpp"
#include "octo/file_io.hpp"
#include "octo/model_file/gguf_writer.hpp"
#include "octo/model_file/safetensors.hpp"
#include "octo/model_file/vocabulary.hpp"

namespace octo::model_file {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

json read_json(const fs::path& path) {
  const std::string text = read_file_text(path, std::uint64_t(1) << 30);
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw error("convert: '" + path.string() + "' is not valid JSON: " + octo::library_text(e.what()));
  }
}

struct hf_config {
  std::string hf_arch, arch;
  std::int64_t vocab = 0, hidden = 0, ffn = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, ctx = 0;
  double eps = 1e-6, rope_theta = 10000.0;
  // Llama 3's RoPE scaling ("rope_type": "llama3"): factor 0 where there is none.
  double rope_factor = 0.0, rope_low_freq_factor = 0.0, rope_high_freq_factor = 0.0;
  std::int64_t rope_original_ctx = 0;
  double rope_linear_factor = 0.0;  // "linear": positions divided by it (0: none)
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
    if (type == "llama3") {
      const auto number = [&](const char* k) {
        if (!scaling->contains(k) || !(*scaling)[k].is_number())
          throw error("convert: '" + path.string() + "': the llama3 RoPE scaling lacks a number \"" + k + "\"");
        return (*scaling)[k].get<double>();
      };
      h.rope_factor = number("factor");
      h.rope_low_freq_factor = number("low_freq_factor");
      h.rope_high_freq_factor = number("high_freq_factor");
      const double orig = number("original_max_position_embeddings");
      if (!(h.rope_factor >= 1.0 && h.rope_factor < 1e6) || !(h.rope_low_freq_factor > 0.0) ||
          !(h.rope_high_freq_factor > h.rope_low_freq_factor && h.rope_high_freq_factor < 1e6) || !(orig >= 1.0 && orig < 1e12))
        throw error("convert: '" + path.string() + "': the llama3 RoPE scaling needs factor >= 1, 0 < low_freq_factor < "
                    "high_freq_factor and original_max_position_embeddings >= 1");
      h.rope_original_ctx = static_cast<std::int64_t>(orig);
    } else if (type == "linear") {
      if (!scaling->contains("factor") || !(*scaling)["factor"].is_number() ||
          !((*scaling)["factor"].get<double>() >= 1.0 && (*scaling)["factor"].get<double>() < 1e6))
        throw error("convert: '" + path.string() + "': the linear RoPE scaling needs a \"factor\" in [1, 1e6)");
      h.rope_linear_factor = (*scaling)["factor"].get<double>();
    } else if (type != "default") {
      throw error("convert: RoPE scaling '" + type + "' is not supported (plain RoPE, linear and llama3's)");
    }
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
    v.chat_template = read_file_text(folder / "chat_template.jinja", std::uint64_t(1) << 24);
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
    case ir::dtype::iq4_nl: return 25;
    case ir::dtype::iq4_xs: return 30;
    case ir::dtype::bf16: return 32;
    default: return 0;
  }
}

// ---- which type each tensor gets ----------------------------------------------------------------

// What a 2-D matrix is, as far as llama.cpp's type rule cares.
enum class role { head, embedding, attn_v, ffn_down, other };

// llama.cpp's layer pick for the "_M" mixtures: the first and last eighth of the layers, and every
// third layer between them, get more bits.
bool use_more_bits(std::int64_t layer, std::int64_t layers) {
  return layer < layers / 8 || layer >= 7 * layers / 8 || (layer - layers / 8) % 3 == 2;
}

// llama.cpp's replacement for a type whose blocks do not tile a row of `cols`; F16 as the last resort.
ir::dtype fit_row(ir::dtype t, std::int64_t cols) {
  if (cols % ir::layout(t).block_elems == 0) return t;
  switch (t) {
    case ir::dtype::q4_k: t = ir::dtype::q5_0; break;
    case ir::dtype::q5_k: t = ir::dtype::q5_1; break;
    case ir::dtype::q6_k: t = ir::dtype::q8_0; break;
    case ir::dtype::q2_k:
    case ir::dtype::q3_k:
    case ir::dtype::iq4_xs: t = ir::dtype::iq4_nl; break;  // a 32-element block, as llama.cpp picks
    default: t = ir::dtype::f16; break;
  }
  return cols % ir::layout(t).block_elems == 0 ? t : ir::dtype::f16;
}

ir::dtype matrix_type(const hf_convert_options& o, role r, std::int64_t layer, std::int64_t layers, std::int64_t cols) {
  ir::dtype t = o.type;
  if (o.mix == weight_mix::k_medium) {
    if (r == role::head) t = cols % ir::layout(o.type).block_elems != 0 ? ir::dtype::q8_0 : ir::dtype::q6_k;
    else if ((r == role::attn_v || r == role::ffn_down) && use_more_bits(layer, layers)) t = ir::dtype::q6_k;
  }
  return fit_row(t, cols);
}

// ---- streaming conversion -----------------------------------------------------------------------

// One tensor to write: where it comes from and what it becomes.
struct planned_tensor {
  const safetensors_tensor* src = nullptr;  // null: `values` (F32) are the data
  std::vector<float> values;
  std::string name;
  std::vector<std::int64_t> shape;  // row-major (HF order)
  ir::dtype type = ir::dtype::f32;
  std::int64_t heads = 0;  // > 0: llama's q/k row permutation over this many heads
  std::int64_t rows() const { return shape.size() == 2 ? shape[0] : 1; }
  std::int64_t cols() const { return shape.back(); }
};

// llama.cpp's LlamaModel.permute: within each head, HF row (j * hd/2 + i) becomes row (i * 2 + j),
// turning Hugging Face's rotate-half RoPE layout into GGML's interleaved pairs. Returns the HF row that
// lands at GGUF row `r`.
std::int64_t source_row(std::int64_t r, std::int64_t rows, std::int64_t heads) {
  if (heads <= 0) return r;
  const std::int64_t hd = rows / heads, h = r / hd, pos = r % hd;
  return h * hd + (pos % 2) * (hd / 2) + pos / 2;
}

void row_to_f32(const safetensors_tensor& t, std::int64_t row, std::int64_t cols, float* out) {
  const std::byte* base = t.data.data();
  switch (*t.type) {
    case ir::dtype::f32:
      std::memcpy(out, base + row * cols * 4, std::size_t(cols) * 4);
      break;
    case ir::dtype::f16: {
      const auto* p = reinterpret_cast<const std::uint8_t*>(base + row * cols * 2);
      for (std::int64_t c = 0; c < cols; ++c) out[c] = detail::qb_load_f16(p + 2 * c);
      break;
    }
    case ir::dtype::bf16: {
      const auto* p = reinterpret_cast<const std::uint8_t*>(base + row * cols * 2);
      for (std::int64_t c = 0; c < cols; ++c) out[c] = detail::bf16_to_f32(detail::qb_load_u16(p + 2 * c));
      break;
    }
    default: throw error("convert: tensor '" + t.name + "' has unsupported dtype " + t.dtype_name);
  }
}

// Lets the kernel drop source pages once converted: the mapping is read-only and file-backed, so a
// page touched again is simply faulted back in from the page cache, and a 15 GB checkpoint never
// accumulates in the converter's resident set.
void release_pages(const std::byte* p, std::size_t n) {
  if (n == 0) return;
  const auto page = std::uintptr_t(::sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<std::uintptr_t>(p) / page * page;
  const auto end = reinterpret_cast<std::uintptr_t>(p) + n;
  ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);  // advice only: failure is harmless
}

// Converts rows [r0, r1) of `p` into `out` (the rows' bytes in the file's type).
void convert_rows(const planned_tensor& p, std::int64_t r0, std::int64_t r1, std::uint8_t* out) {
  const std::int64_t cols = p.cols(), row_bytes = ir::nbytes(p.type, cols);
  std::vector<float> row(static_cast<std::size_t>(cols));
  for (std::int64_t r = r0; r < r1; ++r) {
    row_to_f32(*p.src, source_row(r, p.rows(), p.heads), cols, row.data());
    detail::quantize_row(p.type, row.data(), out + (r - r0) * row_bytes, cols);
  }
}

// Writes `p`'s bytes to `s` in chunks of rows (about 64 MiB of output each), the rows of a chunk
// split among `threads` workers.
void stream_tensor(const planned_tensor& p, gguf_stream& s, unsigned threads, std::vector<std::uint8_t>& buf) {
  if (!p.src) return s.write(std::as_bytes(std::span(p.values)));
  const std::int64_t rows = p.rows(), row_bytes = ir::nbytes(p.type, p.cols());
  const std::int64_t chunk_rows = std::max<std::int64_t>(1, (std::int64_t(64) << 20) / std::max<std::int64_t>(row_bytes, 1));
  for (std::int64_t r0 = 0; r0 < rows; r0 += chunk_rows) {
    const std::int64_t r1 = std::min(rows, r0 + chunk_rows), n = r1 - r0;
    buf.resize(std::size_t(n * row_bytes));
    const std::int64_t workers = std::min<std::int64_t>(threads, std::max<std::int64_t>(1, n * p.cols() / 65536));
    if (workers <= 1) {
      convert_rows(p, r0, r1, buf.data());
    } else {
      std::vector<std::thread> pool;
      std::vector<std::exception_ptr> errors(static_cast<std::size_t>(workers));
      for (std::int64_t w = 0; w < workers; ++w) {
        const std::int64_t a = r0 + n * w / workers, b = r0 + n * (w + 1) / workers;
        pool.emplace_back([&, a, b, w] {
          try {
            convert_rows(p, a, b, buf.data() + (a - r0) * row_bytes);
          } catch (...) {
            errors[std::size_t(w)] = std::current_exception();
          }
        });
      }
      for (auto& t : pool) t.join();
      for (auto& e : errors)
        if (e) std::rethrow_exception(e);
    }
    s.write(std::as_bytes(std::span(buf.data(), buf.size())));
    if (p.heads == 0) {  // unpermuted rows are contiguous in the source
      const auto src_row = std::size_t(p.src->data.size() / std::size_t(rows));
      release_pages(p.src->data.data() + std::size_t(r0) * src_row, std::size_t(n) * src_row);
    }
  }
  release_pages(p.src->data.data(), p.src->data.size());
}

// Llama 3's RoPE scaling as the divisor of each frequency, as llama.cpp's converter writes
// rope_freqs.weight (Hugging Face's _compute_llama3_parameters, in double): 1 for wavelengths under
// original / high_freq_factor, factor over original / low_freq_factor, and between them
// 1 / ((1 - smooth) / factor + smooth), smooth = (original / wavelength - low) / (high - low).
std::vector<float> llama3_rope_divisors(const hf_config& h) {
  constexpr double two_pi = 6.283185307179586;
  const double orig = static_cast<double>(h.rope_original_ctx);
  const double low_wavelen = orig / h.rope_low_freq_factor, high_wavelen = orig / h.rope_high_freq_factor;
  std::vector<float> f(static_cast<std::size_t>(h.head_dim / 2));
  for (std::size_t i = 0; i < f.size(); ++i) {
    const double freq = std::pow(h.rope_theta, -static_cast<double>(2 * i) / static_cast<double>(h.head_dim));
    const double wavelen = two_pi / freq;
    double d = 1.0;
    if (wavelen > low_wavelen) {
      d = h.rope_factor;
    } else if (wavelen >= high_wavelen) {
      const double smooth = (orig / wavelen - h.rope_low_freq_factor) / (h.rope_high_freq_factor - h.rope_low_freq_factor);
      d = 1.0 / ((1.0 - smooth) / h.rope_factor + smooth);
    }
    f[i] = static_cast<float>(d);
  }
  return f;
}

class planner {
 public:
  planner(const safetensors_model& st, const hf_convert_options& o, std::int64_t layers)
      : st_(st), o_(o), layers_(layers) {}

  // Plans HF tensor `hf` as GGUF `name`, checking its row-major shape; `heads` > 0 permutes rows.
  void add(const std::string& hf, const std::string& name, std::vector<std::int64_t> shape, std::int64_t heads = 0,
           role r = role::other, std::int64_t layer = -1) {
    const safetensors_tensor& t = st_.get(hf);
    used_.insert(hf);
    if (t.shape != shape)
      throw error("convert: tensor '" + hf + "' has shape " + shape_text(t.shape) + ", expected " + shape_text(shape));
    if (!t.type)
      throw error("convert: tensor '" + hf + "' has unsupported dtype " + t.dtype_name + " (F32, F16, BF16 are read)");
    planned_tensor p;
    p.src = &t;
    p.name = name;
    p.shape = std::move(shape);
    p.heads = heads;
    p.type = p.shape.size() == 2 ? matrix_type(o_, r, layer, layers_, p.cols()) : ir::dtype::f32;
    plan_.push_back(std::move(p));
  }

  // Plans a vector made here (not read from the checkpoint) as GGUF F32 tensor `name`.
  void add_values(const std::string& name, std::vector<float> values) {
    planned_tensor p;
    p.name = name;
    p.shape = {static_cast<std::int64_t>(values.size())};
    p.values = std::move(values);
    plan_.push_back(std::move(p));
  }

  void check_all_used() const {
    for (const auto& n : st_.names())
      if (!used_.contains(n) && !n.ends_with("rotary_emb.inv_freq"))
        throw error("convert: unexpected tensor '" + n + "' (not part of this architecture's layout)");
  }
  void skip(const std::string& hf) { used_.insert(hf); }
  const std::vector<planned_tensor>& plan() const { return plan_; }

 private:
  const safetensors_model& st_;
  const hf_convert_options& o_;
  std::int64_t layers_;
  std::set<std::string> used_;
  std::vector<planned_tensor> plan_;
};

}  // namespace

ir::dtype parse_weight_type(std::string_view s) {
  std::string l(s);
  for (auto& c : l) c = char(std::tolower(static_cast<unsigned char>(c)));
  static const std::map<std::string, ir::dtype> types = {
      {"f32", ir::dtype::f32},   {"f16", ir::dtype::f16},   {"bf16", ir::dtype::bf16}, {"q8_0", ir::dtype::q8_0},
      {"q4_0", ir::dtype::q4_0}, {"q4_1", ir::dtype::q4_1}, {"q5_0", ir::dtype::q5_0}, {"q5_1", ir::dtype::q5_1},
      {"q2_k", ir::dtype::q2_k}, {"q3_k", ir::dtype::q3_k}, {"q4_k", ir::dtype::q4_k}, {"q5_k", ir::dtype::q5_k},
      {"q6_k", ir::dtype::q6_k}, {"iq4_nl", ir::dtype::iq4_nl}, {"iq4_xs", ir::dtype::iq4_xs}};
  auto it = types.find(l);
  if (it == types.end())
    throw error("unknown weight type '" + std::string(s) +
                "' (choose f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_nl, iq4_xs, "
                "q4_k_m, q5_k_m)");
  return it->second;
}

weight_scheme parse_weight_scheme(std::string_view s) {
  std::string l(s);
  for (auto& c : l) c = char(std::tolower(static_cast<unsigned char>(c)));
  if (l == "q4_k_m") return {ir::dtype::q4_k, weight_mix::k_medium};
  if (l == "q5_k_m") return {ir::dtype::q5_k, weight_mix::k_medium};
  return {parse_weight_type(s), weight_mix::pure};
}

std::uint32_t gguf_file_type(ir::dtype type, weight_mix mix) {
  if (mix == weight_mix::k_medium) {
    if (type == ir::dtype::q4_k) return 15;  // LLAMA_FTYPE_MOSTLY_Q4_K_M
    if (type == ir::dtype::q5_k) return 17;  // LLAMA_FTYPE_MOSTLY_Q5_K_M
    throw error("convert: the _M mixture exists for q4_k and q5_k only, not " + std::string(ir::name(type)));
  }
  return file_type_of(type);
}

hf_convert_summary convert_hf_to_gguf(const fs::path& folder, const fs::path& out, const hf_convert_options& o) {
  if (!fs::is_directory(folder)) throw error("convert: '" + folder.string() + "' is not a folder");
  if (!ir::is_block_quantized(o.type) && o.type != ir::dtype::f32 && o.type != ir::dtype::f16 && o.type != ir::dtype::bf16)
    throw error("convert: " + std::string(ir::name(o.type)) + " is not a weight type");
  const std::uint32_t file_type = gguf_file_type(o.type, o.mix);
  if (fs::is_directory(out)) throw error("convert: the output '" + out.string() + "' is a folder");
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
  w.set_u32("general.file_type", file_type);
  w.set_u32("general.quantization_version", 2);
  w.set_u32(a + ".block_count", std::uint32_t(h.layers));
  w.set_u32(a + ".context_length", std::uint32_t(h.ctx));
  w.set_u32(a + ".embedding_length", std::uint32_t(h.hidden));
  w.set_u32(a + ".feed_forward_length", std::uint32_t(h.ffn));
  w.set_u32(a + ".attention.head_count", std::uint32_t(h.heads));
  w.set_u32(a + ".attention.head_count_kv", std::uint32_t(h.kv_heads));
  w.set_f32(a + ".rope.freq_base", float(h.rope_theta));
  w.set_f32(a + ".attention.layer_norm_rms_epsilon", float(h.eps));
  if (h.rope_linear_factor > 0.0) {  // as llama.cpp's converter writes it
    w.set_string(a + ".rope.scaling.type", "linear");
    w.set_f32(a + ".rope.scaling.factor", float(h.rope_linear_factor));
  }
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

  planner c(st, o, h.layers);
  const std::int64_t d = h.hidden, hd = h.head_dim, q_rows = h.heads * hd, kv_rows = h.kv_heads * hd;
  const bool permute = a == "llama";
  // Tied checkpoints saved by safetensors' deduplication may keep only lm_head.weight.
  const bool embed_in_head = h.tied && !st.find("model.embed_tokens.weight") && st.find("lm_head.weight");
  // Tied, the embedding is also the output head, and llama.cpp gives it the head's type.
  c.add(embed_in_head ? "lm_head.weight" : "model.embed_tokens.weight", "token_embd.weight", {h.vocab, d}, 0,
        h.tied ? role::head : role::embedding);
  for (std::int64_t l = 0; l < h.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".", b = "blk." + std::to_string(l) + ".";
    c.add(p + "input_layernorm.weight", b + "attn_norm.weight", {d});
    c.add(p + "self_attn.q_proj.weight", b + "attn_q.weight", {q_rows, d}, permute ? h.heads : 0);
    if (h.qkv_bias) c.add(p + "self_attn.q_proj.bias", b + "attn_q.bias", {q_rows}, permute ? h.heads : 0);
    c.add(p + "self_attn.k_proj.weight", b + "attn_k.weight", {kv_rows, d}, permute ? h.kv_heads : 0);
    if (h.qkv_bias) c.add(p + "self_attn.k_proj.bias", b + "attn_k.bias", {kv_rows}, permute ? h.kv_heads : 0);
    c.add(p + "self_attn.v_proj.weight", b + "attn_v.weight", {kv_rows, d}, 0, role::attn_v, l);
    if (h.qkv_bias) c.add(p + "self_attn.v_proj.bias", b + "attn_v.bias", {kv_rows});
    c.add(p + "self_attn.o_proj.weight", b + "attn_output.weight", {d, q_rows});
    if (a == "qwen3") {
      c.add(p + "self_attn.q_norm.weight", b + "attn_q_norm.weight", {hd});
      c.add(p + "self_attn.k_norm.weight", b + "attn_k_norm.weight", {hd});
    }
    c.add(p + "post_attention_layernorm.weight", b + "ffn_norm.weight", {d});
    c.add(p + "mlp.gate_proj.weight", b + "ffn_gate.weight", {h.ffn, d});
    c.add(p + "mlp.up_proj.weight", b + "ffn_up.weight", {h.ffn, d});
    c.add(p + "mlp.down_proj.weight", b + "ffn_down.weight", {d, h.ffn}, 0, role::ffn_down, l);
  }
  c.add("model.norm.weight", "output_norm.weight", {d});
  if (h.rope_factor > 0.0) c.add_values("rope_freqs.weight", llama3_rope_divisors(h));
  if (h.tied) {
    if (st.find("lm_head.weight")) c.skip("lm_head.weight");  // the embedding itself, or a saved copy
  } else {
    c.add("lm_head.weight", "output.weight", {h.vocab, d}, 0, role::head);
  }
  c.check_all_used();

  // Everything is known before a byte of data is read: declare the tensors, write the header with
  // their offsets, then stream each tensor's data.
  for (const auto& p : c.plan()) w.declare_tensor(p.name, p.type, std::vector<std::int64_t>(p.shape.rbegin(), p.shape.rend()));
  unsigned threads = o.threads;
  if (threads == 0) threads = std::clamp(std::thread::hardware_concurrency(), 1u, 32u);
  const std::uint64_t total = w.file_size();
  gguf_stream s = w.stream_to(out);
  std::vector<std::uint8_t> buf;
  for (std::size_t i = 0; i < c.plan().size(); ++i) {
    const auto& p = c.plan()[i];
    if (o.log) {
      std::vector<std::int64_t> dims(p.shape.rbegin(), p.shape.rend());
      o.log(p.name + " " + shape_text(dims) + " " + std::string(ir::name(p.type)));
    }
    stream_tensor(p, s, threads, buf);
    if (o.progress) o.progress({i, c.plan().size(), p.name, p.type, s.bytes_written(), total});
  }
  s.finish();
  hf_convert_summary sum;
  sum.architecture = a;
  sum.tensors = std::int64_t(w.tensor_count());
  sum.file_bytes = fs::file_size(out);
  sum.file_type = file_type;
  return sum;
}

}  // namespace octo::model_file
