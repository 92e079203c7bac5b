// Control words that act (issue 18 item 3): layer skipping and the GEMM precision switch, recorded once
// as indirect dispatches gated by the control words (vulkan_options::control_words). Nothing skipped is
// bit-exact with the ungated recording; a skipped layer passes its input through (its output equals its
// input) and gives the reference VM's tokens with the same layer skipped; switching at run time needs no
// new recording and gives what a recording made for that setting gives.
#include <doctest/doctest.h>

#include "../support/test_data.hpp"
#include "../support/token_loop_checks.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include <octo/error.hpp>
#include <octo/model_file/hf_to_gguf.hpp>
#include <octo/runtime/engine.hpp>
#include <octo/runtime/model_source.hpp>

using namespace octo;
namespace tl = octo::test::token_loop;

namespace {

constexpr auto vulkan = runtime::backend::vulkan;
constexpr auto reference = runtime::backend::reference;

runtime::engine_options opts(runtime::backend b, bool control, std::vector<std::int64_t> skip = {}) {
  auto o = tl::options(b, 128, 4);
  o.vulkan.control_words = control;
  o.skip_layers = std::move(skip);
  return o;
}

struct run_result {
  std::vector<std::int32_t> tokens;
  std::vector<float> prompt_logits;
  std::vector<std::vector<vm::layer_stats>> stats;
};

run_result generate(runtime::engine& e, std::span<const std::int32_t> prompt, std::int64_t n) {
  run_result r;
  e.reset();
  r.tokens = e.generate(
      prompt, n, runtime::sampling_params{},
      [&](std::int32_t) {
        r.stats.push_back(e.layer_statistics());
        return true;
      },
      &r.prompt_logits);
  return r;
}

/// `b` is `a` bit for bit: tokens, the prompt's logits, and every pass's layer statistics (the decode
/// steps' too).
void check_identical(const run_result& a, const run_result& b) {
  CHECK(b.tokens == a.tokens);
  CHECK(b.prompt_logits == a.prompt_logits);
  REQUIRE(b.stats.size() == a.stats.size());
  for (std::size_t p = 0; p < a.stats.size(); ++p)
    for (std::size_t l = 0; l < a.stats[p].size(); ++l) {
      CHECK(b.stats[p][l].rms == a.stats[p][l].rms);
      CHECK(b.stats[p][l].max_abs == a.stats[p][l].max_abs);
    }
}

std::vector<std::int32_t> prompt_of(const std::filesystem::path& model, const char* text) {
  return runtime::model_source::open(model)->tokenizer().encode(text, true);
}

}  // namespace

TEST_CASE("control words: recorded but nothing skipped, generation is bit-identical to the ungated recording") {
  const auto prompt = prompt_of(tl::tiny_qwen(), "Once upon a time");
  runtime::engine plain(tl::tiny_qwen(), opts(vulkan, false));
  runtime::engine gated(tl::tiny_qwen(), opts(vulkan, true));
  check_identical(generate(plain, prompt, 12), generate(gated, prompt, 12));
  // Every layer task of the gated decode step is an indirect dispatch (a 128-key cache: decode attention
  // is the split-key kernel alone, so the plain step has none).
  CHECK(plain.decode_stats().indirect_dispatches == 0);
  CHECK(gated.decode_stats().indirect_dispatches >= gated.decode_stats().task_dispatches - 4);
  // The gated step also records each task's kernel for the other precision where it differs; one of the
  // two runs a step, so as many task kernels run as in the plain step.
  const auto gs = gated.decode_stats(), ps = plain.decode_stats();
  CHECK(ps.exclusive_dispatches == 0);
  CHECK(gs.task_dispatches - gs.exclusive_dispatches == ps.task_dispatches);
}

TEST_CASE("control words: a skipped layer passes its input through, as on the reference VM") {
  const auto prompt = prompt_of(tl::tiny_qwen(), "Once upon a time");
  for (const std::vector<std::int64_t>& skip : {std::vector<std::int64_t>{1}, std::vector<std::int64_t>{3, 4}}) {
    CAPTURE(skip.front());
    runtime::engine gpu(tl::tiny_qwen(), opts(vulkan, true, skip));
    runtime::engine cpu(tl::tiny_qwen(), opts(reference, false, skip));
    const auto g = generate(gpu, prompt, 10);
    const auto c = generate(cpu, prompt, 10);
    CHECK(g.tokens == c.tokens);
    CHECK(test::rel_l2(g.prompt_logits, c.prompt_logits) < 1e-3);
    runtime::engine full(tl::tiny_qwen(), opts(vulkan, false));
    CHECK(test::rel_l2(g.prompt_logits, generate(full, prompt, 1).prompt_logits) > 1e-2);  // skipping changes the model
    // The skipped layer's output is its input: the previous layer's output, bit for bit.
    for (const auto& pass : g.stats)
      for (auto l : skip) {
        REQUIRE(pass.size() == 6);
        CHECK(pass[std::size_t(l)].rms == pass[std::size_t(l - 1)].rms);
        CHECK(pass[std::size_t(l)].max_abs == pass[std::size_t(l - 1)].max_abs);
      }
  }
}

TEST_CASE("control words: layers skipped and restored at run time without recording again") {
  const auto prompt = prompt_of(tl::tiny_qwen(), "12+30=");
  runtime::engine e(tl::tiny_qwen(), opts(vulkan, true));
  const auto full = generate(e, prompt, 8);
  const auto recordings = e.decode_stats().recordings;
  e.set_skipped_layers(std::vector<std::int64_t>{2});
  const auto skipped = generate(e, prompt, 8);
  runtime::engine fresh(tl::tiny_qwen(), opts(vulkan, true, {2}));
  CHECK(skipped.tokens == generate(fresh, prompt, 8).tokens);
  CHECK(skipped.prompt_logits != full.prompt_logits);
  e.set_skipped_layers({});
  const auto back = generate(e, prompt, 8);
  CHECK(back.tokens == full.tokens);
  CHECK(back.prompt_logits == full.prompt_logits);
  CHECK(e.decode_stats().recordings == recordings);
}

TEST_CASE("control words: the precision switch gives what a recording made for that precision gives") {
  const auto prompt = prompt_of(tl::tiny_qwen(), "Once upon a time, there was a little");
  runtime::engine e(tl::tiny_qwen(), opts(vulkan, true));
  auto fo = opts(vulkan, false);
  fo.vulkan.precision = vm::matmul_precision::fast;
  auto ao = opts(vulkan, false);
  ao.vulkan.precision = vm::matmul_precision::accurate;
  runtime::engine fast(tl::tiny_qwen(), fo), accurate(tl::tiny_qwen(), ao);
  for (auto p : {vm::matmul_precision::accurate, vm::matmul_precision::fast, vm::matmul_precision::accurate}) {
    e.set_precision(p);
    const auto got = generate(e, prompt, 4);
    const auto want = generate(p == vm::matmul_precision::fast ? fast : accurate, prompt, 4);
    CHECK(got.prompt_logits == want.prompt_logits);  // bitwise: the same kernels ran
    CHECK(got.tokens == want.tokens);
  }
}

TEST_CASE("control words: integer-dot GEMVs with x rounded once ahead, gated: bit-identical, and a skipped layer passes through") {
  // The decode GEMVs of a Q8_0 model on packed int8 dot products (OCTO_GEMV_IDOT=1: also where the device
  // does not accelerate them, as on lavapipe), x rounded once ahead of the RMSNORM-fused ones
  // (OCTO_GEMV_X8=1): a `gemv_quantize_x` launch before the Q|K|V level, shared by its three tasks, and one
  // before gate|up (docs/vulkan.md). Under control words those launches are gated with their layer's
  // tasks and deduplicated only with the same gate: nothing skipped must be bit-identical to the ungated
  // recording, and a skipped layer (its rounding launches skipped too) must still pass its input through
  // while the next layer rounds its own x.
  const auto q8 = std::filesystem::temp_directory_path() / ("octo_control_words_" + std::to_string(::getpid()) + "_q8_0.gguf");
  model_file::hf_convert_options co;
  co.type = ir::dtype::q8_0;
  model_file::convert_hf_to_gguf(tl::tiny_qwen().parent_path(), q8, co);
  ::setenv("OCTO_GEMV_IDOT", "1", 1);
  ::setenv("OCTO_GEMV_X8", "1", 1);
  const auto prompt = prompt_of(q8, "Once upon a time");
  {
    runtime::engine plain(q8, opts(vulkan, false));
    runtime::engine gated(q8, opts(vulkan, true));
    // The rounding launches are there: two a layer and one for the LM head, beyond the tasks' own.
    CHECK(gated.decode_stats().dispatches >= gated.decode_stats().task_dispatches + 2 * 6 + 1);
    check_identical(generate(plain, prompt, 12), generate(gated, prompt, 12));  // the decode passes: integer dots
    gated.set_skipped_layers(std::vector<std::int64_t>{2});
    const auto g = generate(gated, prompt, 10);
    runtime::engine cpu(q8, opts(reference, false, {2}));
    const auto c = generate(cpu, prompt, 10);
    CHECK(test::rel_l2(g.prompt_logits, c.prompt_logits) < 1e-3);  // the prefill: float GEMMs
    // The oracle for the gated rounding launches: each GEMV workgroup rounding x itself (OCTO_GEMV_X8=0,
    // no `before` launch), the same layer skipped. The same rounding, summed in another order. (The
    // reference VM's float x parts from the integer path after a few tokens of this damaged model: the first 4 equal.)
    ::setenv("OCTO_GEMV_X8", "0", 1);
    runtime::engine own(q8, opts(vulkan, true, {2}));
    ::setenv("OCTO_GEMV_X8", "1", 1);
    const auto o = generate(own, prompt, 10);
    CHECK(g.tokens == o.tokens);
    CHECK(g.prompt_logits == o.prompt_logits);  // the prefill: the same GEMMs
    REQUIRE(g.stats.size() == o.stats.size());
    for (std::size_t p = 0; p < o.stats.size(); ++p)
      for (std::size_t l = 0; l < o.stats[p].size(); ++l) {
        CHECK(std::abs(g.stats[p][l].rms - o.stats[p][l].rms) <= 1e-5f * o.stats[p][l].rms);
        CHECK(std::abs(g.stats[p][l].max_abs - o.stats[p][l].max_abs) <= 1e-4f * o.stats[p][l].max_abs);
      }
    CHECK(std::equal(g.tokens.begin(), g.tokens.begin() + 4, c.tokens.begin()));
    for (const auto& pass : g.stats) {
      REQUIRE(pass.size() == 6);
      CHECK(pass[2].rms == pass[1].rms);
      CHECK(pass[2].max_abs == pass[1].max_abs);
      CHECK(pass[3].rms != pass[2].rms);  // the next layer runs, on its own rounded x
    }
  }
  ::unsetenv("OCTO_GEMV_X8");
  ::unsetenv("OCTO_GEMV_IDOT");
  std::filesystem::remove(q8);
}

TEST_CASE("control words: prefill GEMMs reading x rounded once to f16 (X16), gated: bit-identical, and a skipped layer passes through") {
  // The tensor-core GEMMs' X16 mode (a `rows_f16_f32` launch before the GEMMs of a wavefront, sharing
  // one part of the scratch) runs on lavapipe through gemm_reg with OCTO_GEMM_X16=1. A prompt of 40
  // tokens in windows of 16 rows, so the prefill's projections are tiled GEMMs with it: gated must equal
  // ungated bit for bit, and a skipped layer (its rounding launches gated off with it) must pass its
  // input through while the next layer rounds its own.
  const char* text = "12+30=42. 7+5=12. 9+9=18. 40+2=42. 3+4=7. 11+11=22. 6+6=12. 8+1=9.";
  const auto prompt = prompt_of(tl::tiny_qwen(), text);
  REQUIRE(prompt.size() >= 32);
  ::setenv("OCTO_GEMM_KERNEL", "reg", 1);
  ::setenv("OCTO_GEMM_X16", "0", 1);
  std::vector<float> f32_x_logits;
  {
    runtime::engine f32_x(tl::tiny_qwen(), opts(vulkan, false));
    f32_x_logits = generate(f32_x, prompt, 1).prompt_logits;  // programs are planned when first run
  }
  ::setenv("OCTO_GEMM_X16", "1", 1);
  {
    runtime::engine plain(tl::tiny_qwen(), opts(vulkan, false));
    runtime::engine gated(tl::tiny_qwen(), opts(vulkan, true));
    const auto a = generate(plain, prompt, 6);
    CHECK(a.prompt_logits != f32_x_logits);  // the f16 rows were read
    check_identical(a, generate(gated, prompt, 6));
    gated.set_skipped_layers(std::vector<std::int64_t>{2});
    const auto g = generate(gated, prompt, 4);
    for (const auto& pass : g.stats) {
      REQUIRE(pass.size() == 6);
      CHECK(pass[2].rms == pass[1].rms);
      CHECK(pass[2].max_abs == pass[1].max_abs);
      CHECK(pass[3].rms != pass[2].rms);
    }
    runtime::engine fresh(tl::tiny_qwen(), opts(vulkan, true, {2}));
    check_identical(generate(fresh, prompt, 4), g);
  }
  ::unsetenv("OCTO_GEMM_X16");
  ::unsetenv("OCTO_GEMM_KERNEL");
}

TEST_CASE("control words: misuse is one clear error") {
  runtime::engine plain(tl::tiny_qwen(), opts(vulkan, false));
  CHECK_THROWS_WITH_AS(plain.set_skipped_layers(std::vector<std::int64_t>{1}), doctest::Contains("control words"),
                       octo::error);
  CHECK_THROWS_WITH_AS(plain.set_precision(vm::matmul_precision::accurate), doctest::Contains("control words"),
                       octo::error);
  runtime::engine e(tl::tiny_qwen(), opts(vulkan, true));
  CHECK_THROWS_WITH_AS(e.set_skipped_layers(std::vector<std::int64_t>{6}), doctest::Contains("layer 6"), octo::error);
  CHECK_THROWS_WITH_AS(runtime::engine(tl::tiny_qwen(), opts(vulkan, true, {-1})), doctest::Contains("layer -1"),
                       octo::error);
}
