// The IR's canonical codes (docs/ir.md §1.1, §7) and element sizes.
#include <doctest/doctest.h>

#include <octo/ir/enums.hpp>
#include <octo/ir/op_registry.hpp>

using namespace octo::ir;

TEST_CASE("enum codes are the IR spec's canonical numbers") {
  CHECK(int(dtype::f32) == 0);
  CHECK(int(dtype::bf16) == 2);
  CHECK(int(dtype::i4) == 7);
  CHECK(int(dtype::boolean) == 9);
  CHECK(int(mem_space::reg) == 3);
  CHECK(int(buffer_kind::constant) == 5);
  CHECK(int(opcode::gemv_tile) == 5);
  CHECK(int(opcode::kv_append) == 16);
  CHECK(int(opcode::attention_combine) == 18);
  CHECK(int(opcode::rmsnorm_gemv) == 19);  // the fused ops, appended
  CHECK(int(opcode::rmsnorm_gemv_kv) == 23);
}

TEST_CASE("names round trip through parse") {
  for (int i = 0; i < dtype_count; ++i) CHECK(parse<dtype>(name(dtype(i))) == dtype(i));
  for (int i = 0; i < opcode_count; ++i) CHECK(parse<opcode>(name(opcode(i))) == opcode(i));
  for (int i = 0; i < buffer_kind_count; ++i) CHECK(parse<buffer_kind>(name(buffer_kind(i))) == buffer_kind(i));
  for (int i = 0; i < mem_space_count; ++i) CHECK(parse<mem_space>(name(mem_space(i))) == mem_space(i));
  CHECK_FALSE(parse<opcode>("GEMV").has_value());
  CHECK(name(opcode::sample_argmax) == "SAMPLE_ARGMAX");
}

TEST_CASE("sizes: ceil for packed sub-byte and block types") {
  CHECK(nbytes(dtype::f16, 3) == 6);
  CHECK(nbytes(dtype::i4, 3) == 2);
  CHECK(nbytes(dtype::q8_0, 64) == 68);
  CHECK(nbytes(dtype::q4_k, 512) == 288);
  CHECK(bits(dtype::bf16) == 16);
}

TEST_CASE("registry rows are in opcode order and within the ABI caps") {
  for (int i = 0; i < opcode_count; ++i) {
    const auto& s = op_registry[std::size_t(i)];
    CHECK(int(s.kind) == i);
    CHECK(s.max_inputs <= 8);
    CHECK(s.n_outputs <= 4);
  }
  CHECK(spec(opcode::attention_tile).n_required == 6);
}
