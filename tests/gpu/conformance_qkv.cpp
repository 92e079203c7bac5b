// Conformance of RMSNORM_GEMV_QKV and RMSNORM_GEMV_NORM_QKV (one norm's q, k and v projections in one task; Qwen3's form with its q and k head norms; tests/gpu/conformance.cpp
// says how cases run): the one launch of a module's _qkv form (gemv.comp GEMV_QKV) over every weight
// format, and the three launches side by side where the projections cannot share one (weights of
// different formats, OCTO_GEMV_QKV=0), against the composition of the plain ops (RMSNORM_GEMV_ROPE for q,
// RMSNORM_GEMV_KV for k and v: include/octo/semantics/fused.hpp). Its own executable, so ctest runs it
// beside the other conformance cases (on lavapipe each case compiles its pipelines cold).
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <random>
#include <utility>
#include <string>
#include <vector>

#include "conformance_support.hpp"
#include "octo/vm/vulkan_vm.hpp"

namespace {

struct qkv_shape {
  std::int64_t q_heads, kv_heads, head_dim, n_rot;
  int style;
  bool bias;
  bool head_norm = false;  // Qwen3's form, RMSNORM_GEMV_NORM_QKV (no bias)
  dtype head_norm_dtype = dtype::f32;
};

/// One RMSNORM_GEMV_QKV (RMSNORM_GEMV_NORM_QKV with s.head_norm) task over x [1, K] into q and two caches of
/// S slots at pos 1 (+ globals.pos); v's weight in `wv_dt` (the others in `wd`).
case_builder qkv_case(dtype wd, dtype wv_dt, dtype cache_dt, const qkv_shape& s, std::int64_t K, std::int64_t S) {
  const std::int64_t nq = s.q_heads * s.head_dim, nkv = s.kv_heads * s.head_dim;
  case_builder c;
  auto x = c.buf("x", buffer_kind::io_input, dtype::f32, {1, K});
  auto nw = c.buf("norm_w", buffer_kind::weight, dtype::f32, {K});
  auto wq = c.buf("w_q", buffer_kind::weight, wd, {nq, K});
  auto wk = c.buf("w_k", buffer_kind::weight, wd, {nkv, K});
  auto wv = c.buf("w_v", buffer_kind::weight, wv_dt, {nkv, K});
  auto pos = c.buf("pos", buffer_kind::io_input, dtype::i32, {1});
  auto q = c.buf("q", buffer_kind::io_output, dtype::f32, {1, nq});
  auto kc = c.buf("k_cache", buffer_kind::kv_cache, cache_dt, {S, nkv});
  auto vc = c.buf("v_cache", buffer_kind::kv_cache, cache_dt, {S, nkv});
  c.range[nw] = {0.5f, 1.5f};
  c.range[x] = {-3.0f, 3.0f};  // an RMS far from 1: the norm must matter
  c.ints(pos, {57});
  std::vector<std::int32_t> in{x, nw, wq, wk, wv, pos};
  if (s.bias) in.push_back(c.buf("b_qkv", buffer_kind::weight, dtype::f32, {nq + 2 * nkv}));
  if (s.head_norm) {
    const auto hn = c.buf("hn_qk", buffer_kind::weight, s.head_norm_dtype, {2 * s.head_dim});
    c.range[hn] = {0.25f, 2.0f};
    in.push_back(hn);
  }
  c.task(s.head_norm ? opcode::rmsnorm_gemv_norm_qkv : opcode::rmsnorm_gemv_qkv, in, {q, kc, vc},
         params({{param_key::K, double(K)}, {param_key::hidden, double(K)}, {param_key::eps, 1e-6},
                 {param_key::head_dim, double(s.head_dim)}, {param_key::n_rot, double(s.n_rot)},
                 {param_key::theta, 1000000.0}, {param_key::rope_style, double(s.style)}, {param_key::pos, 1}}));
  return c;
}

/// The launches the Vulkan VM recorded for the case's one task: 1 where the projections share a launch.
std::uint64_t task_dispatches(octo::vm::vulkan_vm& vm) { return vm.stats().task_dispatches; }

/// The bytes of every buffer the case's task writes, run on `vm` at globals.pos 2 from inputs drawn with
/// `seed` (the same inputs for the same seed and case).
std::vector<std::vector<std::byte>> outputs_on(octo::vm::vulkan_vm& vm, case_builder& c, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  vm.load(c.p);
  for (const auto& b : c.p.buffers) {
    std::vector<std::byte> bytes;
    if (auto it = c.init.find(b.id); it != c.init.end()) {
      bytes = it->second;
    } else {
      auto r = c.range.count(b.id) ? c.range[b.id] : std::pair<float, float>{-1.0f, 1.0f};
      bytes = random_bytes(b, rng, r.first, r.second);
    }
    vm.write_bytes(std::string_view(b.name), bytes);
  }
  vm.set_position(2);
  vm.execute();
  vm.set_position(0);
  std::vector<std::vector<std::byte>> out;
  for (const auto& b : c.p.buffers)
    if (written_by_a_task(c.p, b.id)) out.push_back(vm.read_bytes(std::string_view(b.name)));
  return out;
}

/// Every weight format's one launch (OCTO_GEMV_QKV=1: the 256-element formats too, which take three by
/// default: kernels/gemv.cpp qkv_one_launch) over each shape, into caches of `cache_of(shape)`, against
/// the reference VM; globals.pos = 2: the rows go to cache slot 3, every other slot as it was.
void every_format_one_launch(std::initializer_list<qkv_shape> shapes, dtype (*cache_of)(const qkv_shape&)) {
  const octo_test::scoped_env one_launch("OCTO_GEMV_QKV", "1");
  for (dtype wd : weight_dtypes) {
    const std::int64_t K = octo::ir::layout(wd).block_elems == 256 ? 768 : 480;
    for (const qkv_shape& s : shapes) {
      const dtype cache_dt = cache_of(s);
      CAPTURE(octo::ir::name(wd));
      CAPTURE(s.q_heads);
      CAPTURE(s.head_dim);
      CAPTURE(octo::ir::name(cache_dt));
      case_builder c = qkv_case(wd, wd, cache_dt, s, K, 6);
      run_case(c, {2e-4 * double(K) / 256.0, cache_dt == dtype::f32 ? 2e-4 : 1e-2}, 2);
      // One launch of the _qkv form where the device has subgroup arithmetic (lavapipe does).
      if (gpu().device().subgroup_arithmetic) CHECK(task_dispatches(gpu()) == 1);
    }
  }
}

/// The integer loops (the `fast` precision) over `formats`: they round x to int8 per run of 16
/// (docs/precision.md; conformance_gemv.cpp checks them against that contract), so here the one launch
/// must give the three launches' bits (OCTO_GEMV_QKV=0, the kernels the three tasks ran), and both stay
/// near the f32 composition (a wrong part, pair or head is off by the value itself; the rounding moved
/// outputs of about 1.5 by up to 0.23 on Q8_0 at x in [-3, 3]).
void idot_one_launch_as_three(const qkv_shape& s, std::initializer_list<dtype> formats) {
  const octo_test::scoped_env idot("OCTO_GEMV_IDOT", "1");
  REQUIRE(gpu_fast().device().int_dot);  // Vulkan 1.3 requires shaderIntegerDotProduct
  for (dtype wd : formats) {
    CAPTURE(octo::ir::name(wd));
    const std::int64_t K = octo::ir::layout(wd).block_elems == 256 ? 768 : 480;
    case_builder c = qkv_case(wd, wd, dtype::f16, s, K, 6);
    std::vector<std::vector<std::byte>> one, three;
    for (const bool one_launch : {true, false}) {
      const octo_test::scoped_env knob("OCTO_GEMV_QKV", one_launch ? "1" : "0");
      run_case(c, {0.5, 0.1}, 2, &gpu_fast());
      (one_launch ? one : three) = outputs_on(gpu_fast(), c, seed());
      if (!one_launch || gpu_fast().device().subgroup_arithmetic) CHECK(task_dispatches(gpu_fast()) == (one_launch ? 1 : 3));
    }
    CHECK(one == three);
  }
}

/// Three launches on request (OCTO_GEMV_QKV=0) and without subgroup arithmetic (no _qkv form there).
void three_launch_forms(const qkv_shape& s) {
  for (const auto& [knob, value] : {std::pair<const char*, const char*>{"OCTO_GEMV_QKV", "0"}, {"OCTO_KERNELS_NO_SUBGROUP", "1"}}) {
    CAPTURE(std::string(knob));
    const octo_test::scoped_env env(knob, value);
    case_builder c = qkv_case(dtype::q8_0, dtype::q8_0, dtype::f16, s, 480, 6);
    run_case(c, {2e-4 * 480.0 / 256.0, 1e-2}, 2);
    CHECK(task_dispatches(gpu()) == 3);
  }
}

}  // namespace

TEST_CASE("conformance: RMSNORM_GEMV_QKV, every weight format: one launch over q, k and v") {
  // Qwen2.5's form (rotate-half, a bias, 7 query heads a KV head), an interleaved one without a bias
  // (Llama's) rotating part of each head, and heads of 16. F16 / F32 / BF16 caches.
  every_format_one_launch({qkv_shape{7, 1, 64, 64, 0, true}, qkv_shape{4, 2, 32, 16, 1, false}, qkv_shape{3, 3, 16, 16, 0, true}},
                          [](const qkv_shape& s) { return s.head_dim == 64 ? dtype::f16 : (s.head_dim == 32 ? dtype::f32 : dtype::bf16); });
}

TEST_CASE("conformance: RMSNORM_GEMV_QKV's integer-dot loops (the `fast` precision) and its three-launch forms") {
  const qkv_shape s{7, 1, 64, 64, 0, true};
  idot_one_launch_as_three(s, {dtype::q8_0, dtype::q4_k, dtype::q6_k});
  {
    // Weights of two formats (a Q4_K_M file's Q6_K v beside Q4_K q and k): the three launches side by side.
    const octo_test::scoped_env idot("OCTO_GEMV_IDOT", "1");
    case_builder c = qkv_case(dtype::q4_k, dtype::q6_k, dtype::f16, s, 768, 6);
    run_case(c, {0.5, 0.1}, 2, &gpu_fast());
    CHECK(task_dispatches(gpu_fast()) == 3);
  }
  three_launch_forms(s);
}

TEST_CASE("conformance: RMSNORM_GEMV_NORM_QKV (Qwen3's q and k head norms), every weight format: one launch") {
  // Qwen3's form (heads of 128, two query heads a KV head), an interleaved one rotating part of each head
  // with BF16 head norms, and heads of 16; against RMSNORM_GEMV_NORM_ROPE (q), RMSNORM_GEMV_NORM_KV (k) and
  // RMSNORM_GEMV_KV (v). Each head's last workgroup normalizes it from the task's scratch (q's part, then
  // k's), so a part reading the other's sums or counters, or the wrong half of hn_qk, is off by the value.
  // The one launch's pipelines are the RMSNORM_GEMV_QKV cases' (the form is a push-constant flag).
  every_format_one_launch({qkv_shape{4, 2, 128, 128, 0, false, true}, qkv_shape{3, 1, 64, 32, 1, false, true, dtype::bf16},
                           qkv_shape{2, 2, 16, 16, 0, false, true}},
                          [](const qkv_shape& s) { return s.head_dim == 128 ? dtype::f16 : (s.head_dim == 64 ? dtype::bf16 : dtype::f32); });
}

TEST_CASE("conformance: RMSNORM_GEMV_NORM_QKV's integer-dot loops and three-launch forms (the head norms' scratch in two parts)") {
  // Three launches at once: q's and k's head norms each in their own part of the task's scratch.
  const qkv_shape s{4, 2, 128, 128, 0, false, true};
  idot_one_launch_as_three(s, {dtype::q8_0, dtype::q4_k});
  three_launch_forms(s);
}
