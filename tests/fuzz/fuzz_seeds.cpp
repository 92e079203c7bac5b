// Writes the seed corpora of the fuzz targets (run_fuzz.sh), from the real test models and data:
//   gguf_model/  tiny llama / qwen2 / qwen3 models (every weight the decode graph reads, stories260K's
//                or a small BPE vocabulary), tiny-qwen's metadata with small tensors
//   tokenizer/   tiny-qwen's and tinystories-656k's tokenizer.json, stories260K's text, token ids
//   manifest/    the manifest of the tiny llama decomposed, its zstd and raw layer files
//   safetensors/ tinystories-656k's and tiny-qwen's config.json with a small checkpoint of that shape
//   ir_json/     the decode and prefill programs of the tiny models
//   usage: fuzz_seeds SOURCE_DIR OUTPUT_DIR
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "octo/ir/json.hpp"
#include "octo/model_file/gguf.hpp"
#include "octo/model_file/gguf_writer.hpp"
#include "octo/models/decoder.hpp"
#include "octo/runtime/decomposed.hpp"

namespace fs = std::filesystem;
using namespace octo;
using model_file::gguf_value;

namespace {

fs::path out_dir;
int seeds = 0;

void save(const std::string& target, std::string_view name, std::string_view prefix, std::string_view body) {
  fs::create_directories(out_dir / target);
  std::ofstream f(out_dir / target / std::string(name), std::ios::binary);
  f.write(prefix.data(), std::streamsize(prefix.size()));
  f.write(body.data(), std::streamsize(body.size()));
  ++seeds;
}
void save(const std::string& target, std::string_view name, std::string_view prefix, const std::vector<std::byte>& b) {
  save(target, name, prefix, std::string_view(reinterpret_cast<const char*>(b.data()), b.size()));
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + p.string());
  return {std::istreambuf_iterator<char>(in), {}};
}

models::model_config tiny(models::arch a, std::int64_t vocab) {
  models::model_config c;
  c.architecture = a;
  c.vocab = vocab;
  c.hidden = 8;
  c.layers = 2;
  c.heads = 2;
  c.kv_heads = 1;
  c.head_dim = 4;
  c.ffn = 16;
  c.max_ctx = 16;
  c.rope_theta = 10000.0;
  c.rms_eps = 1e-5;
  c.weight_dtype = ir::dtype::f32;
  c.tied_embeddings = a != models::arch::llama;
  c.qkv_bias = a == models::arch::qwen2;
  c.qk_norm = a == models::arch::qwen3;
  c.rope = a == models::arch::llama ? rope_style::interleaved : rope_style::neox;
  return c;
}

// A GGUF holding every weight the config's decode graph reads (values 1/64), with `vocab_from`'s
// tokenizer.ggml.* metadata, and `rope_freqs` (Llama 3's RoPE scaling) as rope_freqs.weight where given.
std::vector<std::byte> tiny_model(const models::model_config& c, const model_file::gguf_file& vocab_from,
                                  const std::vector<float>& rope_freqs = {}) {
  model_file::gguf_writer w;
  const std::string a(models::name(c.architecture));
  w.set_string("general.architecture", a);
  w.set_u32(a + ".embedding_length", std::uint32_t(c.hidden));
  w.set_u32(a + ".block_count", std::uint32_t(c.layers));
  w.set_u32(a + ".attention.head_count", std::uint32_t(c.heads));
  w.set_u32(a + ".attention.head_count_kv", std::uint32_t(c.kv_heads));
  w.set_u32(a + ".feed_forward_length", std::uint32_t(c.ffn));
  w.set_u32(a + ".context_length", 64);
  w.set_f32(a + ".attention.layer_norm_rms_epsilon", 1e-5f);
  w.set_f32(a + ".rope.freq_base", 10000.0f);
  for (const auto& kv : vocab_from.metadata())
    if (kv.key.starts_with("tokenizer.")) w.set(kv.key, kv.value);
  for (const auto& b : models::decoder_step(c).buffers) {
    if (b.kind != ir::buffer_kind::weight) continue;
    const std::string key(octo::ir::source_key(b));
    std::vector<std::int64_t> dims(b.shape.rbegin(), b.shape.rend());
    std::vector<float> v(std::size_t(b.numel()), 1.0f / 64);
    w.add_tensor(key, ir::dtype::f32, dims, std::as_bytes(std::span(v)));
  }
  if (!rope_freqs.empty())
    w.add_tensor("rope_freqs.weight", ir::dtype::f32, {std::int64_t(rope_freqs.size())}, std::as_bytes(std::span(rope_freqs)));
  return w.to_bytes();
}

// A safetensors file of F32 tensors (name -> shape), values 1/64.
std::string safetensors(const std::vector<std::pair<std::string, std::vector<std::int64_t>>>& tensors) {
  nlohmann::json h = nlohmann::json::object();
  std::string data;
  for (const auto& [name, shape] : tensors) {
    std::int64_t n = 1;
    for (auto d : shape) n *= d;
    const std::size_t begin = data.size();
    for (std::int64_t i = 0; i < n; ++i) {
      const float f = 1.0f / 64;
      data.append(reinterpret_cast<const char*>(&f), 4);
    }
    h[name] = {{"dtype", "F32"}, {"shape", shape}, {"data_offsets", {begin, data.size()}}};
  }
  std::string header = h.dump();
  std::string out(8, '\0');
  const std::uint64_t len = header.size();
  std::memcpy(out.data(), &len, 8);
  return out + header + data;
}

std::string hf_checkpoint(const nlohmann::json& config) {
  const std::int64_t h = config["hidden_size"], f = config["intermediate_size"], v = config["vocab_size"],
                     heads = config["num_attention_heads"], kv = config["num_key_value_heads"];
  const std::int64_t hd = h / heads;
  const bool qwen2 = config["architectures"][0] == "Qwen2ForCausalLM";
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> t{{"model.embed_tokens.weight", {v, h}},
                                                                   {"model.norm.weight", {h}}};
  for (int l = 0; l < int(config["num_hidden_layers"]); ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    t.push_back({p + "input_layernorm.weight", {h}});
    t.push_back({p + "post_attention_layernorm.weight", {h}});
    t.push_back({p + "self_attn.q_proj.weight", {heads * hd, h}});
    t.push_back({p + "self_attn.k_proj.weight", {kv * hd, h}});
    t.push_back({p + "self_attn.v_proj.weight", {kv * hd, h}});
    t.push_back({p + "self_attn.o_proj.weight", {h, heads * hd}});
    if (qwen2)
      for (auto [n, rows] : {std::pair{"q", heads * hd}, {"k", kv * hd}, {"v", kv * hd}})
        t.push_back({p + "self_attn." + n + "_proj.bias", {rows}});
    t.push_back({p + "mlp.gate_proj.weight", {f, h}});
    t.push_back({p + "mlp.up_proj.weight", {f, h}});
    t.push_back({p + "mlp.down_proj.weight", {h, f}});
  }
  if (!config.value("tie_word_embeddings", false)) t.push_back({"lm_head.weight", {v, h}});
  const std::string cfg = config.dump();
  std::string out(2, '\0');
  out[0] = char(cfg.size() & 0xff);
  out[1] = char(cfg.size() >> 8);
  return out + cfg + safetensors(t);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s SOURCE_DIR OUTPUT_DIR\n", argv[0]);
    return 2;
  }
  const fs::path src = argv[1];
  const fs::path data = src / ".." / "shared" / "data";
  out_dir = argv[2];
  const auto stories = data / "stories260K" / "stories260K.gguf";
  const auto stories_file = model_file::gguf_file::open(stories);  // its tokenizer, for the tiny llama
  const auto qwen_file = model_file::gguf_file::open(src / "models" / "tiny-qwen" / "tiny-qwen.gguf");
  const std::int64_t stories_vocab = std::int64_t(stories_file.get_string_array("tokenizer.ggml.tokens").size());
  const std::int64_t qwen_vocab = std::int64_t(qwen_file.get_string_array("tokenizer.ggml.tokens").size());

  // gguf_model and ir_json
  std::vector<std::byte> tiny_llama;
  for (auto a : {models::arch::llama, models::arch::qwen2, models::arch::qwen3}) {
    const bool spm = a == models::arch::llama;
    const auto c = tiny(a, spm ? stories_vocab : qwen_vocab);
    const std::string n(models::name(a));
    const auto model = tiny_model(c, spm ? stories_file : qwen_file);
    if (spm) tiny_llama = model;
    save("gguf_model", n + ".gguf", "", model);
    // head_dim 4: two frequencies, the second divided by 8 (a step of Llama 3's scaling)
    if (spm) save("gguf_model", "llama3.gguf", "", tiny_model(c, stories_file, {1.0f, 8.0f}));
    save("ir_json", n + "_decode.json", "", ir::to_json(models::decoder_step(c)));
    save("ir_json", n + "_prefill.json", "", ir::to_json(models::prefill(c, 3)));
  }

  // tokenizer
  save("tokenizer", "tiny_qwen.json", std::string(1, '\0'), slurp(src / "models" / "tiny-qwen" / "tokenizer.json"));
  save("tokenizer", "tinystories.json", std::string(1, '\0'), slurp(data / "tinystories-656k" / "tokenizer.json"));
  const std::string story = slurp(data / "stories260K" / "stories260K.greedy-from-bos.txt").substr(0, 2000);
  save("tokenizer", "bpe_text", "\x01", story + " <|im_start|>user\n\xe4\xbd\xa0\xe5\xa5\xbd<|im_end|>");
  save("tokenizer", "spm_text", "\x02", story);
  const std::int32_t ids[] = {0, 1, 2, 3, 100, 200, 511, 631, -1, 70000};
  save("tokenizer", "ids", "\x03", std::string_view(reinterpret_cast<const char*>(ids), sizeof ids));

  // manifest: the tiny llama decomposed (its layer files are one or two 4 KiB pages, in reach of the
  // target's raw-size flags)
  const fs::path work = out_dir / "work";
  fs::remove_all(work);
  fs::create_directories(work);
  save("work", "tiny.gguf", "", tiny_llama);
  --seeds;
  runtime::decompose_gguf(work / "tiny.gguf", work / "raw");
  stream::decompose_options z;
  z.zstd = true;
  runtime::decompose_gguf(work / "tiny.gguf", work / "zstd", z);
  save("manifest", "manifest.json", std::string(1, '\0'), slurp(work / "raw" / "manifest.json"));
  const std::string layer_zstd = slurp(work / "zstd" / "layer_000.bin");
  const std::string raw_layer = slurp(work / "raw" / "layer_000.bin");
  // Flags: bit 0 = a layer file, bit 1 = zstd, bit 2 = matching checksum, high nibble = raw size - 1 in 4 KiB.
  const auto raw_pages = std::uint8_t(std::min<std::size_t>(raw_layer.size() / 4096, 16) - 1);
  save("manifest", "layer_zstd", std::string(1, char(1 | 2 | 4 | (raw_pages << 4))), layer_zstd);
  save("manifest", "layer_raw", std::string(1, char(1 | 4)), raw_layer.substr(0, 4096));
  fs::remove_all(work);

  // safetensors
  for (const auto& cfg_path : {data / "tinystories-656k" / "config.json", src / "models" / "tiny-qwen" / "config.json"}) {
    auto cfg = nlohmann::json::parse(slurp(cfg_path));
    cfg["hidden_size"] = 8;
    cfg["intermediate_size"] = 16;
    cfg["num_hidden_layers"] = 1;
    cfg["num_attention_heads"] = 2;
    cfg["num_key_value_heads"] = 1;
    cfg["vocab_size"] = qwen_vocab;  // the tokenizer beside it is tiny-qwen's
    cfg.erase("head_dim");
    save("safetensors", cfg_path.parent_path().filename().string(), "", hf_checkpoint(cfg));
  }
  std::printf("fuzz_seeds: %d seeds in %s\n", seeds, out_dir.c_str());
  return 0;
}
