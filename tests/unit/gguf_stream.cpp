// The streaming GGUF writer (gguf_writer::declare_tensor + gguf_stream): its file against the
// in-memory writer's bytes and against a layout computed here byte by byte from the GGUF spec
// (header, metadata, tensor directory, 32-aligned data), chunked writes of any size, the temporary sibling /
// rename behaviour, and its errors.
#include <doctest/doctest.h>

#include "../support/test_data.hpp"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <unistd.h>

#include "octo/error.hpp"
#include "octo/model_file/gguf.hpp"
#include "octo/model_file/gguf_writer.hpp"
#include "../support/temp_dir.hpp"

namespace fs = std::filesystem;
using namespace octo;
using namespace octo::model_file;

namespace {

fs::path temp_path(const std::string& name) {
  return fs::temp_directory_path() / ("octo_gguf_stream_" + std::to_string(::getpid()) + "_" + name);
}

using octo::test::slurp;

struct test_tensor {
  std::string name;
  ir::dtype type;
  std::vector<std::int64_t> dims;
  std::vector<std::byte> data;
};

// Tensors of several types and sizes; sizes not multiples of 32 exercise the padding.
std::vector<test_tensor> sample_tensors() {
  std::mt19937 rng(7);
  auto bytes = [&](std::size_t n) {
    std::vector<std::byte> v(n);
    for (auto& b : v) b = std::byte(rng() & 0xff);
    return v;
  };
  return {
      {"a.f32", ir::dtype::f32, {3}, bytes(12)},
      {"b.q4_k", ir::dtype::q4_k, {256, 3}, bytes(3 * 144)},
      {"c.f16", ir::dtype::f16, {5, 7}, bytes(70)},
      {"d.q8_0", ir::dtype::q8_0, {64, 2}, bytes(2 * 2 * 34)},
      {"e.q6_k", ir::dtype::q6_k, {256}, bytes(210)},
  };
}

void fill_metadata(gguf_writer& w) {
  w.set_string("general.architecture", "test");
  w.set_u32("some.count", 42);
}

void put_le(std::string& s, std::uint64_t v, int bytes) {
  for (int k = 0; k < bytes; ++k) s.push_back(char((v >> (8 * k)) & 0xff));
}
void put_str(std::string& s, const std::string& t) {
  put_le(s, t.size(), 8);
  s += t;
}

}  // namespace

TEST_CASE("streamed in odd chunks, a GGUF file equals the in-memory writer's and the spec's layout") {
  const auto tensors = sample_tensors();
  gguf_writer held, streamed;
  fill_metadata(held);
  fill_metadata(streamed);
  for (const auto& t : tensors) {
    held.add_tensor(t.name, t.type, t.dims, t.data);
    streamed.declare_tensor(t.name, t.type, t.dims);
  }
  const auto path = temp_path("chunks.gguf");
  {
    auto s = streamed.stream_to(path);
    CHECK(octo::test::temporaries_of(path).size() == 1);
    CHECK_FALSE(fs::exists(path));
    std::mt19937 rng(3);
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      CHECK(s.tensor_index() == i);
      std::span<const std::byte> rest(tensors[i].data);
      while (!rest.empty()) {  // chunks of 1 to 40 bytes
        const std::size_t n = std::min<std::size_t>(rest.size(), 1 + rng() % 40);
        s.write(rest.first(n));
        rest = rest.subspan(n);
      }
    }
    CHECK(s.tensor_index() == tensors.size());
    CHECK(s.bytes_written() == streamed.file_size());
    s.finish();
  }
  CHECK(octo::test::temporaries_of(path).empty());
  const std::string file = slurp(path);
  const auto mem = held.to_bytes();
  REQUIRE(file.size() == mem.size());
  CHECK(std::memcmp(file.data(), mem.data(), mem.size()) == 0);

  // The layout written out here from the GGUF v3 spec.
  std::string want = "GGUF";
  put_le(want, 3, 4);
  put_le(want, tensors.size(), 8);
  put_le(want, 2, 8);
  put_str(want, "general.architecture");
  put_le(want, 8, 4);  // GGUF_TYPE_STRING
  put_str(want, "test");
  put_str(want, "some.count");
  put_le(want, 4, 4);  // GGUF_TYPE_UINT32
  put_le(want, 42, 4);
  const std::uint32_t ggml_types[] = {0, 12, 1, 8, 14};  // F32, Q4_K, F16, Q8_0, Q6_K
  std::uint64_t offset = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    put_str(want, tensors[i].name);
    put_le(want, tensors[i].dims.size(), 4);
    for (auto d : tensors[i].dims) put_le(want, std::uint64_t(d), 8);
    put_le(want, ggml_types[i], 4);
    put_le(want, offset, 8);
    offset += (tensors[i].data.size() + 31) / 32 * 32;
  }
  want.resize((want.size() + 31) / 32 * 32, '\0');
  CHECK(streamed.data_offset() == want.size());
  for (const auto& t : tensors) {
    want.append(reinterpret_cast<const char*>(t.data.data()), t.data.size());
    want.resize((want.size() + 31) / 32 * 32, '\0');
  }
  CHECK(file == want);
  CHECK(gguf_file::open(path).tensors().size() == tensors.size());
  fs::remove(path);
}

TEST_CASE("held and declared tensors mix; write() is atomic through a temporary sibling") {
  const auto tensors = sample_tensors();
  gguf_writer all_held, mixed;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto& t = tensors[i];
    all_held.add_tensor(t.name, t.type, t.dims, t.data);
    if (i % 2 == 0) mixed.add_tensor(t.name, t.type, t.dims, t.data);
    else mixed.declare_tensor(t.name, t.type, t.dims);
  }
  const auto path = temp_path("mixed.gguf");
  auto s = mixed.stream_to(path);
  CHECK(s.tensor_index() == 1);  // tensor 0 was held and went out at once
  s.write(tensors[1].data);
  CHECK(s.tensor_index() == 3);
  CHECK(s.remaining_in_tensor() == tensors[3].data.size());
  s.write(tensors[3].data);
  CHECK(s.tensor_index() == tensors.size());  // the held last one followed
  s.finish();
  const std::string file = slurp(path);
  const auto mem = all_held.to_bytes();
  REQUIRE(file.size() == mem.size());
  CHECK(std::memcmp(file.data(), mem.data(), mem.size()) == 0);

  // write() of held tensors goes through the same temporary and rename.
  const auto path2 = temp_path("held.gguf");
  all_held.write(path2);
  CHECK(slurp(path2) == file);
  CHECK(octo::test::temporaries_of(path2).empty());
  fs::remove(path);
  fs::remove(path2);
}

TEST_CASE("an unfinished or failed stream removes its temporary and leaves an existing file alone") {
  gguf_writer w;
  w.declare_tensor("x", ir::dtype::f32, {4});
  w.declare_tensor("y", ir::dtype::f32, {2});
  const auto path = temp_path("unfinished.gguf");
  const fs::path users = path.string() + ".tmp";  // a user's file of the old temporary name: never touched
  std::ofstream(users) << "mine";
  std::ofstream(path) << "old";
  const std::vector<std::byte> four(16), two(8), nine(36);
  {
    auto s = w.stream_to(path);
    s.write(four);
    CHECK(octo::test::temporaries_of(path).size() == 1);
  }  // dropped without finish()
  CHECK(octo::test::temporaries_of(path).empty());
  CHECK(slurp(path) == "old");
  {
    auto s = w.stream_to(path);
    s.write(four);
    CHECK_THROWS_WITH_AS(s.finish(), doctest::Contains("tensor 'y' got 0 of 8 bytes"), octo::error);
    CHECK(octo::test::temporaries_of(path).empty());
  }
  {
    auto s = w.stream_to(path);
    CHECK_THROWS_WITH_AS(s.write(nine), doctest::Contains("beyond the last tensor"), octo::error);
  }
  CHECK(octo::test::temporaries_of(path).empty());
  CHECK(slurp(path) == "old");
  CHECK_THROWS_WITH_AS(w.write(path), doctest::Contains("tensor 'x' was declared but has no data"), octo::error);
  CHECK_THROWS_WITH_AS(w.to_bytes(), doctest::Contains("tensor 'x' was declared but has no data"), octo::error);
  CHECK_THROWS_WITH_AS(w.stream_to("/nonexistent/dir/m.gguf"),
                       doctest::Contains("/nonexistent/dir/m.gguf: its folder /nonexistent/dir does not exist"), octo::error);
  CHECK_THROWS_WITH_AS(w.declare_tensor("z", ir::dtype::q4_k, {100}), doctest::Contains("not a multiple"), octo::error);
  CHECK_THROWS_WITH_AS(w.declare_tensor("x", ir::dtype::f32, {1}), doctest::Contains("added twice"), octo::error);
  {
    auto s = w.stream_to(path);
    s.write(four);
    s.write(two);
    s.finish();
    CHECK_THROWS_WITH_AS(s.finish(), doctest::Contains("already finished"), octo::error);
  }
  CHECK(fs::file_size(path) == w.file_size());
  CHECK(slurp(users) == "mine");
  fs::remove(path);
  fs::remove(users);
}
