// layer_reader / prefetcher / manifest errors on a decomposed stories260K: missing, short and corrupt
// files give an error naming the file; bad manifests one line naming the field; prefetch errors reach
// the waiter; O_DIRECT falls back on filesystems without it.
#include <cstring>
#include <fstream>
#include <iterator>
#include <regex>

#include "octo/error.hpp"
#include "octo/model_file/gguf.hpp"
#include "octo/runtime/decomposed.hpp"
#include "octo/stream/layer_reader.hpp"
#include "octo/stream/manifest.hpp"
#include "octo/stream/prefetcher.hpp"
#include "../support/temp_dir.hpp"
#include "../support/test_data.hpp"

namespace fs = std::filesystem;
using namespace octo;

namespace {

std::string error_of(auto&& f) {
  try {
    f();
  } catch (const octo::error& e) {
    return e.what();
  }
  return "(no error)";
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}
void write_text(const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::binary | std::ios::trunc) << s; }

void flip_byte(const fs::path& p, std::uint64_t at) {
  std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(std::streamoff(at));
  const char c = char(f.get());
  f.seekp(std::streamoff(at));
  f.put(char(c ^ 0x40));
}

// A decomposed stories260K in a fresh directory per test.
struct fixture {
  test::temp_dir tmp{"stream-reader"};
  fs::path dir = tmp / "s";
  fixture() {
    REQUIRE_MESSAGE(fs::exists(test::stories260k_gguf()), "missing " << test::stories260k_gguf().string());
    runtime::decompose_gguf(test::stories260k_gguf(), dir);
  }
};

// The bytes of tensor `name` as the GGUF holds them (the oracle).
std::vector<std::byte> gguf_bytes(const std::string& name) {
  const auto g = model_file::gguf_file::open(test::stories260k_gguf());
  const auto t = g.tensor(name);
  return {t.data.begin(), t.data.end()};
}

bool tensor_matches(const stream::manifest& m, std::span<const std::byte> buf, const std::string& name) {
  const auto* t = m.find_tensor(name);
  REQUIRE(t != nullptr);
  const auto want = gguf_bytes(name);
  return t->bytes == want.size() && std::memcmp(buf.data() + t->offset, want.data(), want.size()) == 0;
}

}  // namespace

TEST_CASE("layer_reader reads a layer into an aligned buffer; tensors equal the GGUF's") {
  fixture fx;
  const auto m = stream::manifest::load(fx.dir);
  stream::layer_reader r(m);
  stream::aligned_buffer buf(m.max_layer_bytes());
  for (std::int64_t l = 0; l < m.layer_count(); ++l) {
    CHECK(r.read_layer(l, buf.span()) == m.layer_file(l).raw_bytes);
    CHECK(tensor_matches(m, buf.span(), "blk." + std::to_string(l) + ".attn_q.weight"));
    CHECK(tensor_matches(m, buf.span(), "blk." + std::to_string(l) + ".ffn_down.weight"));
  }
  // A buffer that is too small is refused, naming the file.
  CHECK(error_of([&] { r.read_layer(0, buf.span().first(100)); }).find("layer_000.bin") != std::string::npos);
  CHECK(error_of([&] { (void)m.layer_file(99); }).find("layer 99 is out of range") != std::string::npos);
}

TEST_CASE("missing, short and corrupt files: errors name the file") {
  fixture fx;
  const auto l1 = fx.dir / "layer_001.bin";

  SUBCASE("missing") {
    const auto m = stream::manifest::load(fx.dir);
    fs::remove(l1);
    const auto e1 = error_of([&] { stream::manifest::load(fx.dir); });
    CHECK(e1.find("layer_001.bin") != std::string::npos);
    CHECK(e1.find("missing") != std::string::npos);
    stream::layer_reader r(m);
    stream::aligned_buffer buf(m.max_layer_bytes());
    const auto e2 = error_of([&] { r.read_layer(1, buf.span()); });
    CHECK(e2.find("layer_001.bin") != std::string::npos);
    CHECK(e2.find("cannot open") != std::string::npos);
  }
  SUBCASE("short") {
    const auto m = stream::manifest::load(fx.dir);
    fs::resize_file(l1, fs::file_size(l1) - 4096);
    const auto e1 = error_of([&] { stream::manifest::load(fx.dir); });
    CHECK(e1.find("layer_001.bin") != std::string::npos);
    CHECK(e1.find("the manifest says") != std::string::npos);
    stream::layer_reader r(m);
    stream::aligned_buffer buf(m.max_layer_bytes());
    CHECK(error_of([&] { r.read_layer(1, buf.span()); }).find("layer_001.bin") != std::string::npos);
  }
  SUBCASE("corrupt") {
    flip_byte(l1, 100);
    const auto m = stream::manifest::load(fx.dir);  // sizes are fine
    const auto e1 = error_of([&] { stream::manifest::load(fx.dir, stream::verify_level::checksums); });
    CHECK(e1.find("layer_001.bin: checksum mismatch") != std::string::npos);
    stream::aligned_buffer buf(m.max_layer_bytes());
    stream::layer_reader first(m);  // first_load: the first read checks
    CHECK(error_of([&] { first.read_layer(1, buf.span()); }).find("layer_001.bin: checksum mismatch") != std::string::npos);
    CHECK_NOTHROW(first.read_layer(0, buf.span()));
    stream::reader_options never;
    never.verify = stream::checksum_policy::never;
    stream::layer_reader trusting(m, never);
    CHECK_NOTHROW(trusting.read_layer(1, buf.span()));  // the policy says trust: garbage passes
    const auto& first_tensor = m.tensors()[m.layer_file(1).tensors.front()];
    REQUIRE(first_tensor.offset == 0);
    REQUIRE(first_tensor.bytes > 100);
    CHECK_FALSE(tensor_matches(m, buf.span(), first_tensor.name));  // the flipped byte came through
  }
  SUBCASE("first_load trusts later reads; always checks each") {
    const auto m = stream::manifest::load(fx.dir);
    stream::aligned_buffer buf(m.max_layer_bytes());
    stream::layer_reader first(m);
    CHECK_NOTHROW(first.read_layer(1, buf.span()));
    stream::reader_options always;
    always.verify = stream::checksum_policy::always;
    stream::layer_reader each(m, always);
    CHECK_NOTHROW(each.read_layer(1, buf.span()));
    flip_byte(l1, 200);
    CHECK_NOTHROW(first.read_layer(1, buf.span()));
    CHECK(error_of([&] { each.read_layer(1, buf.span()); }).find("layer_001.bin: checksum mismatch") != std::string::npos);
  }
}

TEST_CASE("bad manifests: one line naming the problem") {
  fixture fx;
  const auto mj = fx.dir / "manifest.json";
  const std::string good = read_text(mj);
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    const auto at = s.find(from);
    REQUIRE_MESSAGE(at != std::string::npos, from);
    s.replace(at, from.size(), to);
    write_text(mj, s);
    return error_of([&] { stream::manifest::load(fx.dir); });
  };
  auto one_line = [](const std::string& e) { return e.find('\n') == std::string::npos; };

  write_text(mj, good.substr(0, good.size() / 2));
  auto e = error_of([&] { stream::manifest::load(fx.dir); });
  CHECK(e.find("manifest.json: bad JSON") != std::string::npos);
  CHECK(one_line(e));

  e = with("\"version\": 1", "\"version\": 2");
  CHECK(e.find("format version 2 is not supported") != std::string::npos);
  e = with("\"format\": \"octo-decomposed-model\"", "\"format\": \"something\"");
  CHECK(e.find("format 'something'") != std::string::npos);
  e = with("\"name\": \"layer_003.bin\"", "\"name\": \"../layer_003.bin\"");
  CHECK(e.find("is not a plain file name") != std::string::npos);
  e = with("\"role\": \"layer\"", "\"role\": \"lair\"");
  CHECK(e.find("files[2].role 'lair'") != std::string::npos);
  // A layer's file missing from the list.
  e = with("\"layer\": 4", "\"layer\": 3");
  CHECK(e.find("two files") != std::string::npos);
  e = with("\"compression\": \"none\"", "\"compression\": \"lz4\"");
  CHECK(e.find("is not \"none\" or \"zstd\"") != std::string::npos);
  e = with("\"layers\": 5", "\"layers\": \"five\"");
  CHECK(e.find("config.layers is not an integer") != std::string::npos);
  CHECK(one_line(e));

  // A tensor pointing past its file's end.
  std::string s = good;
  const std::regex off("\"offset\": [0-9]+");
  s = std::regex_replace(s, off, "\"offset\": 1073741824", std::regex_constants::format_first_only);
  write_text(mj, s);
  e = error_of([&] { stream::manifest::load(fx.dir); });
  CHECK(e.find("extends past the end of") != std::string::npos);

  fs::remove(mj);
  e = error_of([&] { stream::manifest::load(fx.dir); });
  CHECK(e.find("manifest.json: missing") != std::string::npos);
}

TEST_CASE("prefetcher: reads in order, errors reach the waiter, the thread survives them, shutdown cancels") {
  fixture fx;
  const auto m = stream::manifest::load(fx.dir);
  const auto n = std::size_t(m.layer_count());
  std::vector<stream::aligned_buffer> bufs;
  for (std::size_t i = 0; i < n; ++i) bufs.emplace_back(m.max_layer_bytes());

  {
    stream::prefetcher pf(m, {}, 2);
    std::vector<std::future<std::uint64_t>> futs;
    for (std::size_t l = 0; l < n; ++l) futs.push_back(pf.submit_layer(std::int64_t(l), bufs[l].span()));
    CHECK(pf.pending() <= 2);
    for (std::size_t l = 0; l < n; ++l) {
      CHECK(futs[l].get() == m.layer_file(std::int64_t(l)).raw_bytes);
      CHECK(tensor_matches(m, bufs[l].span(), "blk." + std::to_string(l) + ".attn_k.weight"));
    }
  }

  // A missing file in the middle: its waiter gets the error; later requests still complete.
  fs::remove(fx.dir / "layer_002.bin");
  {
    stream::prefetcher pf(m, {}, 3);
    auto f1 = pf.submit_layer(1, bufs[1].span());
    auto f2 = pf.submit_layer(2, bufs[2].span());
    auto f3 = pf.submit_layer(3, bufs[3].span());
    CHECK(f1.get() == m.layer_file(1).raw_bytes);
    const auto e = error_of([&] { f2.get(); });
    CHECK(e.find("layer_002.bin") != std::string::npos);
    CHECK(f3.get() == m.layer_file(3).raw_bytes);
    // The callback form gets the error as an exception_ptr.
    std::promise<std::string> seen;
    pf.submit(m.layer_file(2), bufs[2].span(), [&](std::uint64_t bytes, std::exception_ptr err) {
      std::string what = "bytes " + std::to_string(bytes);
      if (err) {
        try {
          std::rethrow_exception(err);
        } catch (const octo::error& x) {
          what = x.what();
        }
      }
      seen.set_value(what);
    });
    CHECK(seen.get_future().get().find("layer_002.bin") != std::string::npos);
    pf.drain();
    CHECK(pf.pending() == 0);
  }

  // Shutdown with requests queued: each completes or fails "cancelled"; nothing hangs; later submits throw.
  {
    stream::prefetcher pf(m, {}, 64);
    std::vector<std::future<std::uint64_t>> futs;
    for (int rep = 0; rep < 8; ++rep)
      for (std::int64_t l : {0, 1, 3, 4}) futs.push_back(pf.submit_layer(l, bufs[std::size_t(l)].span()));
    pf.shutdown();
    std::size_t ok = 0, cancelled = 0;
    for (auto& f : futs) {
      try {
        f.get();
        ++ok;
      } catch (const octo::error& e) {
        CHECK(std::string(e.what()).find("cancelled") != std::string::npos);
        ++cancelled;
      }
    }
    CHECK(ok + cancelled == futs.size());
    CHECK(error_of([&] { pf.submit_layer(0, bufs[0].span()); }).find("after shutdown") != std::string::npos);
    pf.shutdown();  // idempotent
  }
}

TEST_CASE("direct and buffered reads give the same bytes (unaligned buffers and tmpfs included)") {
  fixture fx;
  const auto m = stream::manifest::load(fx.dir);
  const auto& f = m.layer_file(0);
  stream::aligned_buffer buf(f.raw_bytes);
  // An unaligned destination never uses O_DIRECT, and still reads correctly.
  std::vector<std::byte> unaligned(f.raw_bytes + 1);
  CHECK_FALSE(stream::read_file_into(m.path_of(f), f.stored_bytes, std::span(unaligned).subspan(1), true));
  CHECK(stream::xxh3_64(std::span(unaligned).subspan(1, f.raw_bytes)) == f.xxh3);
  (void)stream::read_file_into(m.path_of(f), f.stored_bytes, buf.span(), true);
  CHECK(stream::xxh3_64(buf.span().first(f.raw_bytes)) == f.xxh3);
  // tmpfs (/dev/shm): older kernels refuse O_DIRECT there (the reader then falls back to buffered
  // reads), 6.6 and later accept it; either way the bytes must arrive.
  if (fs::is_directory("/dev/shm")) {
    test::temp_dir shm_probe("probe");  // only for a unique name
    const auto p = fs::path("/dev/shm") / shm_probe.path().filename();
    fs::copy_file(m.path_of(f), p);
    stream::aligned_buffer b2(f.raw_bytes);
    (void)stream::read_file_into(p, f.stored_bytes, b2.span(), true);
    fs::remove(p);
    CHECK(stream::xxh3_64(b2.span().first(f.raw_bytes)) == f.xxh3);
  }
}
