// Fused and plain decode on the Vulkan VM: the same tiny models (Qwen2 with biases, Qwen3 with per-head
// q/k norms, llama with interleaved RoPE; F16, Q8_0 and Q4_K weights) stepped
// greedily, each token fed back, through the fused decode step (the default schedule) and the plain one
// (a schedule without fusion_grouping): the same tokens, logits within float rounding. The fused kernels'
// own conformance against the reference VM is in conformance.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "octo/detail/element_convert.hpp"
#include "octo/detail/quant_blocks.hpp"
#include "octo/models/decoder.hpp"
#include "octo/vm/vulkan_vm.hpp"
#include "../support/test_data.hpp"
#include "gpu_support.hpp"

namespace {

using octo::models::model_config;

/// The element counts of a composite weight's parts (ir::source_parts): a Q|K|V task's bias is its
/// three weights' rows, Qwen3's head norms two of head_dim; any other weight is one part.
std::vector<std::int64_t> part_sizes(const octo::ir::program& p, const octo::ir::buffer& b) {
  for (const auto& t : p.tasks) {
    if (t.inputs.size() != 7 || t.inputs[6] != b.id) continue;
    if (t.op == octo::ir::opcode::rmsnorm_gemv_qkv) {
      std::vector<std::int64_t> n;
      for (std::size_t k : {2, 3, 4}) n.push_back(p.buffers[static_cast<std::size_t>(t.inputs[k])].shape[0]);
      return n;
    }
    if (t.op == octo::ir::opcode::rmsnorm_gemv_norm_qkv) {
      const std::int64_t hd = t.params.get(octo::ir::param_key::head_dim);
      return {hd, hd};
    }
  }
  return {b.numel()};
}

/// Random bytes for every weight of `p` (norm weights near 1), the same for the same seed and name (a
/// composite's parts by their own names, as the unfused program's separate weights).
void load_weights(octo::vm::vulkan_vm& vm, const octo::ir::program& p, std::uint64_t seed) {
  for (const auto& b : p.buffers) {
    if (b.kind != octo::ir::buffer_kind::weight) continue;
    const bool norm = b.name.view().find("norm") != std::string_view::npos;
    const double scale = b.shape.size() == 2 ? 1.5 / std::sqrt(double(b.shape.back())) : 0.3;
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> v;
    const auto parts = octo::ir::source_parts(octo::ir::source_key(b));
    const auto sizes = part_sizes(p, b);
    REQUIRE(sizes.size() == parts.size());
    for (std::size_t k = 0; k < parts.size(); ++k) {
      std::mt19937_64 rng(seed ^ std::hash<std::string>{}(parts[k]));
      for (std::int64_t i = 0; i < sizes[k]; ++i) v.push_back(norm ? 1.0f + 0.2f * u(rng) : static_cast<float>(scale) * u(rng));
    }
    std::vector<std::byte> bytes(static_cast<std::size_t>(b.nbytes()));
    if (octo::ir::is_block_quantized(b.dtype)) {
      const std::int64_t row = b.shape.back();
      for (std::int64_t r = 0; r < b.numel() / row; ++r)
        octo::detail::quantize_row(b.dtype, v.data() + r * row,
                                   reinterpret_cast<std::uint8_t*>(bytes.data()) + octo::ir::nbytes(b.dtype, r * row), row);
    } else {
      octo::detail::from_f32(b.dtype, v, bytes);
    }
    vm.write_bytes(b.name.view(), bytes);
  }
}

void write_int(octo::vm::vulkan_vm& vm, std::string_view name, std::int32_t v) {
  std::vector<std::byte> b(4);
  std::memcpy(b.data(), &v, 4);
  vm.write_bytes(name, b);
}

std::int32_t read_token(octo::vm::vulkan_vm& vm) {
  const auto b = vm.read_bytes("next_token");
  std::int32_t t = 0;
  std::memcpy(&t, b.data(), 4);
  return t;
}

void compare(const model_config& c) {
  CAPTURE(c.name);
  const octo::ir::schedule_config plain_sc;
  const auto fused_p = octo::models::decoder_step(c, {.argmax = true});
  const auto plain_p = octo::models::decoder_step(c, {.argmax = true, .schedule = &plain_sc});
  REQUIRE(fused_p.tasks.size() < plain_p.tasks.size());
  if (c.architecture == octo::models::arch::qwen3) {  // q and k with their per-head norms, and v: one task
    int normed = 0;
    for (const auto& t : fused_p.tasks) normed += t.op == octo::ir::opcode::rmsnorm_gemv_norm_qkv;
    CHECK(normed == static_cast<int>(c.layers));
  }
  auto opts = octo_test::small_options();
  opts.precision = octo::vm::matmul_precision::accurate;
  octo::vm::vulkan_vm fused(opts), plain(opts);
  fused.load(fused_p);
  plain.load(plain_p);
  load_weights(fused, fused_p, 7);
  load_weights(plain, plain_p, 7);
  std::int32_t token = 3;
  // A sampled run (the validation twin, the sanitizer build) steps 3 positions: each step is one
  // recording run again, the same Vulkan usage at every position.
  const std::uint32_t steps = octo::test::sampled_out("decode steps 4 to 8 of the fused-vs-plain models") ? 3 : 8;
  for (std::uint32_t pos = 0; pos < steps; ++pos) {
    CAPTURE(pos);
    for (auto* vm : {&fused, &plain}) {
      write_int(*vm, "tokens", token);
      write_int(*vm, "pos", static_cast<std::int32_t>(pos));
      vm->set_position(pos);
      vm->execute();
    }
    const auto lf = fused.read_f32("logits"), lp = plain.read_f32("logits");
    REQUIRE(lf.size() == lp.size());
    double scale = 1e-6, err = 0.0;
    for (std::size_t i = 0; i < lf.size(); ++i) {
      scale = std::max(scale, std::abs(double(lp[i])));
      err = std::max(err, std::abs(double(lf[i]) - double(lp[i])));
    }
    CHECK(err / scale < 1e-3);
    const std::int32_t tf = read_token(fused), tp = read_token(plain);
    // The same token, unless the plain logits' top two are within rounding of each other.
    std::vector<float> sorted(lp);
    std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<>());
    if (sorted[0] - sorted[1] > 1e-3f * static_cast<float>(scale)) CHECK(tf == tp);
    token = tf;
  }
  octo_test::check_clean(fused);
}

}  // namespace

TEST_CASE("fused and plain decode steps give the same tokens on the GPU (Qwen2, Qwen3, llama; F16/Q8_0/Q4_K)") {
  model_config qwen2{.name = "tiny-qwen2-q8", .architecture = octo::models::arch::qwen2, .vocab = 64, .hidden = 96,
                     .layers = 2, .heads = 3, .kv_heads = 1, .head_dim = 32, .ffn = 160, .rope_theta = 1000000.0,
                     .rms_eps = 1e-6, .tied_embeddings = true, .qkv_bias = true, .qk_norm = false,
                     .rope = octo::rope_style::neox, .max_ctx = 16, .weight_dtype = octo::ir::dtype::q8_0};
  compare(qwen2);
  model_config qwen3{.name = "tiny-qwen3-q4k", .architecture = octo::models::arch::qwen3, .vocab = 48, .hidden = 256,
                     .layers = 2, .heads = 4, .kv_heads = 2, .head_dim = 64, .ffn = 512, .rope_theta = 1000000.0,
                     .rms_eps = 1e-6, .tied_embeddings = false, .qkv_bias = false, .qk_norm = true,
                     .rope = octo::rope_style::neox, .max_ctx = 16, .weight_dtype = octo::ir::dtype::q4_k};
  compare(qwen3);
  model_config llama{.name = "tiny-llama-f16", .architecture = octo::models::arch::llama, .vocab = 40, .hidden = 64,
                     .layers = 2, .heads = 4, .kv_heads = 2, .head_dim = 16, .ffn = 96, .rope_theta = 10000.0,
                     .rms_eps = 1e-5, .tied_embeddings = false, .qkv_bias = false, .qk_norm = false,
                     .rope = octo::rope_style::interleaved, .max_ctx = 16, .weight_dtype = octo::ir::dtype::f16};
  compare(llama);
}

namespace {

/// The `fast` precision's decode step against `accurate` on the same weights, teacher-forced with the
/// accurate run's tokens: the largest relative L2 of the logits over the steps, and whether every
/// greedy token agreed where accurate's top two were not a near-tie. `dispatches`, when given, gets the
/// fast step's recorded kernels.
double fast_vs_accurate(const model_config& c, int steps, std::uint64_t* dispatches = nullptr) {
  CAPTURE(c.name);
  const auto p = octo::models::decoder_step(c, {.argmax = true});
  auto fo = octo_test::small_options(), ao = octo_test::small_options();
  fo.precision = octo::vm::matmul_precision::fast;
  ao.precision = octo::vm::matmul_precision::accurate;
  octo::vm::vulkan_vm fast(fo), accurate(ao);
  fast.load(p);
  accurate.load(p);
  load_weights(fast, p, 11);
  load_weights(accurate, p, 11);
  double worst = 0.0;
  std::int32_t token = 5;
  for (int pos = 0; pos < steps; ++pos) {
    CAPTURE(pos);
    for (auto* vm : {&fast, &accurate}) {
      write_int(*vm, "tokens", token);
      write_int(*vm, "pos", pos);
      vm->set_position(static_cast<std::uint32_t>(pos));
      vm->execute();
    }
    const auto lf = fast.read_f32("logits"), la = accurate.read_f32("logits");
    REQUIRE(lf.size() == la.size());
    double d2 = 0.0, a2 = 0.0;
    for (std::size_t i = 0; i < la.size(); ++i) {
      d2 += (double(lf[i]) - la[i]) * (double(lf[i]) - la[i]);
      a2 += double(la[i]) * la[i];
    }
    worst = std::max(worst, std::sqrt(d2 / std::max(a2, 1e-30)));
    // The same greedy token unless accurate's top two are closer than 8x the RMS difference.
    std::vector<float> sorted(la);
    std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<>());
    const double near = 8 * std::sqrt(d2 / double(la.size()));
    if (double(sorted[0]) - sorted[1] > near) CHECK(read_token(fast) == read_token(accurate));
    token = read_token(accurate);
  }
  octo_test::check_clean(fast);
  if (dispatches) *dispatches = fast.stats().dispatches;
  return worst;
}

}  // namespace

TEST_CASE("precision contract: the fast decode step (integer-dot GEMVs) within relative L2 3e-2 of accurate, same tokens") {
  // docs/precision.md "Decode GEMVs on integer dot products". OCTO_GEMV_IDOT=1: the integer-dot GEMVs on
  // any device with the instruction (lavapipe runs them without hardware support, so its default would
  // keep the float loops); on the H100 they are the `fast` default.
  ::setenv("OCTO_GEMV_IDOT", "1", 1);
  model_config qwen2{.name = "tiny-qwen2-q8", .architecture = octo::models::arch::qwen2, .vocab = 64, .hidden = 96,
                     .layers = 2, .heads = 3, .kv_heads = 1, .head_dim = 32, .ffn = 160, .rope_theta = 1000000.0,
                     .rms_eps = 1e-6, .tied_embeddings = true, .qkv_bias = true, .qk_norm = false,
                     .rope = octo::rope_style::neox, .max_ctx = 16, .weight_dtype = octo::ir::dtype::q8_0};
  model_config qwen2_q4{qwen2};
  qwen2_q4.name = "tiny-qwen2-q4_0";
  qwen2_q4.weight_dtype = octo::ir::dtype::q4_0;
  model_config qwen3{.name = "tiny-qwen3-q4k", .architecture = octo::models::arch::qwen3, .vocab = 48, .hidden = 256,
                     .layers = 2, .heads = 4, .kv_heads = 2, .head_dim = 64, .ffn = 512, .rope_theta = 1000000.0,
                     .rms_eps = 1e-6, .tied_embeddings = false, .qkv_bias = false, .qk_norm = true,
                     .rope = octo::rope_style::neox, .max_ctx = 16, .weight_dtype = octo::ir::dtype::q4_k};
  model_config qwen3_q6{qwen3};
  qwen3_q6.name = "tiny-qwen3-q6k";
  qwen3_q6.weight_dtype = octo::ir::dtype::q6_k;
  // Where x is rounded: by every GEMV workgroup (mode 0, OCTO_GEMV_X8=0); once ahead of each RMSNORM-fused
  // GEMV (1, OCTO_GEMV_X8=1 and OCTO_GEMV_X8_WRITER=0) or of every GEMV (2); by the residual GEMV_ADD that
  // wrote it, for the RMSNORM-fused GEMVs that read it (3: the default, the rows here too short for a
  // launch ahead; 4: OCTO_GEMV_X8=1, writers on, the SWIGLUs rounding theirs for the down projections
  // too). The same runs every way. Ahead, the GEMVs of a
  // wavefront that read one x with one norm share one launch: the Q, K and V projections one and gate|up
  // one a layer, the head one (five more kernels a step on the two layers; nine if each GEMV had its
  // own). With the writers rounding, only the first layer's Q, K and V (x from the embedding) keep a
  // launch ahead: one more kernel a step than mode 0, and none in the default. The writer's runs are
  // the launch's to the bit (the same stored row, the same rounding and squares), so mode 4's logits are
  // mode 1's: the same error against `accurate`.
  struct mode {
    const char* x8;      // OCTO_GEMV_X8, or null: unset
    const char* writer;  // OCTO_GEMV_X8_WRITER
  };
  const mode modes[] = {{"0", "1"}, {"1", "0"}, {"2", "0"}, {nullptr, "1"}, {"1", "1"}};
  // A sampled run (validation twin, sanitizer build) keeps one model an architecture: Q8_0 and Q4_K.
  std::vector<model_config> models{qwen2, qwen3};
  if (!octo::test::sampled_out("the Q4_0 and Q6_K models of the fast-decode precision contract"))
    models = {qwen2, qwen2_q4, qwen3, qwen3_q6};
  std::vector<std::uint64_t> kernels[std::size(modes)];
  std::vector<double> errs[std::size(modes)];
  for (std::size_t m = 0; m < std::size(modes); ++m) {
    if (modes[m].x8) ::setenv("OCTO_GEMV_X8", modes[m].x8, 1);
    else ::unsetenv("OCTO_GEMV_X8");
    ::setenv("OCTO_GEMV_X8_WRITER", modes[m].writer, 1);
    CAPTURE(m);
    for (const model_config& c : models) {
      std::uint64_t n = 0;
      const double err = fast_vs_accurate(c, 8, &n);
      kernels[m].push_back(n);
      errs[m].push_back(err);
      MESSAGE(c.name << " (mode " << m << "): largest relative L2 of fast vs accurate decode logits over 8 steps " << err);
      CHECK(err < 3e-2);  // measured 0.014-0.016 on lavapipe (x rounded to 8 bits per 16-element run at every GEMV of 2 layers)
      CHECK(err > 0.0);  // the integer-dot path ran: it does not reproduce the f32 sums
    }
  }
  for (std::size_t i = 0; i < kernels[0].size(); ++i) {
    CAPTURE(i);
    CHECK(kernels[1][i] == kernels[0][i] + 2 * 2 + 1);
    CHECK(kernels[2][i] > kernels[1][i]);
    CHECK(kernels[3][i] == kernels[0][i]);
    CHECK(kernels[4][i] == kernels[0][i] + 1);
    CHECK(errs[4][i] == errs[1][i]);
  }
  ::unsetenv("OCTO_GEMV_X8_WRITER");
  ::unsetenv("OCTO_GEMV_X8");
  ::unsetenv("OCTO_GEMV_IDOT");
}
