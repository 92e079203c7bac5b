// octo decompose on the real test models: every tensor's bytes in the layer files equal the GGUF's (the
// GGUF reader is the oracle), checksums recomputed here with xxHash itself, atomicity, idempotence, zstd.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <map>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "octo/error.hpp"
#include "octo/model_file/gguf.hpp"
#include "octo/model_file/vocabulary.hpp"
#include "octo/runtime/decomposed.hpp"
#include "octo/runtime/engine.hpp"
#include "octo/runtime/model_source.hpp"
#include "octo/stream/layer_reader.hpp"
#include "octo/stream/manifest.hpp"
#include "../support/hf_reference.hpp"
#include "../support/temp_dir.hpp"
#include "../support/test_data.hpp"

namespace fs = std::filesystem;
using namespace octo;

namespace {

fs::path tiny_qwen() { return fs::path(OCTO_SOURCE_DIR) / "models" / "tiny-qwen" / "tiny-qwen.gguf"; }

std::vector<std::byte> slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  REQUIRE_MESSAGE(in, "cannot open " << p.string());
  std::vector<char> c((std::istreambuf_iterator<char>(in)), {});
  std::vector<std::byte> out(c.size());
  std::memcpy(out.data(), c.data(), c.size());
  return out;
}

std::uint64_t xxh3_of(const fs::path& p) {
  const auto b = slurp(p);
  return XXH3_64bits(b.data(), b.size());
}

std::vector<fs::path> siblings_with_prefix(const fs::path& dir) {
  std::vector<fs::path> out;
  const std::string prefix = dir.filename().string() + ".tmp-";
  for (const auto& e : fs::directory_iterator(dir.parent_path()))
    if (e.path().filename().string().starts_with(prefix)) out.push_back(e.path());
  return out;
}

std::string error_of(auto&& f) {
  try {
    f();
  } catch (const octo::error& e) {
    return e.what();
  }
  return "(no error)";
}

// The decomposed directory holds exactly the GGUF's tensors, byte for byte, where the manifest says, and
// each file's checksum is the XXH3 of its bytes on disk.
void check_against_gguf(const fs::path& gguf_path, const fs::path& dir, bool zstd) {
  const auto g = model_file::gguf_file::open(gguf_path);
  const auto m = stream::manifest::load(dir, stream::verify_level::checksums);
  CHECK(m.tensors().size() == g.tensors().size());
  const auto cfg = runtime::config_from_gguf(g);
  const auto back = runtime::config_from_manifest(m);
  CHECK(back.architecture == cfg.architecture);
  CHECK(back.vocab == cfg.vocab);
  CHECK(back.hidden == cfg.hidden);
  CHECK(back.layers == cfg.layers);
  CHECK(back.heads == cfg.heads);
  CHECK(back.kv_heads == cfg.kv_heads);
  CHECK(back.head_dim == cfg.head_dim);
  CHECK(back.ffn == cfg.ffn);
  CHECK(back.rope_theta == cfg.rope_theta);
  CHECK(back.rms_eps == cfg.rms_eps);
  CHECK(back.tied_embeddings == cfg.tied_embeddings);
  CHECK(back.qkv_bias == cfg.qkv_bias);
  CHECK(back.qk_norm == cfg.qk_norm);
  CHECK(back.rope == cfg.rope);
  CHECK(back.rope_ramp.low_scale == cfg.rope_ramp.low_scale);
  CHECK(back.rope_ramp.slope == cfg.rope_ramp.slope);
  CHECK(back.rope_ramp.offset == cfg.rope_ramp.offset);
  CHECK(back.max_ctx == cfg.max_ctx);
  CHECK(back.weight_dtype == cfg.weight_dtype);
  CHECK(m.layer_count() == cfg.layers);
  CHECK(m.tensor_alignment() == (m.tensor_alignment() == 256 ? 256u : 4096u));

  // Raw file contents: read here with ifstream (zstd files decoded by the reader, compared below).
  std::map<std::string, std::vector<std::byte>> raw;
  stream::layer_reader reader(m);
  for (const auto& f : m.files()) {
    CHECK_MESSAGE(f.xxh3 == xxh3_of(dir / f.name), f.name);
    CHECK(fs::file_size(dir / f.name) == f.stored_bytes);
    CHECK(f.raw_bytes % 4096 == 0);
    stream::aligned_buffer buf(stream::layer_reader::buffer_bytes(f));
    CHECK(reader.read(f, buf.span()) == f.raw_bytes);
    raw[f.name].assign(buf.data(), buf.data() + f.raw_bytes);
    if (f.comp == stream::compression::none) CHECK(raw[f.name] == slurp(dir / f.name));
    CHECK((f.comp == stream::compression::zstd) == (zstd && f.role == stream::file_role::layer));
  }
  CHECK(m.meta_file().xxh3 == xxh3_of(dir / "meta.gguf"));

  for (std::size_t i = 0; i < g.tensors().size(); ++i) {
    const auto& info = g.tensors()[i];
    CAPTURE(info.name);
    const auto* t = m.find_tensor(info.name);
    REQUIRE(t != nullptr);
    const auto& f = m.file_of(*t);
    // blk.N.* in layer_N, token_embd in embed.bin, the rest in head.bin
    std::string want = "head.bin";
    if (info.name == "token_embd.weight") want = "embed.bin";
    else if (info.name.starts_with("blk.")) want = stream::layer_file_name(std::stoll(info.name.substr(4)));
    CHECK(f.name == want);
    CHECK(t->offset % m.tensor_alignment() == 0);
    CHECK(t->ggml_type == info.ggml_type);
    CHECK(t->dims == info.dims);
    const auto gt = g.tensor(i);
    REQUIRE(t->bytes == gt.data.size());
    const auto& bytes = raw[f.name];
    REQUIRE(t->offset + t->bytes <= bytes.size());
    CHECK(std::memcmp(bytes.data() + t->offset, gt.data.data(), gt.data.size()) == 0);
  }

  // meta.gguf: the same metadata, no tensors; the tokenizer loads from it.
  const auto meta = model_file::gguf_file::open(dir / "meta.gguf");
  CHECK(meta.tensors().empty());
  REQUIRE(meta.metadata().size() == g.metadata().size());
  for (std::size_t i = 0; i < meta.metadata().size(); ++i) {
    CHECK(meta.metadata()[i].key == g.metadata()[i].key);
    CHECK(meta.metadata()[i].value == g.metadata()[i].value);
  }
  const auto tok_meta = model_file::tokenizer(model_file::load_gguf_vocabulary(meta));
  const auto tok_src = model_file::tokenizer(model_file::load_gguf_vocabulary(g));
  CHECK(tok_meta.size() == tok_src.size());
  CHECK(tok_meta.encode("Once upon a time") == tok_src.encode("Once upon a time"));
}

stream::decompose_outcome run(const fs::path& gguf, const fs::path& out, stream::decompose_options o = {}) {
  return runtime::decompose_gguf(gguf, out, o);
}

}  // namespace

TEST_CASE("decompose stories260K and tiny-qwen: tensors byte-identical, checksums are XXH3 of the files") {
  REQUIRE_MESSAGE(fs::exists(test::stories260k_gguf()), "missing " << test::stories260k_gguf().string());
  REQUIRE_MESSAGE(fs::exists(tiny_qwen()), "missing " << tiny_qwen().string());
  test::temp_dir tmp("decompose");
  for (const auto& src : {test::stories260k_gguf(), tiny_qwen()}) {
    CAPTURE(src.string());
    const auto out = tmp / src.stem().string();
    std::vector<std::string> progress;
    stream::decompose_options o;
    o.progress = [&](const stream::decompose_progress& p) { progress.emplace_back(p.file); };
    CHECK(run(src, out, o) == stream::decompose_outcome::created);
    CHECK(progress.back() == "manifest.json");
    CHECK(siblings_with_prefix(out).empty());
    check_against_gguf(src, out, false);
    // The directory belongs to its source only.
    const auto m = stream::manifest::load(out);
    CHECK_NOTHROW(m.check_source(stream::describe_source(src)));
  }
  // A directory from another model (version) is refused by the manifest check.
  const auto m = stream::manifest::load(tmp / "stories260K");
  const auto err = error_of([&] { m.check_source(stream::describe_source(tiny_qwen())); });
  CHECK(err.find("another model version") != std::string::npos);
  CHECK(err.find("stories260K.gguf") != std::string::npos);
}

TEST_CASE("decompose a Llama 3.1-style GGUF: the RoPE scaling kept in the manifest, the model answers as from the GGUF") {
  const octo::test::temp_dir tmp("decompose-llama3");
  const auto gguf = tmp / "llama3.gguf", out = tmp / "llama3.octo";
  model_file::convert_hf_to_gguf(octo::test::tinystories_scaled(tmp / "hf"), gguf, {});
  run(gguf, out);
  check_against_gguf(gguf, out, false);
  const auto m = stream::manifest::load(out, stream::verify_level::sizes);
  CHECK(runtime::config_from_manifest(m).rope_ramp.on());
  // The decomposition streamed layer by layer answers as the GGUF does (the reference VM, both).
  runtime::engine_options eo;
  eo.vm = runtime::backend::reference;
  eo.ctx = 32;
  runtime::engine a(gguf, eo), b(out, eo);
  const std::vector<std::int32_t> prompt{1, 50, 700, 31, 9, 1200, 44};
  CHECK(a.prefill(prompt) == b.prefill(prompt));
  // A manifest whose rope_ramp is not three numbers, or whose low scale is out of range, is refused.
  const auto manifest = octo::test::slurp(out / "manifest.json");
  for (const char* bad : {"[0.125, 1.0]", "[2.0, 1.0, 0.0]", "\"x\""}) {
    auto j = nlohmann::json::parse(manifest);
    j["config"]["rope_ramp"] = nlohmann::json::parse(bad);
    std::ofstream(out / "manifest.json") << j.dump();
    CHECK(error_of([&] { stream::manifest::load(out, stream::verify_level::sizes); }).find("rope_ramp") != std::string::npos);
  }
}

TEST_CASE("decompose with zstd: layer files compressed, decoded bytes equal the GGUF's") {
  test::temp_dir tmp("decompose-zstd");
  const auto out = tmp / "tq";
  stream::decompose_options o;
  o.zstd = true;
  CHECK(run(tiny_qwen(), out, o) == stream::decompose_outcome::created);
  check_against_gguf(tiny_qwen(), out, true);
  const auto m = stream::manifest::load(out);
  // A zstd file is a zstd frame (magic 28 b5 2f fd), not the raw bytes.
  const auto l0 = slurp(out / "layer_000.bin");
  REQUIRE(l0.size() >= 4);
  CHECK(std::to_integer<int>(l0[0]) == 0x28);
  CHECK(std::to_integer<int>(l0[3]) == 0xfd);
  CHECK(m.layer_file(0).stored_bytes < m.layer_file(0).raw_bytes);  // the 4096-padding alone compresses
}

TEST_CASE("decompose is idempotent: same source kept, corrupt or different options rebuilt and swapped in") {
  test::temp_dir tmp("decompose-again");
  const auto out = tmp / "s";
  const auto src = test::stories260k_gguf();
  REQUIRE(run(src, out) == stream::decompose_outcome::created);
  struct stat before {};
  REQUIRE(::stat((out / "manifest.json").c_str(), &before) == 0);
  CHECK(run(src, out) == stream::decompose_outcome::kept);
  struct stat after {};
  REQUIRE(::stat((out / "manifest.json").c_str(), &after) == 0);
  CHECK(before.st_ino == after.st_ino);  // untouched

  // A corrupted layer is noticed (checksums are verified before keeping) and the directory rebuilt.
  {
    std::fstream f(out / "layer_002.bin", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(10);
    f.put('\x5a');
  }
  CHECK(run(src, out) == stream::decompose_outcome::replaced);
  CHECK_NOTHROW(stream::manifest::load(out, stream::verify_level::checksums));
  // Other options: rebuilt.
  stream::decompose_options z;
  z.zstd = true;
  CHECK(run(src, out, z) == stream::decompose_outcome::replaced);
  CHECK(stream::manifest::load(out).layer_file(0).comp == stream::compression::zstd);
  CHECK(siblings_with_prefix(out).empty());
  // Another model onto a decomposed directory: replaced by the new model's files.
  CHECK(run(tiny_qwen(), out) == stream::decompose_outcome::replaced);
  CHECK(stream::manifest::load(out).source().name == "tiny-qwen.gguf");
  // A directory that is not a decomposition is never deleted.
  const auto other = tmp / "mine";
  fs::create_directories(other);
  std::ofstream(other / "notes.txt") << "keep me";
  const auto err = error_of([&] { run(src, other); });
  CHECK(err.find("not a decomposed model directory") != std::string::npos);
  CHECK(fs::exists(other / "notes.txt"));
}

TEST_CASE("decompose never deletes a folder that only looks like a decomposition") {
  test::temp_dir tmp("decompose-not-ours");
  const auto src = test::stories260k_gguf();
  SUBCASE("a user's project holding some manifest.json") {
    const auto dir = tmp / "project";
    fs::create_directories(dir / "src");
    std::ofstream(dir / "manifest.json") << R"({"name": "my app", "version": 1})";
    std::ofstream(dir / "src" / "main.c") << "int main() {}";
    const auto err = error_of([&] { run(src, dir); });
    CHECK(err.find("not an octo manifest") != std::string::npos);
    CHECK(err.find("refusing to replace it") != std::string::npos);
    CHECK(fs::exists(dir / "src" / "main.c"));
    CHECK(fs::exists(dir / "manifest.json"));
    CHECK(siblings_with_prefix(dir).empty());
  }
  SUBCASE("a manifest.json that is not JSON") {
    const auto dir = tmp / "p2";
    fs::create_directories(dir);
    std::ofstream(dir / "manifest.json") << "not json";
    CHECK(error_of([&] { run(src, dir); }).find("not JSON") != std::string::npos);
    CHECK(fs::exists(dir / "manifest.json"));
  }
  SUBCASE("an octo decomposition the user added a file to") {
    const auto dir = tmp / "d";
    REQUIRE(run(src, dir) == stream::decompose_outcome::created);
    std::ofstream(dir / "notes.txt") << "mine";
    stream::decompose_options z;
    z.zstd = true;  // another layout: would be rebuilt and swapped in
    const auto err = error_of([&] { run(src, dir, z); });
    CHECK(err.find("'notes.txt'") != std::string::npos);
    CHECK(fs::exists(dir / "notes.txt"));
    CHECK(stream::manifest::load(dir).layer_file(0).comp == stream::compression::none);  // untouched
  }
  SUBCASE("a symbolic link as OUTDIR") {
    const auto target = tmp / "real";
    fs::create_directories(target);
    std::ofstream(target / "keep.txt") << "x";
    fs::create_directory_symlink(target, tmp / "link");
    CHECK(error_of([&] { run(src, tmp / "link"); }).find("is not a directory") != std::string::npos);
    CHECK(fs::exists(target / "keep.txt"));
  }
}

TEST_CASE("an interrupted decompose leaves nothing that loads; its temporary directory is cleaned up") {
  test::temp_dir tmp("decompose-interrupt");
  const auto out = tmp / "s";
  const auto src = test::stories260k_gguf();

  SUBCASE("a failing writer: no OUTDIR, no temporary left") {
    stream::decompose_options o;
    std::vector<std::string> seen;
    o.after_file = [&](std::string_view f) {
      seen.emplace_back(f);
      CHECK(!fs::exists(out));  // nothing at OUTDIR before completion
      if (f == "layer_001.bin") throw octo::error("disk full (simulated)");
    };
    CHECK(error_of([&] { run(src, out, o); }) == "disk full (simulated)");
    CHECK(seen.size() >= 3);
    CHECK(!fs::exists(out));
    CHECK(siblings_with_prefix(out).empty());
    CHECK(error_of([&] { stream::manifest::load(out); }).find("not a directory") != std::string::npos);
  }

  SUBCASE("a killed process: the temporary stays until the next run removes it") {
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      stream::decompose_options o;
      o.after_file = [](std::string_view f) {
        if (f == "layer_002.bin") ::_exit(7);  // dies mid-run, like a kill
      };
      try {
        run(src, out, o);
      } catch (...) {
      }
      ::_exit(0);
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 7);
    CHECK(!fs::exists(out));
    const auto left = siblings_with_prefix(out);
    REQUIRE(left.size() == 1);
    CHECK(left[0].filename().string().find(".tmp-" + std::to_string(child) + "-") != std::string::npos);
    CHECK(!fs::exists(left[0] / "manifest.json"));  // the unfinished directory cannot load
    CHECK_THROWS_AS(stream::manifest::load(left[0]), octo::error);
    CHECK(run(src, out) == stream::decompose_outcome::created);
    CHECK(siblings_with_prefix(out).empty());
    CHECK_NOTHROW(stream::manifest::load(out, stream::verify_level::checksums));
  }

  SUBCASE("an interrupted rebuild keeps the previous complete directory") {
    REQUIRE(run(src, out) == stream::decompose_outcome::created);
    stream::decompose_options o;
    o.zstd = true;
    o.after_file = [](std::string_view f) {
      if (f == "layer_000.bin") throw octo::error("interrupted");
    };
    CHECK_THROWS_AS(run(src, out, o), octo::error);
    const auto m = stream::manifest::load(out, stream::verify_level::checksums);
    CHECK(m.layer_file(0).comp == stream::compression::none);
    CHECK(siblings_with_prefix(out).empty());
  }
}

TEST_CASE("decompose refuses bad options with one line") {
  test::temp_dir tmp("decompose-options");
  stream::decompose_options o;
  o.alignment = 3000;
  CHECK(error_of([&] { run(tiny_qwen(), tmp / "x", o); }).find("alignment 3000 is not a power of two") != std::string::npos);
  CHECK(error_of([&] { run(tmp / "nope.gguf", tmp / "x"); }).find("nope.gguf") != std::string::npos);
  CHECK(!fs::exists(tmp / "x"));
}

TEST_CASE("decompose --align: tensor offsets follow it, files stay 4096-multiples") {
  test::temp_dir tmp("decompose-align");
  stream::decompose_options o;
  o.alignment = 256;
  REQUIRE(run(test::stories260k_gguf(), tmp / "a", o) == stream::decompose_outcome::created);
  const auto m = stream::manifest::load(tmp / "a", stream::verify_level::checksums);
  CHECK(m.tensor_alignment() == 256);
  bool some_unaligned_to_4096 = false;
  for (const auto& t : m.tensors()) {
    CHECK(t.offset % 256 == 0);
    some_unaligned_to_4096 |= t.offset % 4096 != 0;
  }
  CHECK(some_unaligned_to_4096);
  check_against_gguf(test::stories260k_gguf(), tmp / "a", false);
}
