// The engine runs prefill and decode on ONE Vulkan VM: the prefill program shares the decode program's
// weights and KV caches (no second weight copy, no KV copy), decode stays one submit per token, and the
// logits equal the reference VM's through prefill, decode and a prefill program rebuilt for another T.
#include <doctest/doctest.h>

#include "../support/test_data.hpp"

#include <cstdint>
#include <filesystem>
#include <vector>

#include <octo/runtime/engine.hpp>

using namespace octo;

namespace {

runtime::engine_options opts(runtime::backend vm, std::int64_t chunk) {
  runtime::engine_options o;
  o.vm = vm;
  o.ctx = 64;
  o.prefill_chunk = chunk;
  o.vulkan.pipeline_cache_dir.push_back('-');  // no disk cache
  return o;
}

}  // namespace

TEST_CASE("engine on one VM: the prefill program adds no weight copy and its KV cache is decode's") {
  const auto path = test::stories260k_gguf();
  runtime::engine gpu(path, opts(runtime::backend::vulkan, 8));
  runtime::engine ref(path, opts(runtime::backend::reference, 8));
  const auto& m = gpu.model();
  std::uint64_t weight_bytes = 0;
  m.for_each_weight(m.decode_program(true), [&](std::string_view, std::span<const std::byte> b) { weight_bytes += b.size(); });
  REQUIRE(weight_bytes > 500000);  // stories260K: about 1 MB of f32 weights

  const auto before = gpu.decode_stats().memory_in_use;
  REQUIRE(before > weight_bytes);  // the decode program's weights are in there
  const auto prompt = m.tokenizer().encode("Once upon a time, there was a little girl named Lily. She", true);
  REQUIRE(prompt.size() > 8);
  const auto a = gpu.prefill(prompt);  // builds the prefill program (T = 8) beside decode
  const auto r = ref.prefill(prompt);
  CHECK(test::rel_l2(a, r) < 1e-4);
  const auto after = gpu.decode_stats().memory_in_use;
  // The prefill program's own activations for 8 tokens of a 64-wide model are far below one weight copy.
  CHECK(after - before < weight_bytes / 2);

  // Decode reads the KV cache the prefill program wrote (nothing was copied): same logits as the oracle.
  for (std::int32_t next : {400, 17, 300}) CHECK(test::rel_l2(gpu.decode(next), ref.decode(next)) < 1e-4);
  CHECK(gpu.decode_stats().submits == 3);  // decode submits only: one per token
  CHECK(gpu.decode_stats().recordings == 1);

  // A shorter prompt rebuilds the prefill program for T = 5 (the old one is removed, memory returns).
  gpu.reset();
  ref.reset();
  const std::vector<std::int32_t> short_prompt(prompt.begin(), prompt.begin() + 5);
  CHECK(test::rel_l2(gpu.prefill(short_prompt), ref.prefill(short_prompt)) < 1e-4);
  CHECK(gpu.decode_stats().memory_in_use - before < weight_bytes / 2);
  CHECK(gpu.decode_greedy(33) == runtime::argmax(ref.decode(33)));
  CHECK(gpu.validation_messages() == 0);
}
