// Hostile and damaged inputs (docs/reliability.md): each case once made octo delete data, balloon,
// hang, die of a signal or print a wrong answer. Every one must now be one octo::error line naming the
// file, with nothing outside octo's own outputs touched. Oracles: the files as written here, the
// kernel's rusage of a child process, and fork + alarm to turn a hang into a failure.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "octo/error.hpp"
#include "octo/file_io.hpp"
#include "octo/model_file/gguf.hpp"
#include "octo/model_file/gguf_writer.hpp"
#include "octo/model_file/vocabulary.hpp"
#include "octo/models/model_config.hpp"
#include "octo/runtime/decomposed.hpp"
#include "octo/runtime/engine.hpp"
#include "octo/runtime/model_source.hpp"
#include "octo/stream/manifest.hpp"
#include "../support/temp_dir.hpp"
#include "../support/test_data.hpp"

namespace fs = std::filesystem;
using namespace octo;

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const octo::error& e) {
    return e.what();
  }
  return "(no error)";
}

// A copy of stories260K with its metadata edited.
fs::path edited(const test::temp_dir& dir, const std::string& name,
                const std::function<void(std::map<std::string, model_file::gguf_value>&)>& meta) {
  auto f = model_file::gguf_file::open(test::stories260k_gguf());
  std::map<std::string, model_file::gguf_value> kv;
  for (const auto& e : f.metadata()) kv[e.key] = e.value;
  meta(kv);
  model_file::gguf_writer w;
  for (auto& [k, v] : kv) w.set(k, v);
  for (const auto& t : f.tensors()) w.add_tensor_raw(t.name, t.ggml_type, t.dims, f.tensor(t.name).data);
  const auto path = dir / (name + ".gguf");
  w.write(path);
  return path;
}

runtime::engine_options streamed() {
  runtime::engine_options o;
  o.vm = runtime::backend::reference;
  o.ctx = 64;
  o.resident_layers = 0;  // every layer read from the file on every pass
  return o;
}

runtime::engine_options resident() {
  runtime::engine_options o;
  o.vm = runtime::backend::reference;
  o.ctx = 64;
  return o;
}

// Runs `f` in a child process with `seconds` to finish; returns its exit status (128 + signal when
// killed, 124 on a hang) and its peak RSS in bytes.
std::pair<int, std::uint64_t> in_child(const std::function<int()>& f, unsigned seconds = 20) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::alarm(seconds);
    int rc = 0;
    try {
      rc = f();
    } catch (...) {
      rc = 99;
    }
    ::_exit(rc);
  }
  int status = 0;
  struct rusage ru {};
  REQUIRE(::wait4(pid, &status, 0, &ru) == pid);
  const std::uint64_t peak = std::uint64_t(ru.ru_maxrss) * 1024;
  if (WIFSIGNALED(status)) return {WTERMSIG(status) == SIGALRM ? 124 : 128 + WTERMSIG(status), peak};
  return {WEXITSTATUS(status), peak};
}

}  // namespace

TEST_CASE("block_count must match the blocks present, on every path") {
  test::temp_dir tmp("hostile-blocks");
  const auto layers = std::int64_t(model_file::gguf_file::open(test::stories260k_gguf()).get_u64("llama.block_count"));
  for (const std::uint64_t n : {std::uint64_t(layers - 1), std::uint64_t(layers + 1), std::uint64_t(100000),
                                std::uint64_t(1000000)}) {
    CAPTURE(n);
    const auto bad = edited(tmp, "blocks" + std::to_string(n), [&](auto& kv) {
      kv["llama.block_count"] = model_file::gguf_value::of_u32(std::uint32_t(n));
    });
    const std::string name = bad.filename().string();
    // The resident path once ran the one-fewer case and printed a wrong answer; the streamed one
    // refused it.
    const auto e1 = error_of([&] { runtime::engine e(bad, resident()); });
    CHECK(e1.find(name) != std::string::npos);
    CHECK(e1.find("block_count' = " + std::to_string(n)) != std::string::npos);
    CHECK(e1.find('\n') == std::string::npos);
    CHECK(error_of([&] { runtime::engine e(bad, streamed()); }) == e1);
    // decompose fails before writing anything (it once wrote 100,004 files for the 100000 case).
    const auto out = tmp / ("out" + std::to_string(n));
    CHECK(error_of([&] { runtime::decompose_gguf(bad, out); }) == e1);
    CHECK(!fs::exists(out));
    CHECK(test::temporaries_of(out).empty());
  }
}

TEST_CASE("a tensor the model does not read is refused, on every path") {
  test::temp_dir tmp("hostile-extra");
  auto f = model_file::gguf_file::open(test::stories260k_gguf());
  model_file::gguf_writer w;
  for (const auto& kv : f.metadata()) w.set(kv.key, kv.value);
  for (const auto& t : f.tensors()) w.add_tensor_raw(t.name, t.ggml_type, t.dims, f.tensor(t.name).data);
  const std::vector<float> junk(16, 1.0f);
  w.add_tensor("junk.weight", ir::dtype::f32, {16}, std::as_bytes(std::span(junk)));
  const auto bad = tmp / "extra.gguf";
  w.write(bad);
  const auto e = error_of([&] { runtime::engine en(bad, resident()); });
  CHECK(e.find("extra.gguf") != std::string::npos);
  CHECK(e.find("tensor 'junk.weight' is not part of the llama model") != std::string::npos);
  CHECK(error_of([&] { runtime::engine en(bad, streamed()); }) == e);
  CHECK(error_of([&] { runtime::decompose_gguf(bad, tmp / "out"); }) == e);
  CHECK(!fs::exists(tmp / "out"));
}

TEST_CASE("sizes whose products would overflow are refused before any graph is built") {
  models::model_config c;
  c.vocab = 32;
  c.hidden = 64;
  c.layers = 1;
  c.heads = std::int64_t(1) << 20;
  c.kv_heads = 1;
  c.head_dim = std::int64_t(1) << 30;
  c.ffn = 64;
  c.max_ctx = 8;
  CHECK_THROWS_WITH_AS(c.check(), doctest::Contains("heads x head_dim exceeds 2^31"), octo::error);
  c.heads = 4;
  c.head_dim = std::int64_t(1) << 40;
  CHECK_THROWS_WITH_AS(c.check(), doctest::Contains("exceeds 2^31"), octo::error);

  test::temp_dir tmp("hostile-heads");
  const auto bad = edited(tmp, "heads", [](auto& kv) {
    kv["llama.attention.head_count"] = model_file::gguf_value::of_u32(1u << 20);
    kv["llama.attention.head_count_kv"] = model_file::gguf_value::of_u32(1u << 20);
    kv["llama.attention.key_length"] = model_file::gguf_value::of_u32(1u << 22);
    kv["llama.attention.value_length"] = model_file::gguf_value::of_u32(1u << 22);
    kv["llama.rope.dimension_count"] = model_file::gguf_value::of_u32(1u << 22);
  });
  const auto e = error_of([&] { (void)runtime::model_source::open(bad); });
  CHECK(e.find("heads.gguf") != std::string::npos);
  CHECK(e.find("exceeds 2^31") != std::string::npos);
}

TEST_CASE("FIFOs, directories and devices given as files are refused at once, never waited on") {
  test::temp_dir tmp("hostile-fifo");
  const auto fifo = tmp / "model.gguf";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  auto refused = [&](const std::function<void()>& f, const std::string& what) {
    const auto [rc, peak] = in_child([&] {
      const auto e = error_of(f);
      return e.find(what) != std::string::npos && e.find("FIFO") != std::string::npos ? 0 : 1;
    });
    (void)peak;
    return rc;
  };
  CHECK(refused([&] { model_file::gguf_file::open(fifo); }, fifo.string()) == 0);
  CHECK(refused([&] { runtime::engine e(fifo, resident()); }, fifo.string()) == 0);
  CHECK(refused([&] { runtime::engine e(fifo, streamed()); }, fifo.string()) == 0);
  CHECK(refused([&] { runtime::decompose_gguf(fifo, tmp / "out"); }, fifo.string()) == 0);
  CHECK(refused([&] { model_file::load_tokenizer_json(fifo); }, fifo.string()) == 0);
  // A decomposed directory whose manifest.json is a FIFO.
  fs::create_directories(tmp / "dir");
  REQUIRE(::mkfifo((tmp / "dir" / "manifest.json").c_str(), 0600) == 0);
  CHECK(refused([&] { stream::manifest::load(tmp / "dir"); }, "manifest.json") == 0);
  CHECK(error_of([&] { model_file::gguf_file::open(tmp.path()); }).find("is a directory") != std::string::npos);
  CHECK(error_of([&] { model_file::gguf_file::open("/dev/null"); }).find("character device") != std::string::npos);
}

TEST_CASE("a GGUF cut short while a model streams from it is an error, not SIGBUS") {
  test::temp_dir tmp("hostile-truncate");
  const auto copy = tmp / "s.gguf";
  fs::copy_file(test::stories260k_gguf(), copy);
  const auto [rc, peak] = in_child([&] {
    runtime::engine e(copy, streamed());
    const auto f = model_file::gguf_file::open(copy);
    // Cut the file inside the first block's tensors: the mapping stays, its pages past the end go.
    const auto* t = f.find_tensor("blk.0.attn_q.weight");
    if (!t || ::truncate(copy.c_str(), off_t(f.data_offset() + t->offset)) != 0) return 2;
    const std::vector<std::int32_t> ids{1, 2, 3};
    const auto err = error_of([&] { e.prefill(ids); });
    return err.find("s.gguf") != std::string::npos && err.find("ends early") != std::string::npos ? 0 : 1;
  });
  (void)peak;
  CHECK(rc == 0);  // 128 + SIGBUS (7) = 135 before
}

TEST_CASE("a large metadata array costs about its own size in memory") {
  test::temp_dir tmp("hostile-metadata");
  // GGUF v3, no tensors, one key holding a u8 array of 64 MiB (written by hand: the writer's own
  // gguf_value list would be the cost under test).
  const std::uint64_t n = std::uint64_t(64) << 20;
  const auto path = tmp / "big.gguf";
  {
    std::ofstream out(path, std::ios::binary);
    auto le = [&](std::uint64_t v, int bytes) {
      for (int k = 0; k < bytes; ++k) out.put(char((v >> (8 * k)) & 0xff));
    };
    out.write("GGUF", 4);
    le(3, 4);  // version
    le(0, 8);  // tensors
    le(1, 8);  // metadata entries
    const std::string key = "junk.bytes";
    le(key.size(), 8);
    out.write(key.data(), std::streamsize(key.size()));
    le(9, 4);  // array
    le(0, 4);  // of u8
    le(n, 8);
    const std::vector<char> zeros(1 << 20, 7);
    for (std::uint64_t i = 0; i < n; i += zeros.size()) out.write(zeros.data(), std::streamsize(zeros.size()));
  }
  const auto [base_rc, base] = in_child([] { return 0; });
  const auto [rc, peak] = in_child([&] {
    const auto f = model_file::gguf_file::open(path);
    const auto a = f.get_array("junk.bytes");
    return a.size() == n && a[n - 1].as_u64() == 7 ? 0 : 1;
  });
  CHECK(base_rc == 0);
  CHECK(rc == 0);
  // The file is mapped (up to n resident) and the packed copy is n: about 2n over the baseline. It
  // was about 72n (a 72-byte gguf_value per item).
  CHECK(peak < base + 3 * n);
  MESSAGE("peak RSS over baseline: " << (peak - base) / (1 << 20) << " MiB for a " << (n >> 20) << " MiB array");
}

TEST_CASE("the reference VM refuses a context that does not fit its memory budget") {
  auto o = resident();
  o.ctx = std::int64_t(1) << 30;
  const auto [rc, peak] = in_child([&] {
    const auto e = error_of([&] { runtime::engine en(test::stories260k_gguf(), o); });
    return e.find("memory budget") != std::string::npos && e.find('\n') == std::string::npos ? 0 : 1;
  });
  CHECK(rc == 0);
  CHECK(peak < (std::uint64_t(1) << 30));  // it once allocated tens of gigabytes
}

TEST_CASE("a decomposed directory's meta.gguf is checked against the manifest before use") {
  test::temp_dir tmp("hostile-meta");
  const auto dir = tmp / "s.octo";
  runtime::decompose_gguf(test::stories260k_gguf(), dir);
  CHECK_NOTHROW(runtime::engine(dir, streamed()));
  {
    // One byte changed, size unchanged: only the checksum can tell.
    std::fstream f(dir / "meta.gguf", std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(-1, std::ios::end);
    const char c = char(f.get());
    f.seekp(-1, std::ios::end);
    f.put(char(c ^ 1));
  }
  const auto e = error_of([&] { runtime::engine en(dir, streamed()); });
  CHECK(e.find("meta.gguf") != std::string::npos);
  CHECK(e.find("checksum mismatch") != std::string::npos);
}

TEST_CASE("a manifest with a number too large for a double is one error line (found by fuzz_manifest)") {
  // nlohmann throws out_of_range, not parse_error, for 1e999: it escaped manifest::parse as a foreign
  // exception (tests/fuzz/regressions/manifest/number-overflow-escapes-as-json-out_of_range).
  const auto e = error_of([] { stream::manifest::parse(R"({"format": "octo-decomposed-model", "x": 9e999})", "d"); });
  CHECK(e.find("manifest.json: bad JSON: number overflow") != std::string::npos);
}

TEST_CASE("outputs are written beside their target and renamed; a user's file is never emptied early") {
  test::temp_dir tmp("hostile-output");
  const auto target = tmp / "logits.npy";
  std::ofstream(target) << "precious";
  CHECK_NOTHROW(check_output_path(target));
  {
    output_file out(target);
    out.write(std::as_bytes(std::span("new", 3)));
    CHECK(test::temporaries_of(target).size() == 1);
    std::ifstream in(target);
    std::string s;
    in >> s;
    CHECK(s == "precious");  // untouched until commit
  }  // dropped: the temporary goes, the target stays
  CHECK(test::temporaries_of(target).empty());
  {
    std::ifstream in(target);
    std::string s;
    in >> s;
    CHECK(s == "precious");
  }
  output_file out(target);
  out.write(std::as_bytes(std::span("new", 3)));
  out.commit();
  CHECK(fs::file_size(target) == 3);
  CHECK(test::temporaries_of(target).empty());
  // Killed by SIGTERM mid-write (a tool that called remove_temporaries_on_signals): no temporary left.
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    remove_temporaries_on_signals();
    output_file doomed(target);
    doomed.write(std::as_bytes(std::span("partial", 7)));
    ::raise(SIGTERM);
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFSIGNALED(status));
  CHECK(test::temporaries_of(target).empty());
  CHECK(fs::file_size(target) == 3);
  CHECK(error_of([&] { check_output_path(tmp.path()); }).find("is a directory") != std::string::npos);
  CHECK(error_of([&] { check_output_path(tmp / "no" / "x.npy"); }).find("does not exist") != std::string::npos);
  const auto fifo = tmp / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(error_of([&] { check_output_path(fifo); }).find("not a regular file") != std::string::npos);
}

TEST_CASE("names from files are quoted printable in messages; library errors are one clean line") {
  CHECK(octo::quoted("a\x1b[31mb\n") == "'a\\x1b[31mb\\x0a'");
  CHECK(octo::quoted(std::string(300, 'x')).size() == 200 + 5);
  // nlohmann's parse error quotes the bytes it read: an escape sequence from the file must not pass.
  test::temp_dir tmp("hostile-text");
  std::ofstream(tmp / "tokenizer.json") << "{\"model\": \x1b[2J\n";
  const auto e = error_of([&] { model_file::load_tokenizer_json(tmp / "tokenizer.json"); });
  CHECK(e.find("tokenizer.json") != std::string::npos);
  CHECK(e.find("[json.exception") == std::string::npos);
  CHECK(e.find('\x1b') == std::string::npos);
  CHECK(e.find('\n') == std::string::npos);
}

TEST_CASE("a command line's leftover words: the first option among them as given, else the first word, quoted") {
  CHECK(octo::leftover_arguments_text({"--prompt-fil", "p.txt"}) == "unknown option '--prompt-fil'");
  CHECK(octo::leftover_arguments_text({"p.txt", "-x", "--y"}) == "unknown option '-x'");
  CHECK(octo::leftover_arguments_text({"stray", "-"}) == "unexpected argument 'stray'");  // "-" alone is a word
  CHECK(octo::leftover_arguments_text({"--\x1b[2J"}).find('\x1b') == std::string::npos);
  CHECK(octo::leftover_arguments_text({}) == "unexpected argument ''");
}
