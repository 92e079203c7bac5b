// Writes the seed corpus for gguf_fuzz: small valid GGUF files covering every metadata type, nested
// arrays, each tensor type octo reads, a type it does not, and a non-default alignment.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "octo/detail/quant_blocks.hpp"
#include "octo/model_file/gguf_writer.hpp"

using namespace octo::model_file;
using octo::ir::dtype;

namespace {

std::vector<std::byte> quantized(dtype t, std::int64_t n) {
  std::vector<float> x(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(int(i % 17) - 8) * 0.25f;
  std::vector<std::uint8_t> q(std::size_t(octo::ir::nbytes(t, n)));
  octo::detail::quantize_row(t, x.data(), q.data(), n);
  std::vector<std::byte> out(q.size());
  for (std::size_t i = 0; i < q.size(); ++i) out[i] = std::byte(q[i]);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_DIR\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  int n = 0;
  auto save = [&](const gguf_writer& w) { w.write(dir / ("seed_" + std::to_string(n++) + ".gguf")); };

  {  // every metadata type
    gguf_writer w;
    w.set_string("general.architecture", "llama");
    w.set("u8", gguf_value::of_u8(1));
    w.set("i8", gguf_value::of_i8(-1));
    w.set("u16", gguf_value::of_u16(2));
    w.set("i16", gguf_value::of_i16(-2));
    w.set_u32("u32", 3);
    w.set_i32("i32", -3);
    w.set_u64("u64", 4);
    w.set("i64", gguf_value::of_i64(-4));
    w.set_f32("f32", 0.5f);
    w.set("f64", gguf_value::of_f64(0.25));
    w.set_bool("bool", true);
    w.set("strings", gguf_value::array_of_strings({"a", "bc", ""}));
    w.set("f32s", gguf_value::array_of_f32({1.0f, 2.0f}));
    w.set("i32s", gguf_value::array_of_i32({1, 2, 3}));
    w.set("nested", gguf_value::array_of(gguf_type::array, {gguf_value::array_of_i32({7})}));
    save(w);
  }
  {  // one tensor of each supported type
    for (dtype t : {dtype::f32, dtype::f16, dtype::bf16, dtype::q8_0, dtype::q4_0, dtype::q4_1, dtype::q5_0,
                    dtype::q5_1, dtype::q2_k, dtype::q3_k, dtype::q4_k, dtype::q5_k, dtype::q6_k, dtype::iq4_nl,
                    dtype::iq4_xs}) {
      gguf_writer w;
      w.set_string("general.architecture", "llama");
      const std::int64_t ne0 = octo::ir::layout(t).block_elems == 1 ? 8 : octo::ir::layout(t).block_elems;
      w.add_tensor("w", t, {ne0, 2}, quantized(t, ne0 * 2));
      save(w);
    }
  }
  {  // several tensors, an unsupported type, alignment 64
    gguf_writer w(64);
    w.set_u32("llama.block_count", 1);
    w.add_tensor("a", dtype::f32, {4}, quantized(dtype::f32, 4));
    w.add_tensor("b", dtype::q8_0, {32}, quantized(dtype::q8_0, 32));
    w.add_tensor_raw("c", 16, {256}, std::vector<std::byte>(66, std::byte{3}));
    save(w);
  }
  {  // vocabulary only
    gguf_writer w;
    w.set_string("tokenizer.ggml.model", "gpt2");
    w.set("tokenizer.ggml.tokens", gguf_value::array_of_strings({"a", "b", "ab"}));
    w.set("tokenizer.ggml.merges", gguf_value::array_of_strings({"a b"}));
    save(w);
  }
  std::printf("%d seeds in %s\n", n, dir.c_str());
  return 0;
}
