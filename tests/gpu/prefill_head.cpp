// A prefill program on the Vulkan VM: the default program runs the final norm and the LM head for the
// last prompt row only (logits [1, vocab]); that row equals the all-rows program's last row and the
// reference VM's. And the precision contract (docs/precision.md): the default `fast` precision's last-row
// logits within relative L2 5e-3 of `accurate`, the same greedy token unless the top two are a near-tie.
// On a device without cooperative matrices (lavapipe) both precisions run the same f32 kernels; on one
// with them (the H100) the second case checks gemm_coopf in a whole prefill.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "../support/test_data.hpp"
#include "gpu_support.hpp"
#include "octo/detail/element_convert.hpp"
#include "octo/detail/quant_blocks.hpp"
#include "octo/ir/validate.hpp"
#include "octo/models/decoder.hpp"
#include "octo/vm/reference_vm.hpp"
#include "octo/vm/vulkan_vm.hpp"

namespace ir = octo::ir;
namespace models = octo::models;

namespace {

models::model_config small_qwen2(ir::dtype wd, std::int64_t hidden, std::int64_t ffn, std::int64_t layers,
                                 std::int64_t vocab, models::arch a = models::arch::qwen2) {
  models::model_config c;
  c.name = "prefill-head-test";
  c.architecture = a;
  c.vocab = vocab;
  c.hidden = hidden;
  c.layers = layers;
  c.heads = hidden / 32;
  c.kv_heads = hidden / 64;
  c.head_dim = 32;
  c.ffn = ffn;
  c.rope_theta = 1e6;
  c.rms_eps = 1e-6;
  c.qkv_bias = a == models::arch::qwen2;
  c.qk_norm = a == models::arch::qwen3;  // Qwen3's per-head q / k norms
  c.max_ctx = 128;
  c.weight_dtype = wd;
  return c;
}

/// Every weight of `p`, as the bytes of its dtype: matrices uniform with unit-variance outputs, norm
/// weights near 1, biases small. The same seed gives the same bytes for every program of one config.
std::vector<std::pair<std::string, std::vector<std::byte>>> random_weights(const ir::program& p, std::uint64_t seed) {
  std::vector<std::pair<std::string, std::vector<std::byte>>> out;
  for (const auto& b : p.buffers) {
    if (b.kind != ir::buffer_kind::weight) continue;
    std::mt19937_64 rng(seed ^ std::hash<std::string>{}(b.name.str()));
    std::vector<std::byte> bytes(static_cast<std::size_t>(b.nbytes()));
    if (b.shape.size() == 2) {
      const std::int64_t n = b.shape[0], k = b.shape[1];
      const float a = std::sqrt(3.0f / float(k));
      std::uniform_real_distribution<float> u(-a, a);
      const auto row_bytes = static_cast<std::size_t>(ir::nbytes(b.dtype, k));
      std::vector<float> row(static_cast<std::size_t>(k));
      for (std::int64_t r = 0; r < n; ++r) {
        for (auto& v : row) v = u(rng);
        auto* dst = bytes.data() + row_bytes * static_cast<std::size_t>(r);
        if (ir::is_block_quantized(b.dtype))
          octo::detail::quantize_row(b.dtype, row.data(), reinterpret_cast<std::uint8_t*>(dst), k);
        else octo::detail::from_f32(b.dtype, row, std::span<std::byte>(dst, row_bytes));
      }
    } else {
      const bool bias = b.name.view().find("bias") != std::string_view::npos;
      std::uniform_real_distribution<float> u(bias ? -0.1f : 0.8f, bias ? 0.1f : 1.2f);
      std::vector<float> v(static_cast<std::size_t>(b.numel()));
      for (auto& x : v) x = u(rng);
      octo::detail::from_f32(b.dtype, v, bytes);
    }
    out.emplace_back(b.name.str(), std::move(bytes));
  }
  return out;
}

std::vector<std::int32_t> prompt_ids(std::int64_t T, std::int64_t vocab) {
  std::vector<std::int32_t> ids(static_cast<std::size_t>(T));
  for (std::int64_t t = 0; t < T; ++t) ids[static_cast<std::size_t>(t)] = static_cast<std::int32_t>((t * 7919 + 13) % vocab);
  return ids;
}
std::vector<std::int32_t> positions(std::int64_t T) {
  std::vector<std::int32_t> p(static_cast<std::size_t>(T));
  for (std::int64_t t = 0; t < T; ++t) p[static_cast<std::size_t>(t)] = static_cast<std::int32_t>(t);
  return p;
}

octo::vm::vulkan_options opts(octo::vm::matmul_precision p) {
  auto o = octo_test::small_options();
  o.precision = p;
  return o;
}

/// Runs program `p` (already validated) on a fresh Vulkan VM; returns its logits.
std::vector<float> run_vulkan(octo::vm::vulkan_vm& vm, const ir::program& p, std::uint64_t seed, std::int64_t T,
                              std::int64_t vocab) {
  vm.load(p);
  for (const auto& [name, bytes] : random_weights(p, seed)) vm.write_bytes(name, bytes);
  const auto ids = prompt_ids(T, vocab), pos = positions(T);
  vm.write_bytes("tokens", std::as_bytes(std::span<const std::int32_t>(ids)));
  vm.write_bytes("pos", std::as_bytes(std::span<const std::int32_t>(pos)));
  vm.set_position(0, static_cast<std::uint32_t>(T));
  vm.execute();
  octo_test::check_clean(vm);
  return vm.read_f32("logits");
}

std::size_t argmax(std::span<const float> v) {
  std::size_t b = 0;
  for (std::size_t i = 1; i < v.size(); ++i)
    if (v[i] > v[b]) b = i;
  return b;
}

}  // namespace

TEST_CASE("prefill: the last-row head equals the all-rows program's last row, on Vulkan and the reference VM") {
  for (ir::dtype wd : {ir::dtype::f16, ir::dtype::q8_0}) {
    CAPTURE(ir::name(wd));
    const auto c = small_qwen2(wd, 128, 256, 2, 1000);
    const std::int64_t T = 20;
    const auto last = models::prefill(c, T);
    const auto all = models::prefill(c, T, {.all_logits = true});
    REQUIRE(ir::validate(last).ok);
    REQUIRE(ir::validate(all).ok);
    octo::vm::vulkan_vm vm(opts(octo::vm::matmul_precision::accurate));
    const auto got_last = run_vulkan(vm, last, 7, T, c.vocab);
    const auto got_all = run_vulkan(vm, all, 7, T, c.vocab);
    REQUIRE(got_last.size() == static_cast<std::size_t>(c.vocab));
    REQUIRE(got_all.size() == static_cast<std::size_t>(T * c.vocab));
    const std::vector<float> all_last(got_all.end() - c.vocab, got_all.end());
    // GEMV (one row) and GEMM (all rows) kernels sum in different orders: a few ulps apart.
    CHECK(octo::test::rel_l2(got_last, all_last) < 1e-5);

    octo::vm::reference_vm ref(last);
    for (const auto& [name, bytes] : random_weights(last, 7)) ref.write_bytes(name, bytes);
    ref.write_i32("tokens", prompt_ids(T, c.vocab));
    ref.write_i32("pos", positions(T));
    ref.run();
    CHECK(octo::test::rel_l2(got_last, ref.read_f32("logits")) < 1e-4);
  }
}

TEST_CASE("precision contract: the default prefill's last-row logits within relative L2 5e-3 of accurate, same greedy token") {
  // Shapes where the tensor-core GEMM runs (>= 16 rows, K a multiple of 32): 256 wide, 4 layers.
  for (ir::dtype wd : {ir::dtype::f16, ir::dtype::q8_0, ir::dtype::q4_k}) {
    CAPTURE(ir::name(wd));
    const auto c = small_qwen2(wd, 256, 768, 4, 3000);
    const std::int64_t T = 100;
    const auto p = models::prefill(c, T);
    octo::vm::vulkan_vm fast(opts(octo::vm::matmul_precision::fast));
    octo::vm::vulkan_vm accurate(opts(octo::vm::matmul_precision::accurate));
    MESSAGE("default precision on " << fast.device().name << ": "
                                    << std::string(fast.device().cooperative_matrix_nv ? "f16 factors on tensor cores"
                                                                                       : "f32 (no cooperative matrices)"));
    const auto f = run_vulkan(fast, p, 11, T, c.vocab);
    const auto a = run_vulkan(accurate, p, 11, T, c.vocab);
    const double err = octo::test::rel_l2(f, a);
    MESSAGE(ir::name(wd) << ": relative L2 of fast vs accurate last-row logits " << err);
    CHECK(err < 5e-3);
    // Greedy tokens: equal unless accurate's top two are a near-tie, closer than 8x the RMS difference.
    const std::size_t best = argmax(a);
    double second = -1e30, diff2 = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (i != best) second = std::max(second, double(a[i]));
      diff2 += (double(f[i]) - a[i]) * (double(f[i]) - a[i]);
    }
    const double near = 8 * std::sqrt(diff2 / double(a.size()));
    if (double(a[best]) - second > near) CHECK(argmax(f) == best);
    else MESSAGE("near-tie: top two " << double(a[best]) - second << " apart, the greedy token may differ");
  }
}

TEST_CASE("the default prefill (GEMV_ADD, RMSNORM_GEMV, RMSNORM_SWIGLU over every row) and the residual adds alone: the plain prefill's logits, at both precisions") {
  // models::prefill_schedule() folds the o and down projections' residual adds into GEMV_ADD, the layer
  // norms into RMSNORM_GEMV (q, k, v) and RMSNORM_SWIGLU (gate and up with their SILU_MUL), which the
  // Vulkan VM runs on its tiled GEMM kernels (src/vulkan/kernels/gemv.cpp). At 40 rows the norm is in
  // the kernels' staging (x times the norm weight, the 1 / RMS after the sums); with
  // OCTO_GEMM_NORM_AHEAD=1 (the planner's form from 256 rows, the runtime's default there) a pass ahead
  // of them writes the normalized rows the GEMMs read. Either way the logits match the plain prefill's
  // and the reference VM's to float32 rounding (the `fast` bound: f16 factors), not bit for bit. A Qwen3
  // shape (F16) also folds its per-head q / k norms into their RoPE (RMSNORM_ROPE, RMSNORM_ROPE_KV).
  const auto sc = models::prefill_schedule();
  const auto residual_sc = models::prefill_schedule(false);
  const ir::schedule_config plain_sc;
  const std::pair<ir::dtype, models::arch> forms[] = {
      {ir::dtype::f16, models::arch::qwen2}, {ir::dtype::q4_k, models::arch::qwen2}, {ir::dtype::f16, models::arch::qwen3}};
  for (const auto& [wd, a] : forms) {
    for (auto precision : {octo::vm::matmul_precision::accurate, octo::vm::matmul_precision::fast}) {
      CAPTURE(ir::name(wd));
      CAPTURE(a == models::arch::qwen3);
      CAPTURE(precision == octo::vm::matmul_precision::fast);
      const auto c = small_qwen2(wd, 256, 512, 2, 1000, a);
      const std::int64_t T = 40;
      const auto plain = models::prefill(c, T, {.schedule = &plain_sc});
      const auto fused = models::prefill(c, T, {.schedule = &sc});
      const auto residual_only = models::prefill(c, T, {.schedule = &residual_sc});
      REQUIRE(ir::validate(fused).ok);
      std::size_t gemv_add = 0, norm_gemv = 0, swiglu = 0, norm_rope = 0, norm_rope_kv = 0, gemv_rope = 0, gemv_kv = 0;
      for (const auto& t : fused.tasks) {
        gemv_add += t.op == ir::opcode::gemv_add;
        norm_gemv += t.op == ir::opcode::rmsnorm_gemv;
        swiglu += t.op == ir::opcode::rmsnorm_swiglu;
        norm_rope += t.op == ir::opcode::rmsnorm_rope;
        norm_rope_kv += t.op == ir::opcode::rmsnorm_rope_kv;
        gemv_rope += t.op == ir::opcode::rmsnorm_gemv_rope;
        gemv_kv += t.op == ir::opcode::rmsnorm_gemv_kv;
      }
      // 2 layers. Qwen2: q RMSNORM_GEMV_ROPE, k and v RMSNORM_GEMV_KV (RoPE and the cache write in the
      // GEMM kernels' epilogue). Qwen3: q and k RMSNORM_GEMV, then RMSNORM_ROPE and RMSNORM_ROPE_KV (the
      // per-head norm between); v RMSNORM_GEMV_KV. The last-row head stays RMSNORM + GEMV_TILE.
      CHECK(norm_rope == (c.qk_norm ? 2u : 0u));
      CHECK(norm_rope_kv == (c.qk_norm ? 2u : 0u));
      CHECK(gemv_rope == (c.qk_norm ? 0u : 2u));
      CHECK(gemv_kv == (c.qk_norm ? 2u : 4u));
      CHECK(gemv_add == 4);
      CHECK(norm_gemv == (c.qk_norm ? 4u : 0u));
      CHECK(swiglu == 2);
      const bool fast = precision == octo::vm::matmul_precision::fast;
      octo::vm::vulkan_vm vm(opts(precision));
      const auto want = run_vulkan(vm, plain, 11, T, c.vocab);
      const auto got = run_vulkan(vm, fused, 11, T, c.vocab);
      CHECK(octo::test::rel_l2(got, want) < (fast ? 5e-3 : 1e-5));
      CHECK(argmax(got) == argmax(want));
      {
        ::setenv("OCTO_GEMM_NORM_AHEAD", "1", 1);
        octo::vm::vulkan_vm vm_ahead(opts(precision));
        const auto ahead = run_vulkan(vm_ahead, fused, 11, T, c.vocab);
        ::unsetenv("OCTO_GEMM_NORM_AHEAD");
        CHECK(octo::test::rel_l2(ahead, want) < (fast ? 5e-3 : 1e-5));
        CHECK(argmax(ahead) == argmax(want));
      }
      // The residual added in the GEMM's epilogue is the ADD's own sum: the same logits bit for bit.
      std::size_t residual_adds = 0;
      for (const auto& t : residual_only.tasks) residual_adds += t.op == ir::opcode::gemv_add;
      CHECK(residual_adds == 4);
      CHECK(run_vulkan(vm, residual_only, 11, T, c.vocab) == want);
      octo::vm::reference_vm ref(fused);
      for (const auto& [name, bytes] : random_weights(fused, 11)) ref.write_bytes(name, bytes);
      ref.write_i32("tokens", prompt_ids(T, c.vocab));
      ref.write_i32("pos", positions(T));
      ref.run();
      CHECK(octo::test::rel_l2(got, ref.read_f32("logits")) < (fast ? 5e-3 : 1e-4));
    }
  }
}
