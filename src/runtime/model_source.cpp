// model_source: config from GGUF metadata, the weight binding (tensor checks) and the decode / prefill
// programs of a model, whichever the source.
#include "octo/runtime/model_source.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "octo/error.hpp"
#include "octo/ir/validate.hpp"
#include "octo/model_file/vocabulary.hpp"
#include "octo/models/decoder.hpp"

namespace octo::runtime {

namespace {

std::string file_label(const model_file::gguf_file& f) {
  return std::filesystem::path(f.path()).filename().string();
}

[[noreturn]] void fail(const model_file::gguf_file& f, const std::string& problem) {
  throw octo::error("octo: " + file_label(f) + ": " + problem);
}

std::int64_t meta_int(const model_file::gguf_file& f, const std::string& key) {
  const auto* v = f.find(key);
  if (!v) fail(f, "missing metadata key '" + key + "'");
  if (!v->is_integer()) fail(f, "metadata key '" + key + "' is not an integer");
  std::int64_t r = 0;
  try {
    r = v->as_i64();
  } catch (const octo::error&) {
    fail(f, "metadata key '" + key + "' is out of range");
  }
  if (r <= 0 || r > (std::int64_t(1) << 40)) fail(f, "metadata key '" + key + "' = " + std::to_string(r) + " is not a positive size");
  return r;
}

std::int64_t meta_int_or(const model_file::gguf_file& f, const std::string& key, std::int64_t fallback) {
  return f.contains(key) ? meta_int(f, key) : fallback;
}

double meta_real(const model_file::gguf_file& f, const std::string& key) {
  const auto* v = f.find(key);
  if (!v) fail(f, "missing metadata key '" + key + "'");
  if (!v->is_float() && !v->is_integer()) fail(f, "metadata key '" + key + "' is not a number");
  const double r = v->as_f64();
  if (!(r > 0.0) || !(r < 1e30)) fail(f, "metadata key '" + key + "' = " + std::to_string(r) + " is not a positive number");
  return r;
}

double meta_real_or(const model_file::gguf_file& f, const std::string& key, double fallback) {
  return f.contains(key) ? meta_real(f, key) : fallback;
}

std::string shape_text(std::span<const std::int64_t> s) {
  std::string r = "[";
  for (std::size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

// block_count against the tensors present, before anything is sized by it: every blk.N tensor has
// N < block_count and every block has tensors. A too-large count would otherwise build graphs and files
// for layers that do not exist; a too-small one would silently drop the last layers (a wrong answer).
void check_blocks(const model_file::gguf_file& f, std::int64_t layers, const std::string& arch) {
  const auto tensors = f.tensors();
  const std::string key = "'" + arch + ".block_count' = " + std::to_string(layers);
  if (std::uint64_t(layers) > tensors.size())
    fail(f, key + " but the file holds only " + std::to_string(tensors.size()) + " tensors");
  std::vector<bool> seen(std::size_t(layers), false);
  for (const auto& t : tensors) {
    const std::string_view n = t.name;
    if (!n.starts_with("blk.")) continue;
    const auto rest = n.substr(4);
    std::uint64_t block = 0;
    const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), block);
    if (ec != std::errc() || end == rest.data() || end == rest.data() + rest.size() || *end != '.')
      fail(f, "tensor name " + octo::quoted(n, 80) + " has no block number");
    if (block >= std::uint64_t(layers))
      fail(f, "tensor " + octo::quoted(n, 80) + " belongs to block " + std::to_string(block) + " but " + key);
    seen[std::size_t(block)] = true;
  }
  for (std::size_t l = 0; l < seen.size(); ++l)
    if (!seen[l]) fail(f, key + " but block " + std::to_string(l) + " has no tensors");
}

}  // namespace

models::model_config config_from_gguf(const model_file::gguf_file& f, std::int64_t ctx) {
  const auto* arch_v = f.find("general.architecture");
  if (!arch_v) fail(f, "missing metadata key 'general.architecture'");
  if (arch_v->type() != model_file::gguf_type::string) fail(f, "metadata key 'general.architecture' is not a string");
  const std::string a = arch_v->as_string();
  models::model_config c;
  if (a == "llama") c.architecture = models::arch::llama;
  else if (a == "qwen2") c.architecture = models::arch::qwen2;
  else if (a == "qwen3") c.architecture = models::arch::qwen3;
  else fail(f, "unknown architecture " + octo::quoted(a, 40) + " (octo runs llama, qwen2, qwen3)");

  c.hidden = meta_int(f, a + ".embedding_length");
  c.layers = meta_int(f, a + ".block_count");
  c.heads = meta_int(f, a + ".attention.head_count");
  c.kv_heads = meta_int_or(f, a + ".attention.head_count_kv", c.heads);
  if (c.hidden % c.heads != 0 && !f.contains(a + ".attention.key_length"))
    fail(f, "embedding_length " + std::to_string(c.hidden) + " is not a multiple of head_count " + std::to_string(c.heads));
  c.head_dim = meta_int_or(f, a + ".attention.key_length", c.hidden / c.heads);
  if (f.contains(a + ".attention.value_length") && meta_int(f, a + ".attention.value_length") != c.head_dim)
    fail(f, "attention.value_length differs from attention.key_length (not supported)");
  c.ffn = meta_int(f, a + ".feed_forward_length");
  const std::int64_t train_ctx = meta_int(f, a + ".context_length");
  c.rope_theta = meta_real_or(f, a + ".rope.freq_base", 10000.0);
  c.rms_eps = meta_real(f, a + ".attention.layer_norm_rms_epsilon");
  if (f.contains(a + ".rope.dimension_count") && meta_int(f, a + ".rope.dimension_count") != c.head_dim)
    fail(f, "partial rotary embeddings (rope.dimension_count != head dim) are not supported");
  // RoPE scaling: none, linear (every frequency divided by rope.scaling.factor: the ramp at its low scale
  // everywhere), or Llama 3's table (rope_freqs.weight, below); others are refused by name.
  if (const auto* st = f.find(a + ".rope.scaling.type"); st && st->type() == model_file::gguf_type::string &&
                                                          st->as_string() != "none") {
    if (st->as_string() != "linear")
      fail(f, "RoPE scaling '" + st->as_string() + "' is not supported (linear and Llama 3's are)");
    const double factor = meta_real(f, a + ".rope.scaling.factor");
    if (!(factor >= 1.0 && factor < 1e6)) fail(f, "rope.scaling.factor " + std::to_string(factor) + " is not in [1, 1e6)");
    c.rope_ramp = {static_cast<float>(1.0 / factor), 0.0f, 0.0f};
  }
  if (c.heads % c.kv_heads != 0)
    fail(f, "head_count " + std::to_string(c.heads) + " is not a multiple of head_count_kv " + std::to_string(c.kv_heads));
  if (c.head_dim % 2 != 0) fail(f, "head dim " + std::to_string(c.head_dim) + " is odd");

  const auto* embd = f.find_tensor("token_embd.weight");
  if (!embd) fail(f, "missing tensor 'token_embd.weight'");
  if (embd->dims.size() != 2 || embd->dims[0] != c.hidden)
    fail(f, "tensor 'token_embd.weight' has shape " + shape_text(embd->dims) + ", expected [" + std::to_string(c.hidden) +
                ", vocab] (GGUF order)");
  c.vocab = embd->dims[1];
  const auto dt = model_file::to_dtype(embd->ggml_type);
  if (!dt) {
    const auto tn = model_file::ggml_type_name(embd->ggml_type);
    fail(f, "tensor 'token_embd.weight' has unsupported type " +
                (tn.empty() ? "#" + std::to_string(embd->ggml_type) : std::string(tn)));
  }
  c.weight_dtype = *dt;
  c.tied_embeddings = f.find_tensor("output.weight") == nullptr;
  c.qkv_bias = c.architecture == models::arch::qwen2;
  c.qk_norm = c.architecture == models::arch::qwen3;
  // GGUF's llama converter permutes q/k rows for the interleaved (GPT-J) pairing; Qwen keeps NeoX.
  c.rope = c.architecture == models::arch::llama ? rope_style::interleaved : rope_style::neox;
  // Llama 3.1+'s RoPE scaling, as llama.cpp's converter stores it: a divisor per frequency.
  constexpr std::string_view rope_freqs = "rope_freqs.weight";
  if (const auto* rf = f.find_tensor(rope_freqs)) {
    if (c.rope_ramp.on()) fail(f, "the file gives both a linear RoPE scaling and rope_freqs.weight");
    if (rf->ggml_type != model_file::to_ggml_type(ir::dtype::f32) || rf->dims.size() != 1 || rf->dims[0] != c.head_dim / 2)
      fail(f, "tensor 'rope_freqs.weight' must be F32 with head_dim / 2 = " + std::to_string(c.head_dim / 2) +
                  " values, has shape " + shape_text(rf->dims));
    std::vector<float> factors(static_cast<std::size_t>(c.head_dim / 2));
    f.read_tensor(*rf, std::as_writable_bytes(std::span(factors)));
    const auto ramp = semantics::rope_ramp_fit(factors, c.rope_theta, c.head_dim);
    if (!ramp)
      fail(f, "tensor 'rope_freqs.weight' is not Llama 3's RoPE scaling (unscaled high frequencies, low ones divided "
              "by one factor, a linear ramp between), the one frequency scaling octo runs");
    c.rope_ramp = *ramp;
  }
  check_blocks(f, c.layers, a);
  if (ctx < 0) fail(f, "context length " + std::to_string(ctx) + " is negative");
  c.max_ctx = ctx > 0 ? ctx : std::min<std::int64_t>(train_ctx, 4096);
  c.trained_ctx = train_ctx;
  try {
    c.check();
  } catch (const std::exception& e) {
    fail(f, std::string("bad model config: ") + e.what());
  }
  // Every tensor in the file belongs to the model this config describes (the decode graph reads the
  // same weights as prefill): a tensor nothing reads means the metadata describes another model.
  std::set<std::string, std::less<>> read;
  for (const auto& b : models::decoder_step(c).buffers)
    if (b.kind == ir::buffer_kind::weight)
      for (auto& part : ir::source_parts(ir::source_key(b))) read.insert(std::move(part));
  read.insert(std::string(rope_freqs));  // read above, into the config
  for (const auto& t : f.tensors())
    if (!read.contains(t.name))
      fail(f, "tensor " + octo::quoted(t.name, 80) + " is not part of the " + a + " model its metadata describes");
  return c;
}

ir::program model_source::bind(ir::program p) const {
  const auto fail = [&](const std::string& problem) { throw octo::error("octo: " + label() + ": " + problem); };
  for (auto& b : p.buffers) {
    if (b.kind != ir::buffer_kind::weight) continue;
    const std::string key(ir::source_key(b));
    if (const auto parts = ir::source_parts(key); parts.size() > 1) {  // a composite: vectors of one dtype
      std::optional<ir::dtype> dt;
      std::int64_t n = 0;
      for (const auto& part : parts) {
        const auto* t = find(part);
        if (!t) fail("missing tensor '" + part + "'");
        const auto pdt = model_file::to_dtype(t->ggml_type);
        if (t->dims.size() != 1 || !pdt || (dt && *dt != *pdt))
          fail("tensor '" + part + "' cannot join '" + key + "': its parts must be vectors of one supported type");
        dt = pdt;
        n += t->dims[0];
      }
      if (b.shape.size() != 1 || b.shape[0] != n)
        fail("the parts of '" + key + "' hold " + std::to_string(n) + " elements, expected " + std::to_string(b.numel()));
      b.dtype = *dt;
      continue;
    }
    const auto* t = find(key);
    if (!t) fail("missing tensor '" + key + "'");
    std::vector<std::int64_t> want(b.shape.rbegin(), b.shape.rend());  // GGUF order: fastest first
    if (t->dims != want)
      fail("tensor '" + key + "' has shape " + shape_text(t->dims) + ", expected " + shape_text(want) + " (GGUF order)");
    const auto dt = model_file::to_dtype(t->ggml_type);
    if (!dt) {
      const auto tn = model_file::ggml_type_name(t->ggml_type);
      fail("tensor '" + key + "' has unsupported type " + (tn.empty() ? "#" + std::to_string(t->ggml_type) : std::string(tn)));
    }
    b.dtype = *dt;
    if (static_cast<std::uint64_t>(b.nbytes()) != t->bytes)
      fail("tensor '" + key + "' holds " + std::to_string(t->bytes) + " bytes, expected " + std::to_string(b.nbytes()));
  }
  const auto r = ir::validate(p);
  if (!r.ok)
    fail("the model's program does not validate: " + (r.errors.empty() ? std::string("(no detail)") : r.errors.front().str()));
  return p;
}

ir::program model_source::decode_program(bool argmax, models::segment part) const {
  models::build_options o;
  o.argmax = argmax;
  o.part = part;
  o.kv_dtype = kv_dtype_;
  // OCTO_FUSION=0: the plain ops instead of the fused decode step (docs/ir.md §5.1); =no-head-norm: the
  // fused step without the chains that take a per-head norm into its projection (Qwen3's q and k then two
  // tasks each); =no-qkv: without the one Q|K|V task (q, k and v three tasks); to measure one against the
  // other on the same device without a rebuild.
  const ir::schedule_config plain{};
  const ir::schedule_config no_head_norm = models::fused_decode_schedule(false);
  const ir::schedule_config no_qkv = models::fused_decode_schedule(true, false);
  if (const char* f = std::getenv("OCTO_FUSION"); f && *f) {
    const std::string_view v(f);
    if (v == "0") o.schedule = &plain;
    else if (v == "no-head-norm") o.schedule = &no_head_norm;
    else if (v == "no-qkv") o.schedule = &no_qkv;
    else if (v != "1")
      throw octo::error("octo: OCTO_FUSION='" + std::string(v) + "' is not 0, 1, no-head-norm or no-qkv");
  }
  return bind(models::decoder_step(config(), o));
}

ir::program model_source::prefill_program(std::int64_t tokens, bool argmax, models::segment part) const {
  if (tokens <= 0 || tokens > config().max_ctx)
    throw octo::error("octo: prefill of " + std::to_string(tokens) + " tokens does not fit the context of " +
                      std::to_string(config().max_ctx));
  models::build_options o;
  o.argmax = argmax;
  o.part = part;
  o.kv_dtype = kv_dtype_;
  // The norms and the SwiGLU fold into the GEMMs (models::prefill_schedule()) for passes of at least
  // models::kFoldNormsRows tokens, where the Vulkan VM runs each norm once ahead of its GEMMs (7-25%
  // faster at 512 rows on the H100, benchmarks/results/2026-12-06-h100-prefill-epi); shorter passes keep
  // them as tasks of their own (prefill_schedule(false)): there the fused forms run the norm inside every
  // GEMM, or under 16 rows inside the decode GEMV kernels, which gained nothing measurable at 128 rows.
  // The 1-2e-4 (relative L2) that stories260K's decode logits moved after such a fused prefill is the F16
  // cache's rounding, not the fusion: with an F32 cache both schedules stay within 7e-7 of the reference
  // VM and of token-by-token decode; with the F16 cache the plain schedule's logits sit as far (up to
  // 2.3e-4) from token-by-token decode as the fused one's from the reference VM, since K/V that differ in
  // their last bits round to different halves (gpu_runtime_engine's chunked prefill case, lavapipe,
  // 2026-12-07). OCTO_PREFILL_FUSION (to measure the schedules against each other without a rebuild): 1, prefill_schedule() at any length; residual, prefill_schedule(false) at any length;
  // norms, prefill_schedule() without its RoPE / KV_APPEND chains (the norms, SwiGLU and residual adds
  // folded; RoPE, Qwen3's head norms and the cache writes as tasks of their own); 0, the plain ops.
  const ir::schedule_config folded = models::prefill_schedule(), residual_only = models::prefill_schedule(false), plain{};
  ir::schedule_config norms_only;
  o.schedule = tokens >= models::kFoldNormsRows ? &folded : &residual_only;
  if (const char* f = std::getenv("OCTO_PREFILL_FUSION"); f && *f) {
    const std::string_view v(f);
    if (v == "1") o.schedule = &folded;
    else if (v == "residual") o.schedule = &residual_only;
    else if (v == "norms") {
      norms_only = folded;
      std::erase_if(norms_only.fusion_grouping, [](const auto& chain) {
        return std::find(chain.begin(), chain.end(), "ROPE") != chain.end() ||
               std::find(chain.begin(), chain.end(), "KV_APPEND") != chain.end();
      });
      o.schedule = &norms_only;
    }
    else if (v == "0") o.schedule = &plain;
    else throw octo::error("octo: OCTO_PREFILL_FUSION='" + std::string(v) + "' is not 0, 1, norms or residual");
  }
  return bind(models::prefill(config(), tokens, o));
}

void model_source::with_tensor(std::string_view name,
                               const std::function<void(std::span<const std::byte>)>& use) const {
  const auto parts = ir::source_parts(name);
  if (parts.size() == 1) return with_file_tensor(name, use);
  std::vector<std::byte> joined;
  for (const auto& part : parts)
    with_file_tensor(part, [&](std::span<const std::byte> bytes) { joined.insert(joined.end(), bytes.begin(), bytes.end()); });
  use(joined);
}

void model_source::for_each_weight(const ir::program& p,
                                   const std::function<void(std::string_view, std::span<const std::byte>)>& write) const {
  for (const auto& b : p.buffers) {
    if (b.kind != ir::buffer_kind::weight) continue;
    const std::string key(ir::source_key(b));
    with_tensor(key, [&](std::span<const std::byte> bytes) { write(b.name.view(), bytes); });
  }
}

std::unique_ptr<model_source> open_gguf_source(const std::filesystem::path& gguf, std::int64_t ctx);
std::unique_ptr<model_source> open_directory_source(const std::filesystem::path& dir, std::int64_t ctx);

ir::dtype parse_kv_type(std::string_view text) {
  if (text == "f32") return ir::dtype::f32;
  if (text == "f16") return ir::dtype::f16;
  if (text == "q8_0") return ir::dtype::q8_0;
  throw octo::error("octo: --kv-type: unknown KV cache type '" + std::string(text) + "' (f32, f16 or q8_0)");
}

std::unique_ptr<model_source> model_source::open(const std::filesystem::path& path, std::int64_t ctx,
                                                 ir::dtype kv_dtype) {
  std::unique_ptr<model_source> m;
  if (std::filesystem::is_directory(path)) m = open_directory_source(path, ctx);
  else if (std::filesystem::exists(path)) m = open_gguf_source(path, ctx);
  else throw octo::error("octo: no such model file or directory '" + path.string() + "'");
  if (kv_dtype != ir::dtype::f32 && kv_dtype != ir::dtype::f16 && kv_dtype != ir::dtype::q8_0)
    throw octo::error("octo: a KV cache of type " + std::string(ir::name(kv_dtype)) + " is not supported (f32, f16 or q8_0)");
  const auto& c = m->config();
  if (kv_dtype == ir::dtype::q8_0 && c.kv_heads * c.head_dim % 32 != 0)
    throw octo::error("octo: " + m->label() + ": a Q8_0 KV cache needs kv_heads x head_dim (" +
                      std::to_string(c.kv_heads * c.head_dim) + ") to be a multiple of 32; use --kv-type f16");
  m->kv_dtype_ = kv_dtype;
  // Check every tensor the graph reads now, so a broken model fails at load with the tensor's name.
  (void)m->decode_program(false);
  return m;
}

}  // namespace octo::runtime
