// libFuzzer target: a GGUF file through everything that reads it before a model runs: the reader,
// config_from_gguf (block_count against the tensors, overflow bounds), the vocabulary and tokenizer,
// the decode and prefill graphs with ir::validate, and every weight's bytes (read_tensor). Any input
// must load or give octo::error; nothing may crash, leak, hang or allocate without bound.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "fuzz_support.hpp"
#include "octo/error.hpp"
#include "octo/runtime/model_source.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = octo::fuzz::put("model.gguf", std::as_bytes(std::span(data, size)));
  try {
    const auto m = octo::runtime::model_source::open(path, 16);
    std::uint64_t sink = 0;
    const auto& t = m->tokenizer();
    const auto ids = t.encode("Once upon a time, 12 \xc3\xa9t\xc3\xa9s!", true);
    sink += t.decode(ids).size();
    const auto step = m->decode_program(true);
    m->for_each_weight(step, [&](std::string_view, std::span<const std::byte> b) { sink += b.size(); });
    for (std::int64_t l = 0; l < m->config().layers; ++l) {
      std::vector<std::byte> blob(std::size_t(m->layer_blob_bytes(l)));
      sink += m->read_layer(l, blob);
    }
    sink += m->prefill_program(3).tasks.size();
    if (sink == 0xdeadbeef) __builtin_trap();
  } catch (const octo::error&) {
  }
  return 0;
}
