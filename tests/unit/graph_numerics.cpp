// The lowered decoder_step / prefill programs of tiny llama, qwen2 and qwen3 configs, run on the CPU
// reference VM with random weights, against an independent float64 forward pass written here.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "octo/ir/validate.hpp"
#include "octo/models/decoder.hpp"
#include "octo/vm/reference_vm.hpp"

namespace {

using octo::models::model_config;
using vec = std::vector<double>;

// ---- the oracle: a plain float64 decoder, one token at a time ----------------------------------------

struct weights {
  std::map<std::string, vec> t;
  const vec& at(const std::string& k) const { return t.at(k); }
};

std::string blk(std::int64_t l, const char* what) { return "blk." + std::to_string(l) + "." + what; }

weights random_weights(const model_config& c, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  weights w;
  auto mat = [&](const std::string& k, std::int64_t n, std::int64_t kdim) {
    vec v(static_cast<std::size_t>(n * kdim));
    const double s = 1.0 / std::sqrt(static_cast<double>(kdim));
    for (auto& e : v) e = u(rng) * s * 1.5;
    w.t[k] = v;
  };
  auto norm = [&](const std::string& k, std::int64_t n) {
    vec v(static_cast<std::size_t>(n));
    for (auto& e : v) e = 1.0 + 0.2 * u(rng);
    w.t[k] = v;
  };
  auto bias = [&](const std::string& k, std::int64_t n) {
    vec v(static_cast<std::size_t>(n));
    for (auto& e : v) e = 0.3 * u(rng);
    w.t[k] = v;
  };
  const auto qw = c.heads * c.head_dim, kvw = c.kv_heads * c.head_dim;
  mat("token_embd.weight", c.vocab, c.hidden);
  for (std::int64_t l = 0; l < c.layers; ++l) {
    norm(blk(l, "attn_norm.weight"), c.hidden);
    mat(blk(l, "attn_q.weight"), qw, c.hidden);
    mat(blk(l, "attn_k.weight"), kvw, c.hidden);
    mat(blk(l, "attn_v.weight"), kvw, c.hidden);
    if (c.qkv_bias) {
      bias(blk(l, "attn_q.bias"), qw);
      bias(blk(l, "attn_k.bias"), kvw);
      bias(blk(l, "attn_v.bias"), kvw);
    }
    if (c.qk_norm) {
      norm(blk(l, "attn_q_norm.weight"), c.head_dim);
      norm(blk(l, "attn_k_norm.weight"), c.head_dim);
    }
    mat(blk(l, "attn_output.weight"), c.hidden, qw);
    norm(blk(l, "ffn_norm.weight"), c.hidden);
    mat(blk(l, "ffn_gate.weight"), c.ffn, c.hidden);
    mat(blk(l, "ffn_up.weight"), c.ffn, c.hidden);
    mat(blk(l, "ffn_down.weight"), c.hidden, c.ffn);
  }
  norm("output_norm.weight", c.hidden);
  if (!c.tied_embeddings) mat("output.weight", c.vocab, c.hidden);
  return w;
}

vec matvec(const vec& W, const vec& x, std::int64_t n) {  // W [n, k] row-major, y = W x
  const auto k = static_cast<std::int64_t>(x.size());
  vec y(static_cast<std::size_t>(n), 0.0);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < k; ++j) y[static_cast<std::size_t>(i)] += W[static_cast<std::size_t>(i * k + j)] * x[static_cast<std::size_t>(j)];
  return y;
}

void rmsnorm_inplace(double* x, const vec& w, std::int64_t n, double eps) {
  double ss = 0;
  for (std::int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  const double r = 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
  for (std::int64_t i = 0; i < n; ++i) x[i] = x[i] * r * w[static_cast<std::size_t>(i)];
}

// The frequency ramp as docs/opcodes.md defines it (unit_reference_ops checks that definition against
// Hugging Face's llama3 formula), in float64.
void rope_inplace(double* x, std::int64_t n_heads, std::int64_t hd, std::int64_t pos, double theta, bool interleaved,
                  const octo::semantics::rope_ramp& ramp = {}) {
  for (std::int64_t h = 0; h < n_heads; ++h) {
    double* v = x + h * hd;
    for (std::int64_t i = 0; i < hd / 2; ++i) {
      double inv = std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(hd));
      if (ramp.on())
        inv *= ramp.low_scale + std::clamp(double(ramp.slope) * inv + ramp.offset, 0.0, 1.0) * (1.0 - ramp.low_scale);
      const double ang = static_cast<double>(pos) * inv;
      const std::int64_t a = interleaved ? 2 * i : i, b = interleaved ? 2 * i + 1 : i + hd / 2;
      const double xa = v[a], xb = v[b];
      v[a] = xa * std::cos(ang) - xb * std::sin(ang);
      v[b] = xa * std::sin(ang) + xb * std::cos(ang);
    }
  }
}

struct oracle {
  const model_config& c;
  const weights& w;
  std::vector<std::vector<vec>> k_cache, v_cache;  // [layer][pos] -> kv row
  oracle(const model_config& cfg, const weights& ws)
      : c(cfg), w(ws), k_cache(static_cast<std::size_t>(cfg.layers)), v_cache(static_cast<std::size_t>(cfg.layers)) {}

  vec step(std::int32_t token, std::int64_t pos) {
    const auto H = c.hidden, hd = c.head_dim, qw = c.heads * hd, kvw = c.kv_heads * hd;
    const auto& E = w.at("token_embd.weight");
    vec x(E.begin() + token * H, E.begin() + (token + 1) * H);
    for (std::int64_t l = 0; l < c.layers; ++l) {
      const auto L = static_cast<std::size_t>(l);
      vec h = x;
      rmsnorm_inplace(h.data(), w.at(blk(l, "attn_norm.weight")), H, c.rms_eps);
      vec q = matvec(w.at(blk(l, "attn_q.weight")), h, qw);
      vec k = matvec(w.at(blk(l, "attn_k.weight")), h, kvw);
      vec v = matvec(w.at(blk(l, "attn_v.weight")), h, kvw);
      if (c.qkv_bias) {
        for (std::int64_t i = 0; i < qw; ++i) q[static_cast<std::size_t>(i)] += w.at(blk(l, "attn_q.bias"))[static_cast<std::size_t>(i)];
        for (std::int64_t i = 0; i < kvw; ++i) {
          k[static_cast<std::size_t>(i)] += w.at(blk(l, "attn_k.bias"))[static_cast<std::size_t>(i)];
          v[static_cast<std::size_t>(i)] += w.at(blk(l, "attn_v.bias"))[static_cast<std::size_t>(i)];
        }
      }
      if (c.qk_norm) {
        for (std::int64_t hh = 0; hh < c.heads; ++hh) rmsnorm_inplace(q.data() + hh * hd, w.at(blk(l, "attn_q_norm.weight")), hd, c.rms_eps);
        for (std::int64_t hh = 0; hh < c.kv_heads; ++hh) rmsnorm_inplace(k.data() + hh * hd, w.at(blk(l, "attn_k_norm.weight")), hd, c.rms_eps);
      }
      const bool inter = c.rope == octo::rope_style::interleaved;
      rope_inplace(q.data(), c.heads, hd, pos, c.rope_theta, inter, c.rope_ramp);
      rope_inplace(k.data(), c.kv_heads, hd, pos, c.rope_theta, inter, c.rope_ramp);
      k_cache[L].resize(static_cast<std::size_t>(pos + 1));
      v_cache[L].resize(static_cast<std::size_t>(pos + 1));
      k_cache[L][static_cast<std::size_t>(pos)] = k;
      v_cache[L][static_cast<std::size_t>(pos)] = v;
      vec o(static_cast<std::size_t>(qw), 0.0);
      const auto group = c.heads / c.kv_heads;
      for (std::int64_t hh = 0; hh < c.heads; ++hh) {
        const auto kvh = hh / group;
        vec s(static_cast<std::size_t>(pos + 1));
        double m = -1e300;
        for (std::int64_t j = 0; j <= pos; ++j) {
          double d = 0;
          for (std::int64_t i = 0; i < hd; ++i)
            d += q[static_cast<std::size_t>(hh * hd + i)] * k_cache[L][static_cast<std::size_t>(j)][static_cast<std::size_t>(kvh * hd + i)];
          s[static_cast<std::size_t>(j)] = d / std::sqrt(static_cast<double>(hd));
          m = std::max(m, s[static_cast<std::size_t>(j)]);
        }
        double z = 0;
        for (auto& e : s) z += (e = std::exp(e - m));
        for (std::int64_t j = 0; j <= pos; ++j)
          for (std::int64_t i = 0; i < hd; ++i)
            o[static_cast<std::size_t>(hh * hd + i)] += s[static_cast<std::size_t>(j)] / z * v_cache[L][static_cast<std::size_t>(j)][static_cast<std::size_t>(kvh * hd + i)];
      }
      const vec ao = matvec(w.at(blk(l, "attn_output.weight")), o, H);
      for (std::int64_t i = 0; i < H; ++i) x[static_cast<std::size_t>(i)] += ao[static_cast<std::size_t>(i)];
      vec h2 = x;
      rmsnorm_inplace(h2.data(), w.at(blk(l, "ffn_norm.weight")), H, c.rms_eps);
      const vec g = matvec(w.at(blk(l, "ffn_gate.weight")), h2, c.ffn);
      const vec u = matvec(w.at(blk(l, "ffn_up.weight")), h2, c.ffn);
      vec a(g.size());
      for (std::size_t i = 0; i < g.size(); ++i) a[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
      const vec d = matvec(w.at(blk(l, "ffn_down.weight")), a, H);
      for (std::int64_t i = 0; i < H; ++i) x[static_cast<std::size_t>(i)] += d[static_cast<std::size_t>(i)];
    }
    rmsnorm_inplace(x.data(), w.at("output_norm.weight"), H, c.rms_eps);
    return matvec(w.at(c.tied_embeddings ? "token_embd.weight" : "output.weight"), x, c.vocab);
  }
};

// ---- driving the VM ---------------------------------------------------------------------------------

/// Every weight buffer of the VM's program from `w` by its source (a composite's parts one after another).
void load_weights(octo::vm::reference_vm& vm, const weights& w) {
  for (const auto& b : vm.program().buffers) {
    if (b.kind != octo::ir::buffer_kind::weight) continue;
    std::vector<float> f;
    for (const auto& part : octo::ir::source_parts(octo::ir::source_key(b))) {
      const auto& v = w.t.at(part);
      f.insert(f.end(), v.begin(), v.end());
    }
    vm.write(b.name.view(), f);
  }
}

/// The per-pass params of docs/opcodes.md: `base` describes position 0; a pass at `pos` adds it.
void set_pass_position(octo::vm::reference_vm& vm, const octo::ir::program& base, std::int64_t pos) {
  using octo::ir::opcode;
  using octo::ir::param_key;
  for (const auto& t : base.tasks) {
    // KV_APPEND and RMSNORM_GEMV_KV
    if (t.params.has(param_key::pos)) vm.set_param(t.id, param_key::pos, t.params.get(param_key::pos) + pos);
    if (t.op == opcode::attention_tile) {
      vm.set_param(t.id, param_key::kv_len, t.params.get(param_key::kv_len) + pos);
      vm.set_param(t.id, param_key::q_pos, t.params.get(param_key::q_pos) + pos);
    }
  }
}

double max_rel_err(const std::vector<float>& got, const vec& want) {
  REQUIRE(got.size() == want.size());
  double scale = 1e-6, err = 0;
  for (auto v : want) scale = std::max(scale, std::abs(v));
  for (std::size_t i = 0; i < got.size(); ++i) err = std::max(err, std::abs(static_cast<double>(got[i]) - want[i]));
  return err / scale;
}

constexpr model_config tiny_llama{.name = "tiny-llama", .architecture = octo::models::arch::llama, .vocab = 40,
                                  .hidden = 32, .layers = 2, .heads = 4, .kv_heads = 2, .head_dim = 8, .ffn = 48,
                                  .rope_theta = 10000.0, .rms_eps = 1e-5, .tied_embeddings = false,
                                  .qkv_bias = false, .qk_norm = false, .rope = octo::rope_style::interleaved,
                                  .max_ctx = 16, .weight_dtype = octo::ir::dtype::f32};
constexpr model_config tiny_qwen2{.name = "tiny-qwen2", .architecture = octo::models::arch::qwen2, .vocab = 48,
                                  .hidden = 32, .layers = 2, .heads = 4, .kv_heads = 2, .head_dim = 8, .ffn = 40,
                                  .rope_theta = 1000000.0, .rms_eps = 1e-6, .tied_embeddings = true,
                                  .qkv_bias = true, .qk_norm = false, .rope = octo::rope_style::neox,
                                  .max_ctx = 16, .weight_dtype = octo::ir::dtype::f32};
// head_dim 16 != hidden / heads = 8
constexpr model_config tiny_qwen3{.name = "tiny-qwen3", .architecture = octo::models::arch::qwen3, .vocab = 44,
                                  .hidden = 32, .layers = 3, .heads = 4, .kv_heads = 1, .head_dim = 16, .ffn = 56,
                                  .rope_theta = 1000000.0, .rms_eps = 1e-6, .tied_embeddings = false,
                                  .qkv_bias = false, .qk_norm = true, .rope = octo::rope_style::neox,
                                  .max_ctx = 16, .weight_dtype = octo::ir::dtype::f32};

// Llama 3.1's form: tiny_llama with a frequency ramp whose middle lies between its frequencies (head_dim 8:
// inv_freq 1, 0.1, 0.01, 0.001; the ramp s = 20 inv - 0.5 keeps the first, scales the last two by 1/8
// and takes 0.1 halfway).
constexpr model_config tiny_llama3 = [] {
  model_config c = tiny_llama;
  c.name = "tiny-llama3";
  c.rope_ramp = {0.125f, 20.0f, -0.5f};
  return c;
}();

// The programs are proven at compile time too.
static_assert(octo::validate(octo::models::decoder_step(tiny_llama3)).ok);
static_assert(octo::validate(octo::models::decoder_step(tiny_llama)).ok);
static_assert(octo::validate(octo::models::decoder_step(tiny_qwen2, {.argmax = true})).ok);
static_assert(octo::validate(octo::models::prefill(tiny_qwen3, 5)).ok);

void check_decode(const model_config& c, const octo::ir::schedule_config& sc, std::uint64_t seed) {
  const weights w = random_weights(c, seed);
  const auto program = octo::models::decoder_step(c, {.argmax = true, .schedule = &sc});
  octo::vm::reference_vm vm(program);
  load_weights(vm, w);
  oracle ref(c, w);
  const std::vector<std::int32_t> tokens{3, 17, 1, 29, 8, 8};
  for (std::size_t p = 0; p < tokens.size(); ++p) {
    const std::int32_t pos = static_cast<std::int32_t>(p);
    vm.write_i32("tokens", std::vector<std::int32_t>{tokens[p]});
    vm.write_i32("pos", std::vector<std::int32_t>{pos});
    set_pass_position(vm, program, pos);
    vm.run();
    const vec want = ref.step(tokens[p], pos);
    const auto got = vm.read_f32("logits");
    CAPTURE(c.name);
    CAPTURE(p);
    CHECK(max_rel_err(got, want) < 2e-5);
    // the greedy token: compare when the oracle's top two are clearly apart
    std::size_t best = 0, second = 1;
    if (want[second] > want[best]) std::swap(best, second);
    for (std::size_t i = 2; i < want.size(); ++i) {
      if (want[i] > want[best]) { second = best; best = i; }
      else if (want[i] > want[second]) second = i;
    }
    if (want[best] - want[second] > 1e-3) CHECK(vm.read_i32("next_token").at(0) == static_cast<std::int32_t>(best));
  }
}

void check_prefill(const model_config& c, std::uint64_t seed) {
  const weights w = random_weights(c, seed);
  const std::vector<std::int32_t> tokens{5, 2, 11, 30, 7};
  const auto T = static_cast<std::int64_t>(tokens.size());
  octo::ir::schedule_config sc;
  sc.set_tile("gemm", "M_tile", 2).set_tile("gemm", "N_tile", 16);
  octo::vm::reference_vm vm(octo::models::prefill(c, T, {.schedule = &sc, .all_logits = true}));
  load_weights(vm, w);
  std::vector<std::int32_t> pos(tokens.size());
  for (std::size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<std::int32_t>(i);
  vm.write_i32("tokens", tokens);
  vm.write_i32("pos", pos);
  vm.run();
  const auto got = vm.read_f32("logits");
  REQUIRE(got.size() == static_cast<std::size_t>(T * c.vocab));
  oracle ref(c, w);
  for (std::int64_t t = 0; t < T; ++t) {
    const vec want = ref.step(tokens[static_cast<std::size_t>(t)], t);
    std::vector<float> row(got.begin() + t * c.vocab, got.begin() + (t + 1) * c.vocab);
    CAPTURE(c.name);
    CAPTURE(t);
    CHECK(max_rel_err(row, want) < 2e-5);
  }
  // The default program runs the final norm and the LM head for the last row only: logits [1, vocab],
  // equal to the all-rows program's last row (the same arithmetic on the same row).
  octo::vm::reference_vm last(octo::models::prefill(c, T, {.schedule = &sc}));
  load_weights(last, w);
  last.write_i32("tokens", tokens);
  last.write_i32("pos", pos);
  last.run();
  const auto one = last.read_f32("logits");
  REQUIRE(one.size() == static_cast<std::size_t>(c.vocab));
  CHECK(std::equal(one.begin(), one.end(), got.begin() + (T - 1) * c.vocab));
}

}  // namespace

TEST_CASE("decoder_step matches a float64 forward pass over several positions (llama, qwen2, qwen3)") {
  const octo::ir::schedule_config defaults;
  check_decode(tiny_llama, defaults, 1);
  check_decode(tiny_llama3, defaults, 1);
  check_decode(tiny_qwen2, defaults, 2);
  check_decode(tiny_qwen3, defaults, 3);
}

TEST_CASE("GEMV tiling changes the schedule, not the numbers") {
  octo::ir::schedule_config sc;
  sc.set_tile("gemv", "N_tile", 16);
  const auto tiled = octo::models::decoder_step(tiny_qwen2, {.schedule = &sc});
  const auto plain = octo::models::decoder_step(tiny_qwen2);
  CHECK(tiled.tasks.size() > plain.tasks.size());
  check_decode(tiny_qwen2, sc, 4);
  check_decode(tiny_qwen3, sc, 5);
}

TEST_CASE("fused decode (the default schedule) matches the float64 pass; fused and plain logits are identical") {
  const auto fused = octo::models::fused_decode_schedule();
  check_decode(tiny_llama, fused, 11);
  check_decode(tiny_llama3, fused, 11);
  // The ramp reaches every task that rotates, fused or not.
  for (const auto& t : octo::models::decoder_step(tiny_llama3).tasks)
    if (t.params.has(octo::ir::param_key::theta) || t.op == octo::ir::opcode::rmsnorm_gemv_qkv) {
      CAPTURE(octo::ir::name(t.op));
      CHECK(octo::semantics::rope_ramp_of(t.params).low_scale == 0.125f);
    }
  check_decode(tiny_qwen2, fused, 12);
  check_decode(tiny_qwen3, fused, 13);
  auto fused_tiled = fused;
  fused_tiled.set_tile("gemv", "N_tile", 16);  // GEMV_ADD / RMSNORM_SWIGLU / RMSNORM_GEMV tiles
  check_decode(tiny_qwen2, fused_tiled, 14);
  // A fused op is defined as the composition of its ops' reference semantics, evaluated alike: the
  // reference VM's fused and plain programs agree bit for bit, position after position.
  for (const model_config* c : {&tiny_llama, &tiny_llama3, &tiny_qwen2, &tiny_qwen3}) {
    const weights w = random_weights(*c, 15);
    const octo::ir::schedule_config plain_sc;
    const auto plain_p = octo::models::decoder_step(*c, {.schedule = &plain_sc});
    const auto fused_p = octo::models::decoder_step(*c);
    CHECK(fused_p.tasks.size() < plain_p.tasks.size());
    octo::vm::reference_vm a(plain_p), b(fused_p);
    load_weights(a, w);
    load_weights(b, w);
    for (std::int32_t pos = 0; pos < 4; ++pos) {
      for (auto* vm : {&a, &b}) {
        vm->write_i32("tokens", std::vector<std::int32_t>{7 + pos});
        vm->write_i32("pos", std::vector<std::int32_t>{pos});
      }
      set_pass_position(a, plain_p, pos);
      set_pass_position(b, fused_p, pos);
      a.run();
      b.run();
      CAPTURE(c->name);
      CAPTURE(pos);
      CHECK(a.read_f32("logits") == b.read_f32("logits"));
    }
  }
}

TEST_CASE("fusion: the default decode step's tasks per layer, and what lowering refuses") {
  const auto p = octo::models::decoder_step(tiny_qwen2);
  std::map<octo::ir::opcode, int> ops;
  for (const auto& t : p.tasks) ++ops[t.op];
  using octo::ir::opcode;
  const int L = static_cast<int>(tiny_qwen2.layers);
  CHECK(ops[opcode::rmsnorm_gemv_qkv] == L);  // q, k (rotated) and v with their biases, into the caches
  CHECK(ops[opcode::rmsnorm_gemv_rope] + ops[opcode::rmsnorm_gemv_kv] == 0);
  CHECK(ops[opcode::gemv_add] == 2 * L);  // o and down, each with its residual
  CHECK(ops[opcode::rmsnorm_swiglu] == L);
  CHECK(ops[opcode::rmsnorm_gemv] == 1);  // the LM head
  CHECK(ops[opcode::rmsnorm] + ops[opcode::gemv_tile] + ops[opcode::rope] + ops[opcode::kv_append] + ops[opcode::add] +
            ops[opcode::silu_mul] ==
        0);
  CHECK(p.tasks.size() == static_cast<std::size_t>(5 * L + 2));  // + embed, head
  // The Q|K|V task writes q and both caches under one counter; its bias is the three biases' composite
  // weight (source: their names joined by '|'), and the biases' own buffers are gone.
  for (const auto& t : p.tasks) {
    if (t.op != opcode::rmsnorm_gemv_qkv) continue;
    REQUIRE(t.outputs.size() == 3);
    REQUIRE(t.inputs.size() == 7);
    const auto& kc = p.buffers[static_cast<std::size_t>(t.outputs[1])];
    const auto& vc = p.buffers[static_cast<std::size_t>(t.outputs[2])];
    CHECK(kc.kind == octo::ir::buffer_kind::kv_cache);
    CHECK(vc.kind == octo::ir::buffer_kind::kv_cache);
    CHECK(kc.name.str().ends_with("k_cache"));
    CHECK(vc.name.str().ends_with("v_cache"));
    const auto& b = p.buffers[static_cast<std::size_t>(t.inputs[6])];
    const std::string l = "blk." + std::to_string(t.params.get(octo::ir::param_key::layer)) + ".";
    CHECK(b.source.str() == l + "attn_q.bias|" + l + "attn_k.bias|" + l + "attn_v.bias");
    CHECK(octo::ir::source_parts(b.source.str()).size() == 3);
    CHECK(b.numel() == tiny_qwen2.heads * tiny_qwen2.head_dim + 2 * tiny_qwen2.kv_heads * tiny_qwen2.head_dim);
  }
  for (const auto& b : p.buffers) CHECK(!b.name.str().ends_with("attn_q.bias"));
  // Without the Q|K|V chain: q, k and v three tasks.
  const octo::ir::schedule_config three = octo::models::fused_decode_schedule(true, false);
  std::map<octo::ir::opcode, int> ops_three;
  for (const auto& t : octo::models::decoder_step(tiny_qwen2, {.schedule = &three}).tasks) ++ops_three[t.op];
  CHECK(ops_three[opcode::rmsnorm_gemv_rope] == L);
  CHECK(ops_three[opcode::rmsnorm_gemv_kv] == 2 * L);
  // Llama (no biases): one Q|K|V task a layer, 6 inputs.
  for (const auto& t : octo::models::decoder_step(tiny_llama).tasks)
    if (t.op == opcode::rmsnorm_gemv_qkv) CHECK(t.inputs.size() == 6);
  // Qwen3's per-head q/k norms sit between the GEMV and RoPE: its q, k and v are one
  // RMSNORM_GEMV_NORM_QKV task, the two head norms' weights one composite: 5 tasks a layer, as Qwen2's.
  const auto q3 = octo::models::decoder_step(tiny_qwen3);
  std::map<octo::ir::opcode, int> ops3;
  for (const auto& t : q3.tasks) ++ops3[t.op];
  const int L3 = static_cast<int>(tiny_qwen3.layers);
  CHECK(ops3[opcode::rmsnorm_gemv] == 1);  // the LM head
  CHECK(ops3[opcode::rmsnorm_gemv_norm_qkv] == L3);
  CHECK(ops3[opcode::rmsnorm_gemv_kv] + ops3[opcode::rmsnorm_gemv_norm_rope] + ops3[opcode::rmsnorm_gemv_norm_kv] +
            ops3[opcode::rmsnorm_gemv_qkv] ==
        0);
  CHECK(ops3[opcode::rmsnorm_rope] + ops3[opcode::rmsnorm_rope_kv] + ops3[opcode::rmsnorm] == 0);
  CHECK(q3.tasks.size() == static_cast<std::size_t>(5 * tiny_qwen3.layers + 2));
  for (const auto& t : q3.tasks) {
    if (t.op != opcode::rmsnorm_gemv_norm_qkv) continue;
    REQUIRE(t.outputs.size() == 3);
    REQUIRE(t.inputs.size() == 7);
    const auto& hn = q3.buffers[static_cast<std::size_t>(t.inputs[6])];
    const std::string l = "blk." + std::to_string(t.params.get(octo::ir::param_key::layer)) + ".";
    CHECK(hn.source.str() == l + "attn_q_norm.weight|" + l + "attn_k_norm.weight");
    CHECK(hn.numel() == 2 * tiny_qwen3.head_dim);
  }
  for (const auto& b : q3.buffers) CHECK(!b.name.str().ends_with("attn_q_norm.weight"));
  // Without the Q|K|V chain: q takes RMSNORM_GEMV_NORM_ROPE, k RMSNORM_GEMV_NORM_KV, v RMSNORM_GEMV_KV.
  std::map<octo::ir::opcode, int> ops3_three;
  for (const auto& t : octo::models::decoder_step(tiny_qwen3, {.schedule = &three}).tasks) ++ops3_three[t.op];
  CHECK(ops3_three[opcode::rmsnorm_gemv_kv] == L3);         // v
  CHECK(ops3_three[opcode::rmsnorm_gemv_norm_rope] == L3);  // q with its head norm and RoPE
  CHECK(ops3_three[opcode::rmsnorm_gemv_norm_kv] == L3);    // k's, into the cache
  // Without the head-norm chains, the two-task form: RMSNORM_GEMV then RMSNORM_ROPE(_KV).
  const octo::ir::schedule_config older = octo::models::fused_decode_schedule(false);
  const auto q3_two = octo::models::decoder_step(tiny_qwen3, {.schedule = &older});
  std::map<octo::ir::opcode, int> two;
  for (const auto& t : q3_two.tasks) ++two[t.op];
  CHECK(two[opcode::rmsnorm_rope] == L3);
  CHECK(two[opcode::rmsnorm_rope_kv] == L3);
  CHECK(q3_two.tasks.size() == static_cast<std::size_t>(9 * tiny_qwen3.layers + 2));
  // A chain lowering does not know is refused, not silently ignored.
  octo::ir::schedule_config bad;
  bad.fusion_grouping = {{"GEMV_TILE", "GELU"}};
  CHECK_THROWS_AS(octo::models::decoder_step(tiny_qwen2, {.schedule = &bad}), octo::error);
}

TEST_CASE("prefill (GEMM tiles, causal attention) matches the float64 pass row by row") {
  check_prefill(tiny_llama, 6);
  check_prefill(tiny_llama3, 6);
  check_prefill(tiny_qwen2, 7);
  check_prefill(tiny_qwen3, 8);
}

TEST_CASE("fused prefill (GEMM_TILE, ADD -> GEMV_ADD; RMSNORM, GEMM_TILE (, SILU_MUL) -> RMSNORM_GEMV, RMSNORM_SWIGLU; RoPE and KV_APPEND -> RMSNORM_GEMV_ROPE, RMSNORM_GEMV_KV): the adds, norms, rotations and cache writes fold into the GEMMs, the same logits") {
  const auto residual_sc = octo::models::prefill_schedule(false);
  const octo::ir::schedule_config plain_sc;
  const std::vector<std::int32_t> tokens{5, 2, 11, 30, 7, 1, 9};
  const auto T = static_cast<std::int64_t>(tokens.size());
  std::vector<std::int32_t> pos(tokens.size());
  for (std::size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<std::int32_t>(i);
  using octo::ir::opcode;
  for (const model_config* c : {&tiny_llama, &tiny_qwen2, &tiny_qwen3}) {
    CAPTURE(c->name);
    const auto fused_p = octo::models::prefill(*c, T, {.all_logits = true});  // prefill_schedule()
    const auto plain_p = octo::models::prefill(*c, T, {.schedule = &plain_sc, .all_logits = true});
    const auto residual_p = octo::models::prefill(*c, T, {.schedule = &residual_sc, .all_logits = true});
    std::map<opcode, int> f, pl, d;
    for (const auto& t : fused_p.tasks) ++f[t.op];
    for (const auto& t : plain_p.tasks) ++pl[t.op];
    for (const auto& t : residual_p.tasks) ++d[t.op];
    const int L = static_cast<int>(c->layers);
    // prefill_schedule(false) folds the residual adds only.
    CHECK(d[opcode::gemv_add] == 2 * L);
    CHECK(d[opcode::rmsnorm_gemv] == 0);
    CHECK(d[opcode::gemm_tile] == 5 * L + 1);
    CHECK(d[opcode::add] == pl[opcode::add] - 2 * L);
    CHECK(d[opcode::rmsnorm] == pl[opcode::rmsnorm]);
    CHECK(f[opcode::gemv_add] == 2 * L);          // o and down, each with its residual
    // q, k and v with their layer's norm: RMSNORM_GEMV_ROPE (q), RMSNORM_GEMV_KV (k with its RoPE, v),
    // but Qwen3's q and k, whose per-head norm comes between the projection and the RoPE, stay
    // RMSNORM_GEMV (then RMSNORM_ROPE(_KV)); the head RMSNORM_GEMV.
    CHECK(f[opcode::rmsnorm_gemv] == (c->qk_norm ? 2 * L : 0) + 1);
    CHECK(f[opcode::rmsnorm_gemv_rope] == (c->qk_norm ? 0 : L));
    CHECK(f[opcode::rmsnorm_gemv_kv] == (c->qk_norm ? 1 : 2) * L);
    CHECK(f[opcode::kv_append] == 0);
    CHECK(f[opcode::rmsnorm_swiglu] == L);        // gate and up with the FFN norm and their SILU_MUL
    CHECK(f[opcode::silu_mul] == 0);
    CHECK(f[opcode::gemm_tile] == 0);
    CHECK(pl[opcode::gemm_tile] == 7 * L + 1);
    CHECK(f[opcode::add] == pl[opcode::add] - 2 * L);
    // Qwen3's per-head q / k norms fold into their RoPE (and k's cache write): RMSNORM_ROPE(_KV).
    const int head_norms = c->qk_norm ? 2 * L : 0;
    CHECK(f[opcode::rmsnorm] == pl[opcode::rmsnorm] - (2 * L + 1) - head_norms);
    CHECK(f[opcode::rmsnorm_rope] == head_norms / 2);
    CHECK(f[opcode::rmsnorm_rope_kv] == head_norms / 2);
    CHECK(f[opcode::rope] == 0);
    CHECK(pl[opcode::rope] == 2 * L);
    for (const auto& t : fused_p.tasks)
      if (t.op == opcode::gemv_add || t.op == opcode::rmsnorm_gemv || t.op == opcode::rmsnorm_swiglu || t.op == opcode::rmsnorm_gemv_rope)
        CHECK(fused_p.buffers[static_cast<std::size_t>(t.outputs[0])].shape[0] == T);
    // A fused op is the composition of the ops it replaces (include/octo/semantics/fused.hpp): the
    // reference VM's logits are the plain prefill's bit for bit, and the float64 pass's within float32
    // rounding.
    const weights w = random_weights(*c, 21);
    octo::vm::reference_vm a(plain_p), b(fused_p), dv(residual_p);
    for (auto* vm : {&a, &b, &dv}) {
      load_weights(*vm, w);
      vm->write_i32("tokens", tokens);
      vm->write_i32("pos", pos);
      vm->run();
    }
    const auto got = b.read_f32("logits");
    CHECK(a.read_f32("logits") == got);
    CHECK(dv.read_f32("logits") == got);
    oracle ref(*c, w);
    for (std::int64_t t = 0; t < T; ++t) {
      const vec want = ref.step(tokens[static_cast<std::size_t>(t)], t);
      std::vector<float> row(got.begin() + t * c->vocab, got.begin() + (t + 1) * c->vocab);
      CAPTURE(t);
      CHECK(max_rel_err(row, want) < 2e-5);
    }
  }
  // A chain lowering does not know is refused at prefill too.
  octo::ir::schedule_config bad;
  bad.fusion_grouping = {{"GEMM_TILE", "SILU_MUL"}};
  CHECK_THROWS_AS(octo::models::prefill(tiny_qwen2, T, {.schedule = &bad}), octo::error);
}

TEST_CASE("a dynamic shape error at run time is an octo::error naming the op") {
  {
    auto bad = tiny_qwen2;
    bad.heads = 3;  // not a multiple of kv_heads
    CHECK_THROWS_AS(octo::models::decoder_step(bad), octo::error);
  }
  octo::graph g;
  auto x = g.input<octo::f32>("x", octo::dextents<2>{1, 64});
  auto w = g.weight<octo::f16>("w", octo::dextents<2>{32, 48});
  try {
    (void)octo::gemv(x, w);
    FAIL("expected octo::error");
  } catch (const octo::error& e) {
    const std::string what = e.what();
    CHECK(what.find("octo::gemv") != std::string::npos);
    CHECK(what.find("[1, 64]") != std::string::npos);
    CHECK(what.find("[32, 48]") != std::string::npos);
  }
}
