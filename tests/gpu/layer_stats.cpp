// Layer statistics and the non-finite guard (issue 18 item 1): the Vulkan VM's observer
// (shaders/vm_observe.comp) against the reference VM's host computation in double, on every pass of a
// real model (prefill, steps in flight on the device, the host loop, a streamed chain of programs);
// models whose weights drive activations past float range stop with one error naming the layer and the
// pass, with nothing computed from the bad values emitted.
#include <doctest/doctest.h>

#include "../support/temp_dir.hpp"
#include "../support/test_data.hpp"
#include "../support/token_loop_checks.hpp"
#include "gpu_support.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <octo/error.hpp>
#include <octo/ir/program.hpp>
#include <octo/vm/vulkan_vm.hpp>
#include <octo/model_file/gguf.hpp>
#include <octo/model_file/gguf_writer.hpp>
#include <octo/runtime/engine.hpp>
#include <octo/runtime/model_source.hpp>

using namespace octo;
namespace tl = octo::test::token_loop;

namespace {

constexpr auto vulkan = runtime::backend::vulkan;
constexpr auto reference = runtime::backend::reference;

/// Greedy generation recording, for each emitted token, the statistics of the pass that produced it.
struct recorded {
  std::vector<std::int32_t> tokens;
  std::vector<std::vector<vm::layer_stats>> passes;
};

recorded generate(runtime::engine& e, std::span<const std::int32_t> prompt, std::int64_t n) {
  recorded r;
  e.reset();
  e.generate(prompt, n, runtime::sampling_params{}, [&](std::int32_t t) {
    r.tokens.push_back(t);
    r.passes.push_back(e.layer_statistics());
    return true;
  });
  return r;
}

void check_close(float got, float want, const std::string& what) {
  INFO(what << ": " << got << " against the reference's " << want);
  CHECK(std::isfinite(got));
  CHECK(std::fabs(got - want) <= 2e-3f * std::fabs(want) + 1e-5f);
}

/// The same tokens, and per pass and layer the same layer set, value counts, RMS and max |x| (within the
/// VMs' 1e-4 op contract, accumulated over a model) and no non-finite value.
void check_same(const recorded& got, const recorded& want, std::int64_t layers, std::int64_t width,
                std::int64_t prompt_rows) {
  REQUIRE(got.tokens == want.tokens);
  REQUIRE(got.passes.size() == want.passes.size());
  for (std::size_t p = 0; p < got.passes.size(); ++p) {
    const auto& g = got.passes[p];
    const auto& w = want.passes[p];
    REQUIRE(g.size() == std::size_t(layers));
    REQUIRE(w.size() == std::size_t(layers));
    for (std::size_t l = 0; l < g.size(); ++l) {
      const std::string at = "pass " + std::to_string(p) + " layer " + std::to_string(l);
      CHECK(g[l].layer == std::int32_t(l));
      CHECK(w[l].layer == std::int32_t(l));
      CHECK(g[l].values == w[l].values);
      CHECK(g[l].values == std::uint32_t((p == 0 ? prompt_rows : 1) * width));
      CHECK(g[l].non_finite == 0);
      CHECK(w[l].non_finite == 0);
      check_close(g[l].rms, w[l].rms, at + " rms");
      check_close(g[l].max_abs, w[l].max_abs, at + " max |x|");
      CHECK(g[l].rms > 0.0f);
      CHECK(g[l].max_abs >= g[l].rms);
    }
  }
}

/// A copy of `from` at `to` with every value of tensor `name` (F32) in rows [row0, row0 + rows) (of
/// ne0 values each; rows = -1: all) set to `value`.
void poisoned_copy(const std::filesystem::path& from, const std::filesystem::path& to, std::string_view name,
                   float value, std::int64_t row0 = 0, std::int64_t rows = -1) {
  const auto f = model_file::gguf_file::open(from);
  model_file::gguf_writer w(f.alignment());
  for (const auto& kv : f.metadata()) w.set(kv.key, kv.value);
  bool found = false;
  for (std::size_t i = 0; i < f.tensors().size(); ++i) {
    const auto t = f.tensor(i);
    std::vector<std::byte> bytes(t.data.begin(), t.data.end());
    if (t.name == name) {
      REQUIRE(t.type == ir::dtype::f32);
      found = true;
      const std::int64_t ne0 = t.dims[0], n = t.elements();
      const std::int64_t first = row0 * ne0, last = rows < 0 ? n : std::min(n, (row0 + rows) * ne0);
      for (std::int64_t e = first; e < last; ++e) std::memcpy(bytes.data() + e * 4, &value, 4);
    }
    w.add_tensor(std::string(t.name), t.type, std::vector<std::int64_t>(t.dims.begin(), t.dims.end()), bytes);
  }
  REQUIRE_MESSAGE(found, "no tensor " << name);
  w.write(to);
}

runtime::engine_options opts(runtime::backend b, std::uint32_t in_flight) { return tl::options(b, 128, in_flight); }

}  // namespace

TEST_CASE("layer statistics: tiny-qwen's every pass on the Vulkan VM matches the reference VM's, in flight and in the host loop") {
  const auto m = runtime::model_source::open(tl::tiny_qwen());
  const auto& c = m->config();
  const auto prompt = m->tokenizer().encode("Once upon a time", true);
  runtime::engine cpu(tl::tiny_qwen(), opts(reference, 4));
  const auto want = generate(cpu, prompt, 10);
  for (std::uint32_t depth : {4u, 0u}) {
    CAPTURE(depth);
    runtime::engine gpu(tl::tiny_qwen(), opts(vulkan, depth));
    const auto got = generate(gpu, prompt, 10);
    check_same(got, want, c.layers, c.hidden, std::int64_t(prompt.size()));
    CHECK(gpu.last_timing().token_loop_on_device == (depth > 0));
  }
}

TEST_CASE("layer statistics: a streamed chain of programs (one per layer) reports every layer, as the reference VM") {
  const auto path = test::stories260k_gguf();
  const auto m = runtime::model_source::open(path);
  const auto& c = m->config();
  const auto prompt = m->tokenizer().encode("The dog ran", true);
  auto o = opts(vulkan, 0);
  o.resident_layers = 2;  // a chain: embedding, five layer programs (three streamed), head
  runtime::engine gpu(path, o);
  REQUIRE_FALSE(gpu.plan().all_resident());
  auto oc = opts(reference, 0);
  oc.resident_layers = 2;
  runtime::engine cpu(path, oc);
  check_same(generate(gpu, prompt, 6), generate(cpu, prompt, 6), c.layers, c.hidden, std::int64_t(prompt.size()));
}

TEST_CASE("non-finite guard: weights that overflow float32 stop the prompt pass with the layer named, on both VMs") {
  test::temp_dir dir("layer-stats");
  const auto bad = dir / "overflow.gguf";
  // Layer 2's feed-forward norm weight at 1e38 (finite): its gate and up sums overflow to infinity.
  poisoned_copy(tl::tiny_qwen(), bad, "blk.2.ffn_norm.weight", 1e38f);
  const auto m = runtime::model_source::open(bad);
  const auto prompt = m->tokenizer().encode("Once upon a time", true);
  for (auto b : {vulkan, reference}) {
    runtime::engine e(bad, opts(b, 4));
    std::vector<std::int32_t> emitted;
    CHECK_THROWS_WITH_AS(e.generate(prompt, 8, runtime::sampling_params{},
                                    [&](std::int32_t t) {
                                      emitted.push_back(t);
                                      return true;
                                    }),
                         doctest::Contains("the output of layer 2 holds"), octo::error);
    CHECK(emitted.empty());
    const std::string where = "the prompt pass over positions 0-" + std::to_string(prompt.size() - 1);
    CHECK_THROWS_WITH_AS(e.generate(prompt, 8, runtime::sampling_params{}), doctest::Contains(where.c_str()), octo::error);
    // The engine stays usable: the position did not move past the failed pass.
    CHECK(e.position() == 0);
  }
}

TEST_CASE("non-finite guard: a token whose embedding is infinite stops decode at its step; nothing after it is emitted") {
  const auto path = test::stories260k_gguf();
  const auto m = runtime::model_source::open(path);
  const auto prompt = m->tokenizer().encode("Once upon a time, there was", true);
  runtime::engine clean(path, opts(vulkan, 4));
  const auto tokens = generate(clean, prompt, 8).tokens;
  // The first generated token that is neither in the prompt nor generated before it.
  std::size_t k = 0;
  const auto seen = [&](std::int32_t t, std::size_t before) {
    for (auto p : prompt)
      if (p == t) return true;
    for (std::size_t i = 0; i < before; ++i)
      if (tokens[i] == t) return true;
    return false;
  };
  while (k < tokens.size() && seen(tokens[k], k)) ++k;
  REQUIRE(k + 1 < tokens.size());
  const std::int32_t poison = tokens[k];
  test::temp_dir dir("layer-stats");
  const auto bad = dir / "inf-row.gguf";
  poisoned_copy(path, bad, "token_embd.weight", std::numeric_limits<float>::infinity(), poison, 1);
  for (auto [b, depth] : {std::pair{vulkan, 4u}, std::pair{vulkan, 0u}, std::pair{reference, 4u}}) {
    CAPTURE(depth);
    CAPTURE(b == vulkan);
    runtime::engine e(bad, opts(b, depth));
    std::vector<std::int32_t> emitted;
    const std::string where = "the decode step at position " + std::to_string(prompt.size() + k) + " (input token " +
                              std::to_string(poison) + ")";
    CHECK_THROWS_WITH_AS(e.generate(prompt, 8, runtime::sampling_params{},
                                    [&](std::int32_t t) {
                                      emitted.push_back(t);
                                      return true;
                                    }),
                         doctest::Contains(where.c_str()), octo::error);
    // Every token up to the poisoned one (its own step was fine), nothing computed from it.
    CHECK(emitted == std::vector<std::int32_t>(tokens.begin(), tokens.begin() + std::ptrdiff_t(k + 1)));
    const auto stats = e.layer_statistics();
    REQUIRE_FALSE(stats.empty());
    CHECK(stats.front().layer == 0);
    CHECK(stats.front().non_finite > 0);
  }
}

TEST_CASE("layer statistics: off (OCTO_LAYER_STATS=0) the engine reports none and generates the same tokens") {
  const auto m = runtime::model_source::open(tl::tiny_qwen());
  const auto prompt = m->tokenizer().encode("1+2=", true);
  runtime::engine on(tl::tiny_qwen(), opts(vulkan, 4));
  const auto with = generate(on, prompt, 6);
  auto o = opts(vulkan, 4);
  o.vulkan.observe_layers = false;
  runtime::engine off(tl::tiny_qwen(), o);
  const auto without = generate(off, prompt, 6);
  CHECK(without.tokens == with.tokens);
  for (const auto& p : without.passes) CHECK(p.empty());
  CHECK(on.decode_stats().dispatches == off.decode_stats().dispatches + 1);  // the observer
}

TEST_CASE("layer statistics: a layer output of many chunks (one workgroup each) against double, every run alike") {
  // The observer splits each layer's output over up to 1024 workgroups of 16384 values
  // (vm::vulkan::observe_chunks) and the last to arrive merges their partials. Three layers: 300 x 1000
  // values (19 chunks), the same again, and 4 x 10 (its 17 chunks past the first are empty). NaN and
  // infinities planted in different chunks, a largest |x| in another; the figures against the host in
  // double, and the same bits on a second run (the arrival counters are back at 0).
  const std::int64_t R = 300, N = 1000;
  ir::program p;
  auto x = p.add_buffer("x", ir::buffer_kind::io_input, ir::dtype::f32, {R, N});
  auto u = p.add_buffer("u", ir::buffer_kind::io_input, ir::dtype::f32, {4, 10});
  auto y0 = p.add_buffer("y0", ir::buffer_kind::io_output, ir::dtype::f32, {R, N});
  auto y1 = p.add_buffer("y1", ir::buffer_kind::io_output, ir::dtype::f32, {R, N});
  auto y2 = p.add_buffer("y2", ir::buffer_kind::io_output, ir::dtype::f32, {4, 10});
  const auto add = [&](std::int32_t a, std::int32_t b, std::int32_t y, std::int64_t layer, std::int32_t after) {
    ir::task t;
    t.op = ir::opcode::add;
    t.inputs = {a, b};
    t.outputs = {y};
    t.out_counter = p.add_counter();
    if (after >= 0) t.waits.push_back({after, 1});
    t.params.set(ir::param_key::layer, layer);
    p.add_task(t);
    return t.out_counter;
  };
  const auto c0 = add(x, x, y0, 0, -1);  // 2x
  add(y0, x, y1, 1, c0);                 // 3x
  add(u, u, y2, 2, -1);                  // 2u
  std::vector<float> xv(static_cast<std::size_t>(R * N)), uv(40);
  for (std::size_t i = 0; i < xv.size(); ++i) xv[i] = std::sin(0.001f * float(i)) * (1.0f + float(i % 7));
  for (std::size_t i = 0; i < uv.size(); ++i) uv[i] = 0.25f * float(i) - 3.0f;
  xv[5] = std::numeric_limits<float>::quiet_NaN();
  xv[100000] = std::numeric_limits<float>::infinity();
  xv[299999] = -std::numeric_limits<float>::infinity();
  xv[123456] = 1000.0f;
  struct want_t {
    double rms, max_abs;
    std::uint32_t bad, values;
  };
  const auto want = [](const std::vector<float>& v, double k) {
    double ss = 0, mx = 0;
    std::uint32_t bad = 0, finite = 0;
    for (float f : v) {
      const double d = k * double(f);
      if (!std::isfinite(d)) {
        ++bad;
        continue;
      }
      ss += d * d;
      mx = std::max(mx, std::abs(d));
      ++finite;
    }
    return want_t{std::sqrt(ss / finite), mx, bad, static_cast<std::uint32_t>(v.size())};
  };
  const want_t w[] = {want(xv, 2.0), want(xv, 3.0), want(uv, 2.0)};
  vm::vulkan_vm v(octo_test::small_options());
  const auto id = v.add_program(p);
  std::vector<std::vector<vm::layer_stats>> runs;
  for (int run = 0; run < 2; ++run) {
    v.write_bytes(id, "x", std::as_bytes(std::span<const float>(xv)));
    v.write_bytes(id, "u", std::as_bytes(std::span<const float>(uv)));
    v.execute(id);
    runs.push_back(v.layer_statistics(id, 0));
  }
  REQUIRE(runs[0].size() == 3);
  for (std::size_t l = 0; l < 3; ++l) {
    CAPTURE(l);
    const auto& s = runs[0][l];
    CHECK(s.layer == static_cast<std::int32_t>(l));
    CHECK(s.values == w[l].values);
    CHECK(s.non_finite == w[l].bad);
    CHECK(double(s.max_abs) == doctest::Approx(w[l].max_abs).epsilon(1e-6));
    CHECK(double(s.rms) == doctest::Approx(w[l].rms).epsilon(1e-5));
    const auto& t = runs[1][l];
    CHECK(std::memcmp(&s.rms, &t.rms, sizeof s.rms) == 0);
    CHECK(t.max_abs == s.max_abs);
    CHECK(t.non_finite == s.non_finite);
  }
}
