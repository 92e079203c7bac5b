// libFuzzer target for the GGUF reader: any byte string must parse or give octo::error, and everything
// a parsed file hands out (metadata, tensor spans, dequantized rows) must be safe to read.
// Build and run with tests/fuzz/run_gguf_fuzz.sh (clang++ -fsanitize=fuzzer,address,undefined).
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "octo/detail/quant_blocks.hpp"
#include "octo/error.hpp"
#include "octo/model_file/gguf.hpp"

namespace {

using namespace octo::model_file;

// Reads every value, as every getter that could apply, so the accessors see fuzzed data too.
void touch(const gguf_value& v, unsigned& sink) {
  try { sink += unsigned(v.as_u64()); } catch (const octo::error&) {}
  try { sink += unsigned(v.as_i64()); } catch (const octo::error&) {}
  try { sink += v.as_f64() > 0 ? 1u : 0u; } catch (const octo::error&) {}
  try { sink += v.as_bool() ? 1u : 0u; } catch (const octo::error&) {}
  try { sink += unsigned(v.as_string().size()); } catch (const octo::error&) {}
  if (v.type() == gguf_type::array)
    for (const auto& item : v.as_array()) touch(item, sink);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto bytes = std::as_bytes(std::span(data, size));
  try {
    const auto f = gguf_file::from_bytes(bytes, "fuzz.gguf");
    unsigned sink = 0;
    for (const auto& kv : f.metadata()) {
      touch(kv.value, sink);
      try { sink += f.get_u32(kv.key); } catch (const octo::error&) {}
      try { sink += unsigned(f.get_string_array(kv.key).size()); } catch (const octo::error&) {}
      try { sink += unsigned(f.get_f32_array(kv.key).size()); } catch (const octo::error&) {}
    }
    std::vector<float> row;
    for (std::size_t i = 0; i < f.tensors().size(); ++i) {
      try {
        const auto t = f.tensor(i);
        for (auto b : t.data) sink += std::to_integer<unsigned>(b);
        // Dequantize the first blocks (bounded) from the span's bytes, as a loader would.
        const auto l = octo::ir::layout(t.type);
        if (t.dims.empty() || t.dims[0] <= 0) continue;
        std::int64_t n = t.elements() < 4096 ? t.elements() : 4096;
        n -= n % l.block_elems;
        if (octo::ir::nbytes(t.type, n) > std::int64_t(t.data.size())) __builtin_trap();  // reader bug
        row.resize(std::size_t(n));
        octo::detail::dequantize_row(t.type, reinterpret_cast<const std::uint8_t*>(t.data.data()), row.data(), n);
      } catch (const octo::error&) {
      }
    }
    if (sink == 0xdeadbeef) __builtin_trap();  // keeps the reads
  } catch (const octo::error&) {
  }
  return 0;
}
