// GGUF reader and writer: files built byte by byte here from the format description, write -> read
// round trips of every metadata type and several tensor types, the real stories260K and Qwen2 vocab
// files from the shared data, and a corpus of corrupted files that must each give octo::error.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "octo/detail/quant_blocks.hpp"
#include "octo/error.hpp"
#include "octo/model_file/gguf.hpp"
#include "octo/model_file/gguf_writer.hpp"

namespace {

using namespace octo::model_file;
using octo::ir::dtype;
namespace fs = std::filesystem;

const fs::path shared_data = OCTO_SHARED_DATA_DIR;

// A GGUF byte builder written from the format description (independent of gguf_writer):
// magic "GGUF", u32 version, u64 tensor count, u64 kv count, kvs (string key, u32 type, value),
// tensor infos (string name, u32 n_dims, u64 dims[], u32 type, u64 offset), pad to alignment, data.
struct builder {
  std::vector<std::byte> b;
  void u8(std::uint8_t v) { b.push_back(std::byte(v)); }
  void u32(std::uint32_t v) {
    for (int k = 0; k < 4; ++k) u8(std::uint8_t(v >> (8 * k)));
  }
  void u64(std::uint64_t v) {
    for (int k = 0; k < 8; ++k) u8(std::uint8_t(v >> (8 * k)));
  }
  void str(std::string_view s) {
    u64(s.size());
    for (char c : s) u8(std::uint8_t(c));
  }
  void header(std::uint32_t version, std::uint64_t n_tensors, std::uint64_t n_kv) {
    for (char c : std::string_view("GGUF")) u8(std::uint8_t(c));
    u32(version);
    u64(n_tensors);
    u64(n_kv);
  }
  void kv_u32(std::string_view key, std::uint32_t v) {
    str(key);
    u32(4);
    u32(v);
  }
  void tensor(std::string_view name, std::vector<std::uint64_t> dims, std::uint32_t type, std::uint64_t offset) {
    str(name);
    u32(std::uint32_t(dims.size()));
    for (auto d : dims) u64(d);
    u32(type);
    u64(offset);
  }
  void pad(std::size_t alignment = 32) {
    while (b.size() % alignment) u8(0);
  }
  void data(std::size_t n, std::uint8_t fill = 0x11) {
    for (std::size_t i = 0; i < n; ++i) u8(std::uint8_t(fill + i));
  }
};

gguf_file parse(const std::vector<std::byte>& bytes) { return gguf_file::from_bytes(bytes, "test.gguf"); }

std::string error_of(const std::vector<std::byte>& bytes) {
  try {
    parse(bytes);
  } catch (const octo::error& e) {
    return e.what();
  }
  return "(no error)";
}

// One line, naming the file, and mentioning `needle`.
void check_error(const std::vector<std::byte>& bytes, std::string_view needle) {
  const std::string msg = error_of(bytes);
  CAPTURE(msg);
  CHECK(msg.rfind("test.gguf: ", 0) == 0);
  CHECK(msg.find('\n') == std::string::npos);
  CHECK(msg.find(needle) != std::string::npos);
}

std::vector<std::byte> as_bytes_of(const std::vector<float>& v) {
  std::vector<std::byte> out(v.size() * 4);
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

fs::path temp_file(const std::string& name) {
  auto dir = fs::temp_directory_path() / ("octo_gguf_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

}  // namespace

TEST_CASE("a GGUF file built byte by byte parses") {
  builder g;
  g.header(3, 2, 3);
  g.kv_u32("general.alignment", 64);
  g.str("general.architecture");
  g.u32(8);
  g.str("llama");
  g.str("x.list");
  g.u32(9);  // array
  g.u32(5);  // of i32
  g.u64(3);
  g.u32(std::uint32_t(-1));
  g.u32(0);
  g.u32(7);
  g.tensor("a", {4, 2}, 0, 0);   // F32 4x2 = 32 bytes at 0
  g.tensor("b", {32}, 8, 64);    // Q8_0, one block of 34 bytes at 64
  g.pad(64);
  const std::size_t data_start = g.b.size();
  g.data(32, 1);
  g.pad(64);
  g.data(34, 100);
  const auto f = parse(g.b);
  CHECK(f.version() == 3);
  CHECK(f.alignment() == 64);
  CHECK(f.data_offset() == data_start);
  CHECK(f.metadata().size() == 3);
  CHECK(f.get_string("general.architecture") == "llama");
  CHECK(f.get_i32_array("x.list") == std::vector<std::int32_t>{-1, 0, 7});
  REQUIRE(f.tensors().size() == 2);
  const auto a = f.tensor("a");
  CHECK(a.type == dtype::f32);
  CHECK(std::vector<std::int64_t>(a.dims.begin(), a.dims.end()) == std::vector<std::int64_t>{4, 2});
  CHECK(a.data.size() == 32);
  CHECK(f.tensor(0).name == "a");
  CHECK(std::to_integer<int>(a.data[0]) == 1);
  CHECK(std::to_integer<int>(a.data[31]) == 32);
  const auto b = f.tensor("b");
  CHECK(b.type == dtype::q8_0);
  CHECK(b.data.size() == 34);
  CHECK(std::to_integer<int>(b.data[0]) == 100);
  CHECK(std::to_integer<int>(b.data[33]) == 133);
  CHECK(f.tensors()[1].offset == 64);
}

TEST_CASE("the writer's bytes match the format description") {
  gguf_writer w;
  w.set_u32("k", 7);
  std::vector<float> v{1.0f, 2.0f};
  w.add_tensor("t", dtype::f32, {2}, as_bytes_of(v));
  builder g;
  g.header(3, 1, 1);
  g.kv_u32("k", 7);
  g.tensor("t", {2}, 0, 0);
  g.pad();
  const auto* p = reinterpret_cast<const std::byte*>(v.data());
  g.b.insert(g.b.end(), p, p + 8);
  g.pad();
  CHECK(w.to_bytes() == g.b);
}

TEST_CASE("write -> read round trip of every metadata type") {
  gguf_writer w(64);
  w.set("u8", gguf_value::of_u8(255));
  w.set("i8", gguf_value::of_i8(-128));
  w.set("u16", gguf_value::of_u16(65535));
  w.set("i16", gguf_value::of_i16(-32768));
  w.set("u32", gguf_value::of_u32(4294967295u));
  w.set("i32", gguf_value::of_i32(std::numeric_limits<std::int32_t>::min()));
  w.set("u64", gguf_value::of_u64(std::numeric_limits<std::uint64_t>::max()));
  w.set("i64", gguf_value::of_i64(std::numeric_limits<std::int64_t>::min()));
  w.set("f32", gguf_value::of_f32(-1.5e-7f));
  w.set("f64", gguf_value::of_f64(3.141592653589793));
  w.set("bool.t", gguf_value::of_bool(true));
  w.set("bool.f", gguf_value::of_bool(false));
  w.set("string", gguf_value::of_string(std::string("h\xc3\xa9llo\0w", 8)));
  w.set("empty", gguf_value::of_string(""));
  w.set("strings", gguf_value::array_of_strings({"a", "", "\xe4\xb8\xad"}));
  w.set("f32s", gguf_value::array_of_f32({0.5f, -2.0f}));
  w.set("i32s", gguf_value::array_of_i32({1, -2, 3}));
  w.set("u8s", gguf_value::array_of(gguf_type::u8, {gguf_value::of_u8(1), gguf_value::of_u8(2)}));
  w.set("bools", gguf_value::array_of(gguf_type::boolean, {gguf_value::of_bool(true), gguf_value::of_bool(false)}));
  w.set("f64s", gguf_value::array_of(gguf_type::f64, {gguf_value::of_f64(-0.25)}));
  w.set("i64s", gguf_value::array_of(gguf_type::i64, {gguf_value::of_i64(-5), gguf_value::of_i64(1LL << 40)}));
  w.set("u16s", gguf_value::array_of(gguf_type::u16, {gguf_value::of_u16(9)}));
  w.set("i16s", gguf_value::array_of(gguf_type::i16, {gguf_value::of_i16(-9)}));
  w.set("u32s", gguf_value::array_of(gguf_type::u32, {gguf_value::of_u32(10)}));
  w.set("u64s", gguf_value::array_of(gguf_type::u64, {gguf_value::of_u64(11)}));
  w.set("i8s", gguf_value::array_of(gguf_type::i8, {gguf_value::of_i8(-12)}));
  w.set("empty_array", gguf_value::array_of(gguf_type::f32, {}));
  w.set("nested", gguf_value::array_of(gguf_type::array,
                                       {gguf_value::array_of_strings({"x", "y"}),
                                        gguf_value::array_of(gguf_type::array, {gguf_value::array_of_i32({4})})}));
  w.set_u32("u32", 17);  // replacing keeps one entry

  const auto path = temp_file("round_trip.gguf");
  w.write(path);
  const auto f = gguf_file::open(path);
  CHECK(f.version() == 3);
  CHECK(f.alignment() == 64);
  CHECK(f.get_u32("general.alignment") == 64);
  CHECK(f.metadata().size() == 29);
  CHECK(f.get("u8").type() == gguf_type::u8);
  CHECK(f.get_u32("u8") == 255);
  CHECK(f.get("i8").type() == gguf_type::i8);
  CHECK(f.get_i32("i8") == -128);
  CHECK(f.get_u32("u16") == 65535);
  CHECK(f.get("i16").type() == gguf_type::i16);
  CHECK(f.get_i32("i16") == -32768);
  CHECK(f.get_u32("u32") == 17);
  CHECK(f.get_i32("i32") == std::numeric_limits<std::int32_t>::min());
  CHECK(f.get_u64("u64") == std::numeric_limits<std::uint64_t>::max());
  CHECK(f.get_i64("i64") == std::numeric_limits<std::int64_t>::min());
  CHECK(f.get("f32").type() == gguf_type::f32);
  CHECK(f.get_f32("f32") == -1.5e-7f);
  CHECK(f.get_f64("f64") == 3.141592653589793);
  CHECK(f.get_bool("bool.t"));
  CHECK_FALSE(f.get_bool("bool.f"));
  CHECK(f.get_string("string") == std::string("h\xc3\xa9llo\0w", 8));
  CHECK(f.get_string("empty").empty());
  CHECK(f.get_string_array("strings") == std::vector<std::string_view>{"a", "", "\xe4\xb8\xad"});
  CHECK(f.get_f32_array("f32s") == std::vector<float>{0.5f, -2.0f});
  CHECK(f.get_i32_array("i32s") == std::vector<std::int32_t>{1, -2, 3});
  CHECK(f.get_array("u8s").size() == 2);
  CHECK(f.get("u8s").element_type() == gguf_type::u8);
  CHECK(f.get_array("bools")[0].as_bool());
  CHECK(f.get_array("f64s")[0].as_f64() == -0.25);
  CHECK(f.get_array("i64s")[1].as_i64() == (1LL << 40));
  CHECK(f.get_array("u16s")[0].type() == gguf_type::u16);
  CHECK(f.get_array("i16s")[0].as_i64() == -9);
  CHECK(f.get_array("u32s")[0].as_u64() == 10);
  CHECK(f.get_array("u64s")[0].as_u64() == 11);
  CHECK(f.get_array("i8s")[0].as_i64() == -12);
  CHECK(f.get_array("empty_array").empty());
  CHECK(f.get("empty_array").element_type() == gguf_type::f32);
  const auto& nested = f.get_array("nested");
  REQUIRE(nested.size() == 2);
  CHECK(nested[0].as_array()[1].as_string() == "y");
  CHECK(nested[1].as_array()[0].as_array()[0].as_i64() == 4);
  // Every value equals what was written.
  const auto back = gguf_file::from_bytes(w.to_bytes());
  for (const auto& kv : back.metadata()) CHECK(f.get(kv.key) == kv.value);

  // Typed getters refuse wrong types and out-of-range values, naming the file and key.
  CHECK_THROWS_WITH_AS(f.get_string("u8"), doctest::Contains("'u8'"), octo::error);
  CHECK_THROWS_AS(f.get_u32("i8"), octo::error);    // negative
  CHECK_THROWS_AS(f.get_u32("u64"), octo::error);   // too large
  CHECK_THROWS_AS(f.get_i64("u64"), octo::error);   // too large
  CHECK_THROWS_AS(f.get_bool("u8"), octo::error);
  CHECK_THROWS_AS(f.get_f32("string"), octo::error);
  CHECK_THROWS_AS(f.get_string_array("f32s"), octo::error);
  CHECK_THROWS_WITH_AS(f.get_u32("missing.key"), doctest::Contains("round_trip.gguf"), octo::error);
  CHECK(f.get_u32_or("missing.key", 5) == 5);
  CHECK(f.get_string_or("missing.key", "d") == "d");
  CHECK(f.find("missing.key") == nullptr);
  CHECK_THROWS_AS(gguf_value::array_of(gguf_type::u8, {gguf_value::of_u16(1)}), octo::error);
}

TEST_CASE("write -> read round trip of tensors of several types") {
  std::mt19937 g(3);
  std::normal_distribution<float> normal;
  gguf_writer w;
  w.set_string("general.architecture", "test");
  struct item {
    std::string name;
    dtype t;
    std::vector<std::int64_t> dims;
    std::vector<std::byte> bytes;
  };
  std::vector<item> items;
  for (auto [t, ne0] : std::vector<std::pair<dtype, std::int64_t>>{
           {dtype::f32, 5}, {dtype::f16, 64}, {dtype::bf16, 3}, {dtype::q8_0, 64}, {dtype::q4_0, 32},
           {dtype::q4_1, 32}, {dtype::q5_0, 32}, {dtype::q5_1, 64}, {dtype::q2_k, 256}, {dtype::q3_k, 256},
           {dtype::q4_k, 512}, {dtype::q5_k, 256}, {dtype::q6_k, 256}, {dtype::iq4_nl, 96}, {dtype::iq4_xs, 768}}) {
    const std::int64_t rows = 3;
    std::vector<float> x(std::size_t(ne0 * rows));
    for (auto& v : x) v = normal(g);
    std::vector<std::uint8_t> q(std::size_t(octo::ir::nbytes(t, ne0 * rows)));
    octo::detail::quantize_row(t, x.data(), q.data(), ne0 * rows);
    item it{"w." + std::string(octo::ir::name(t)), t, {ne0, rows}, {}};
    for (auto c : q) it.bytes.push_back(std::byte(c));
    w.add_tensor(it.name, t, it.dims, it.bytes);
    items.push_back(std::move(it));
  }
  // Types known to GGUF but not to octo open (their sizes checked) and name themselves when used.
  w.add_tensor_raw("iq", 16, {256}, std::vector<std::byte>(66));       // IQ2_XXS
  w.add_tensor_raw("iq3s", 21, {512}, std::vector<std::byte>(220));    // IQ3_S
  w.add_tensor_raw("tq1", 34, {256}, std::vector<std::byte>(54));      // TQ1_0
  const auto bytes = w.to_bytes();
  const auto f = parse(bytes);
  REQUIRE(f.tensors().size() == items.size() + 3);
  CHECK(f.find_tensor("w.IQ4_NL")->ggml_type == 20);  // ggml's type ids, not octo's dtype codes
  CHECK(f.find_tensor("w.IQ4_XS")->ggml_type == 23);
  for (const auto& it : items) {
    CAPTURE(it.name);
    const auto t = f.tensor(it.name);
    CHECK(t.type == it.t);
    CHECK(std::vector<std::int64_t>(t.dims.begin(), t.dims.end()) == it.dims);
    CHECK(std::vector<std::byte>(t.data.begin(), t.data.end()) == it.bytes);
    CHECK(f.find_tensor(it.name)->offset % 32 == 0);
    CHECK((f.data_offset() + f.find_tensor(it.name)->offset) % 32 == 0);
  }
  CHECK(f.find_tensor("iq") != nullptr);
  CHECK(f.find_tensor("iq")->size == 66);
  CHECK_THROWS_WITH_AS(f.tensor("iq"), doctest::Contains("IQ2_XXS"), octo::error);
  CHECK_THROWS_WITH_AS(f.tensor("iq3s"), doctest::Contains("has GGML type IQ3_S (21), which octo does not support"),
                       octo::error);
  CHECK_THROWS_WITH_AS(f.tensor("tq1"), doctest::Contains("TQ1_0 (34)"), octo::error);
  CHECK_THROWS_WITH_AS(f.tensor("nope"), doctest::Contains("'nope' is missing"), octo::error);

  // The writer refuses inconsistent tensors.
  CHECK_THROWS_AS(w.add_tensor("w.F32", dtype::f32, {1}, std::vector<std::byte>(4)), octo::error);  // twice
  CHECK_THROWS_AS(w.add_tensor("short", dtype::f32, {2}, std::vector<std::byte>(4)), octo::error);
  CHECK_THROWS_AS(w.add_tensor("partial", dtype::q8_0, {16}, std::vector<std::byte>(17)), octo::error);
  CHECK_THROWS_AS(w.add_tensor("i4", dtype::i4, {2}, std::vector<std::byte>(1)), octo::error);
  CHECK_THROWS_AS(gguf_writer(48), octo::error);
}

TEST_CASE("to_f32 decodes tensors") {
  builder g;
  g.header(3, 3, 0);
  g.tensor("f", {2}, 0, 0);    // F32
  g.tensor("h", {2}, 1, 32);   // F16
  g.tensor("q", {32}, 8, 64);  // Q8_0
  g.pad();
  const float fv[2] = {1.25f, -3.0f};
  for (float v : fv) {
    std::uint32_t bits;
    std::memcpy(&bits, &v, 4);
    g.u32(bits);
  }
  g.pad();
  g.u8(0x00); g.u8(0x3e);  // 1.5
  g.u8(0x00); g.u8(0xc4);  // -4.0
  g.pad();
  g.u8(0x00); g.u8(0x38);  // d = 0.5
  for (int i = 0; i < 32; ++i) g.u8(std::uint8_t(i - 16));
  const auto f = parse(g.b);
  CHECK(to_f32(f.tensor("f")) == std::vector<float>{1.25f, -3.0f});
  CHECK(to_f32(f.tensor("h")) == std::vector<float>{1.5f, -4.0f});
  const auto q = to_f32(f.tensor("q"));
  REQUIRE(q.size() == 32);
  for (int i = 0; i < 32; ++i) CHECK(q[std::size_t(i)] == 0.5f * float(i - 16));
  CHECK_THROWS_AS(to_f32(f.tensor("q"), 16), octo::error);
}

TEST_CASE("stories260K.gguf: llama metadata and its 48 tensors") {
  const auto path = shared_data / "stories260K" / "stories260K.gguf";
  REQUIRE_MESSAGE(fs::exists(path), "test data missing: " << path.string());
  const auto f = gguf_file::open(path);
  CHECK(f.version() == 3);
  CHECK(f.get_string("general.architecture") == "llama");
  CHECK(f.get_u32("llama.embedding_length") == 64);
  CHECK(f.get_u32("llama.block_count") == 5);
  CHECK(f.get_u32("llama.context_length") == 2048);
  CHECK(f.get_u32("llama.attention.head_count") == 8);
  CHECK(f.get_u32("llama.attention.head_count_kv") == 4);
  CHECK(f.get_u32("llama.feed_forward_length") == 172);
  CHECK(f.get_string("tokenizer.ggml.model") == "llama");
  const auto tokens = f.get_string_array("tokenizer.ggml.tokens");
  CHECK(tokens.size() == 512);
  CHECK(f.get_f32_array("tokenizer.ggml.scores").size() == 512);
  CHECK(f.get_i32_array("tokenizer.ggml.token_type").size() == 512);
  CHECK(f.get_u32("tokenizer.ggml.bos_token_id") == 1);
  CHECK(f.get_u32("tokenizer.ggml.eos_token_id") == 2);

  REQUIRE(f.tensors().size() == 48);
  using dims = std::vector<std::int64_t>;
  auto expect = [&](const std::string& name, dims d) {
    CAPTURE(name);
    const auto t = f.tensor(name);
    CHECK(t.type == dtype::f32);
    CHECK(dims(t.dims.begin(), t.dims.end()) == d);
    CHECK(std::int64_t(t.data.size()) == t.elements() * 4);
  };
  expect("token_embd.weight", {64, 512});
  expect("output_norm.weight", {64});
  expect("output.weight", {64, 512});
  for (int l = 0; l < 5; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    expect(p + "attn_norm.weight", {64});
    expect(p + "attn_q.weight", {64, 64});
    expect(p + "attn_k.weight", {64, 32});  // 4 KV heads of 8
    expect(p + "attn_v.weight", {64, 32});
    expect(p + "attn_output.weight", {64, 64});
    expect(p + "ffn_norm.weight", {64});
    expect(p + "ffn_gate.weight", {64, 172});
    expect(p + "ffn_up.weight", {64, 172});
    expect(p + "ffn_down.weight", {172, 64});
  }
  // The mapped bytes are the file's bytes at data_offset + offset (read here with an ifstream).
  const auto& info = *f.find_tensor("blk.4.ffn_norm.weight");
  std::ifstream in(path, std::ios::binary);
  in.seekg(std::streamoff(f.data_offset() + info.offset));
  std::vector<char> raw(info.size);
  in.read(raw.data(), std::streamsize(raw.size()));
  const auto t = f.tensor("blk.4.ffn_norm.weight");
  CHECK(std::memcmp(raw.data(), t.data.data(), raw.size()) == 0);
  // Trained RMSNorm weights: finite and not all zero.
  std::vector<float> w(64);
  std::memcpy(w.data(), t.data.data(), 256);
  float sum = 0;
  for (float v : w) {
    CHECK(std::isfinite(v));
    sum += std::fabs(v);
  }
  CHECK(sum > 0.0f);
}

TEST_CASE("qwen2-vocab.gguf: a vocabulary-only file") {
  const auto path = shared_data / "qwen2-tokenizer" / "qwen2-vocab.gguf";
  REQUIRE_MESSAGE(fs::exists(path), "test data missing: " << path.string());
  const auto f = gguf_file::open(path);
  CHECK(f.get_string("general.architecture") == "qwen2");
  CHECK(f.get_string("tokenizer.ggml.model") == "gpt2");
  CHECK(f.get_string("tokenizer.ggml.pre") == "qwen2");
  const auto tokens = f.get_string_array("tokenizer.ggml.tokens");
  REQUIRE(tokens.size() == 151936);
  CHECK(tokens[151643] == "<|endoftext|>");
  CHECK(tokens[151644] == "<|im_start|>");
  CHECK(tokens[151645] == "<|im_end|>");
  CHECK(f.get_string_array("tokenizer.ggml.merges").size() == 151387);
  CHECK(f.get_i32_array("tokenizer.ggml.token_type").size() == 151936);
  CHECK(f.get_u32("tokenizer.ggml.bos_token_id") == 151643);
  CHECK(f.get_u32("tokenizer.ggml.eos_token_id") == 151645);
  CHECK(f.get_string("tokenizer.chat_template").find("<|im_start|>") != std::string::npos);
  CHECK(f.tensors().empty());
  CHECK(f.data_offset() == 5928633);  // the end of the metadata, as ggml's gguf_get_data_offset reports it
}

namespace {

// A small valid file whose every byte matters: the last tensor's size is a multiple of the alignment,
// so cutting any byte off must fail.
std::vector<std::byte> small_valid_file() {
  gguf_writer w;
  w.set_string("general.architecture", "llama");
  w.set("list", gguf_value::array_of_strings({"ab", "c"}));
  w.set("nested", gguf_value::array_of(gguf_type::array, {gguf_value::array_of_f32({1.0f})}));
  w.set_f32("eps", 1e-5f);
  w.set_bool("flag", true);
  w.add_tensor("a", dtype::q8_0, {32}, std::vector<std::byte>(34, std::byte{1}));
  w.add_tensor("b", dtype::f32, {8, 4}, std::vector<std::byte>(128, std::byte{2}));
  return w.to_bytes();
}

}  // namespace

TEST_CASE("every truncation of a valid file is an error, never a crash") {
  const auto full = small_valid_file();
  REQUIRE_NOTHROW(parse(full));
  for (std::size_t n = 0; n < full.size(); ++n) {
    CAPTURE(n);
    const std::vector<std::byte> cut(full.begin(), full.begin() + std::ptrdiff_t(n));
    const auto msg = error_of(cut);
    CHECK(msg.rfind("test.gguf: ", 0) == 0);
  }
}

TEST_CASE("corrupted headers, counts, types and offsets each give one clear error") {
  auto base = [](std::uint32_t version = 3) {
    builder g;
    g.header(version, 1, 1);
    g.kv_u32("k", 1);
    return g;
  };
  auto one_tensor = [&](std::vector<std::uint64_t> dims, std::uint32_t type, std::uint64_t offset,
                        std::size_t data_bytes) {
    auto g = base();
    g.tensor("t", std::move(dims), type, offset);
    g.pad();
    g.data(data_bytes);
    return g.b;
  };
  SUBCASE("magic and version") {
    auto g = base();
    g.b[0] = std::byte{'X'};
    check_error(g.b, "bad magic");
    check_error(base(1).b, "version 1");
    check_error(base(4).b, "version 4");
    check_error(base(0x03000000).b, "big-endian");
    check_error({}, "too small");
  }
  SUBCASE("absurd counts") {
    builder g;
    g.header(3, std::uint64_t(1) << 60, 0);
    check_error(g.b, "tensor count");
    builder h;
    h.header(3, 0, ~std::uint64_t(0));
    check_error(h.b, "metadata count");
    builder s;  // key length beyond the file
    s.header(3, 0, 1);
    s.u64(std::uint64_t(1) << 62);
    s.data(16);
    check_error(s.b, "truncated: metadata entry 0: key needs 4611686018427387904 bytes");
    builder a;  // array length beyond the file
    a.header(3, 0, 1);
    a.str("arr");
    a.u32(9);
    a.u32(10);
    a.u64(std::uint64_t(1) << 61);
    check_error(a.b, "array length");
    builder sa;  // array of strings whose count times 8 bytes overflows
    sa.header(3, 0, 1);
    sa.str("arr");
    sa.u32(9);
    sa.u32(8);
    sa.u64(~std::uint64_t(0) / 4);
    check_error(sa.b, "array length");
  }
  SUBCASE("bad value types and values") {
    builder g;
    g.header(3, 0, 1);
    g.str("k");
    g.u32(13);
    g.u32(0);
    check_error(g.b, "unknown value type 13");
    builder b;
    b.header(3, 0, 1);
    b.str("k");
    b.u32(7);
    b.u8(2);
    check_error(b.b, "bool value 2");
    builder d;
    d.header(3, 0, 2);
    d.kv_u32("k", 1);
    d.kv_u32("k", 2);
    check_error(d.b, "duplicate metadata key 'k'");
    builder n;  // arrays nested 9 deep
    n.header(3, 0, 1);
    n.str("deep");
    n.u32(9);
    for (int i = 0; i < 9; ++i) {
      n.u32(9);
      n.u64(1);
    }
    n.u32(0);
    n.u64(0);
    check_error(n.b, "nested deeper");
  }
  SUBCASE("alignment") {
    for (std::uint32_t al : {0u, 3u, 48u}) {
      builder g;
      g.header(3, 0, 1);
      g.kv_u32("general.alignment", al);
      check_error(g.b, "power of two");
    }
    builder s;
    s.header(3, 0, 1);
    s.str("general.alignment");
    s.u32(8);
    s.str("32");
    check_error(s.b, "general.alignment is string");
  }
  SUBCASE("tensor entries") {
    CHECK_NOTHROW(parse(one_tensor({8}, 0, 0, 32)));
    check_error(one_tensor({8}, 0, 8, 32), "not a multiple of the alignment");
    check_error(one_tensor({8}, 0, 32, 32), "past the end");
    check_error(one_tensor({9}, 0, 0, 32), "past the end");
    check_error(one_tensor({8}, 0, std::uint64_t(1) << 63, 32), "past the end");
    check_error(one_tensor({8}, 0, ~std::uint64_t(0) - 31, 32), "past the end");
    check_error(one_tensor({std::uint64_t(1) << 62, std::uint64_t(1) << 62}, 0, 0, 32), "overflows");
    check_error(one_tensor({std::uint64_t(1) << 62, 1}, 0, 0, 32), "byte size overflows");
    check_error(one_tensor({~std::uint64_t(0)}, 0, 0, 32), "out of range");
    check_error(one_tensor({8}, 4, 0, 32), "unknown GGML type 4");
    check_error(one_tensor({8}, 1000, 0, 32), "unknown GGML type 1000");
    check_error(one_tensor({16}, 8, 0, 64), "not a multiple of Q8_0's block of 32");
    check_error(one_tensor({}, 0, 0, 32), "0 dimensions");
    check_error(one_tensor({1, 1, 1, 1, 1}, 0, 0, 32), "5 dimensions");

    auto g = base();  // a tensor directory entry cut short
    g.str("t");
    g.u32(2);
    g.u64(4);
    check_error(g.b, "truncated: tensor 't'");

    builder two;  // same name twice
    two.header(3, 2, 0);
    two.tensor("t", {8}, 0, 0);
    two.tensor("t", {8}, 0, 32);
    two.pad();
    two.data(64);
    check_error(two.b, "duplicate tensor name 't'");

    builder ov;  // overlapping data
    ov.header(3, 2, 0);
    ov.tensor("a", {16}, 0, 0);
    ov.tensor("b", {8}, 0, 32);
    ov.pad();
    ov.data(96);
    check_error(ov.b, "overlap");

    builder far;  // data section start itself past the end: header ends unaligned, no padding
    far.header(3, 1, 0);
    far.tensor("t", {0}, 0, 0);
    if (far.b.size() % 32 == 0) far.u8(0);
    check_error(far.b, "past the end");
  }
  SUBCASE("names from the file are printed safely") {
    auto b = one_tensor({8}, 1000, 0, 32);
    const auto at = std::size_t(4 + 4 + 8 + 8 + (8 + 1 + 4 + 4) + 8);  // the tensor name's byte
    REQUIRE(b[at] == std::byte{'t'});
    b[at] = std::byte{'\n'};
    check_error(b, "'\\x0a'");
  }
}

TEST_CASE("files: missing, empty, a directory") {
  CHECK_THROWS_WITH_AS(gguf_file::open("/nonexistent/dir/model.gguf"),
                       doctest::Contains("/nonexistent/dir/model.gguf: cannot open"), octo::error);
  const auto empty = temp_file("empty.gguf");
  { std::ofstream(empty, std::ios::binary); }
  CHECK_THROWS_WITH_AS(gguf_file::open(empty), doctest::Contains("empty"), octo::error);
  CHECK_THROWS_WITH_AS(gguf_file::open(empty.parent_path()), doctest::Contains("not a regular file"), octo::error);
  const auto bytes = small_valid_file();
  const auto cut = temp_file("cut.gguf");
  {
    std::ofstream o(cut, std::ios::binary);
    o.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size() - 5));
  }
  CHECK_THROWS_WITH_AS(gguf_file::open(cut), doctest::Contains("cut.gguf: "), octo::error);
  // A moved-from file is empty and the moved-to one keeps the mapping.
  const auto full = temp_file("full.gguf");
  {
    std::ofstream o(full, std::ios::binary);
    o.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  }
  auto f = gguf_file::open(full);
  gguf_file g = std::move(f);
  CHECK(std::to_integer<int>(g.tensor("b").data[127]) == 2);
  f = std::move(g);
  CHECK(std::to_integer<int>(f.tensor("a").data[0]) == 1);
  fs::remove_all(empty.parent_path());
}

TEST_CASE("random corruption of a valid file: parse or octo::error, never a crash") {
  const auto base = small_valid_file();
  std::mt19937 g(99);
  int errors = 0, parsed = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    auto b = base;
    const int flips = 1 + int(g() % 4);
    for (int k = 0; k < flips; ++k) {
      const auto at = g() % b.size();
      switch (g() % 3) {
        case 0: b[at] = std::byte(g() & 0xff); break;
        case 1: b[at] = std::byte{0xff}; break;
        default: b[at] ^= std::byte(1u << (g() % 8)); break;
      }
    }
    try {
      const auto f = parse(b);
      for (std::size_t i = 0; i < f.tensors().size(); ++i) {
        try {
          const auto t = f.tensor(i);
          volatile std::byte sink{};
          for (auto x : t.data) sink = sink ^ x;  // every byte of every span must be readable
        } catch (const octo::error&) {
        }
      }
      ++parsed;
    } catch (const octo::error& e) {
      ++errors;
      const std::string msg = e.what();
      if (msg.find('\n') != std::string::npos) FAIL("multi-line error: " << msg);
    }
  }
  MESSAGE(parsed << " corrupted files parsed, " << errors << " refused");
  CHECK(errors > 0);
}
