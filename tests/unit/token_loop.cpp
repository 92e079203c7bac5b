// The greedy token loop as the reference VM emulates it (issue 15 item 3): the same tokens as the host
// loop at every depth, stops inside the window, the token and context limits, sampling unchanged
// (tests/support/token_loop_checks.hpp; tests/gpu/token_loop.cpp runs the same on the Vulkan VM).
#include <doctest/doctest.h>

#include "../support/token_loop_checks.hpp"

#include <octo/runtime/model_source.hpp>

using namespace octo;
namespace tl = octo::test::token_loop;

namespace {
const std::filesystem::path stories = test::stories260k_gguf();
constexpr auto reference = runtime::backend::reference;
}  // namespace

TEST_CASE("token loop, reference VM: greedy tokens at every depth are the host loop's") {
  const auto m = runtime::model_source::open(stories);
  tl::same_tokens_at_every_depth(reference, stories,
                                 {{1}, m->tokenizer().encode("Once upon a time, there was a little girl named Lily.", true)},
                                 30, 256, {1, 2, 4, 7});
  const auto q = runtime::model_source::open(tl::tiny_qwen());
  tl::same_tokens_at_every_depth(reference, tl::tiny_qwen(),
                                 {q->tokenizer().encode("86+174="), q->tokenizer().encode("370+370=")}, 10, 64, {3});
}

TEST_CASE("token loop, reference VM: a stop inside the window emits nothing past it and the next turn continues") {
  const auto m = runtime::model_source::open(stories);
  tl::stop_inside_the_window(reference, stories, m->tokenizer().encode("Lily wanted to play", true),
                             m->tokenizer().encode(" Then the sun", false));
}

TEST_CASE("token loop, reference VM: the token count and the context's end") {
  tl::token_and_context_limits(reference, stories, runtime::model_source::open(stories)->tokenizer().encode("A cat", true));
}

TEST_CASE("token loop, reference VM: sampling with a temperature reproduces its seed and the host loop of before") {
  tl::sampling_unchanged(reference, stories, runtime::model_source::open(stories)->tokenizer().encode("Tom had a", true));
}
