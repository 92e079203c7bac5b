// The streaming engine on the reference backend (the VM's streaming API emulated on the CPU reference
// VM): tiny-qwen's prompt logits, greedy tokens and a decode step's logits are bit-identical to the
// resident engine (octo::runtime::engine, one whole program) with all, all-but-one, one and no layers
// resident, ring depth 1 and 2, with and without the RAM tier, from the GGUF and a decomposed directory;
// the pipeline's counters; budget errors; a layer file corrupted or cut short mid-run.
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>
#include <string>
#include <vector>

#include <octo/error.hpp>
#include <octo/runtime/decomposed.hpp>
#include <octo/runtime/engine.hpp>

namespace fs = std::filesystem;
using namespace octo;

namespace {

const fs::path tiny_qwen = fs::path(OCTO_SOURCE_DIR) / "models" / "tiny-qwen" / "tiny-qwen.gguf";
const std::vector<std::int32_t> prompt = {1, 57, 300, 12, 631, 5, 99, 42, 7, 250};  // 10 ids: chunks 4, 4, 2+overlap
constexpr std::int64_t ctx = 64, chunk = 4, n_greedy = 5;

struct outcome {
  std::vector<float> prompt_logits, step_logits;
  std::vector<std::int32_t> tokens;
};

template <class Engine>
outcome run(Engine& e) {
  outcome o;
  runtime::sampling_params greedy;
  o.tokens = e.generate(prompt, n_greedy, greedy, {}, &o.prompt_logits);
  o.step_logits = e.decode(o.tokens.back());  // a decode step reading the logits back
  return o;
}

const outcome& resident() {
  static const outcome r = [] {
    REQUIRE_MESSAGE(fs::exists(tiny_qwen), "missing " << tiny_qwen.string());
    runtime::engine_options o;
    o.vm = runtime::backend::reference;
    o.ctx = ctx;
    o.prefill_chunk = chunk;
    runtime::engine e(tiny_qwen, o);
    return run(e);
  }();
  return r;
}

runtime::engine_options options(std::int64_t resident_layers, std::uint32_t ring, std::uint64_t ram = 0) {
  runtime::engine_options o;
  o.vm = runtime::backend::reference;
  o.ctx = ctx;
  o.prefill_chunk = chunk;
  o.resident_layers = resident_layers;
  o.ring_depth = ring;
  o.ram_budget = ram;
  return o;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

void check_identical(const runtime::engine_options& o) {
  const auto& want = resident();
  runtime::engine e(tiny_qwen, o);
  const auto got = run(e);
  REQUIRE(want.prompt_logits.size() == 632);
  CHECK(same_bits(got.prompt_logits, want.prompt_logits));
  CHECK(got.tokens == want.tokens);
  CHECK(same_bits(got.step_logits, want.step_logits));
  // passes: 3 prefill windows + (n_greedy - 1) greedy steps + 1 decode step; each streams every streamed layer
  const auto& s = e.stats();
  CHECK(s.passes == 3 + (n_greedy - 1) + 1);
  const auto streamed = std::uint64_t(e.plan().streamed_layers);
  CHECK(s.layer_uploads >= s.passes * streamed);            // the next pass's first layers may be prefetched
  CHECK(s.layer_uploads <= (s.passes + 1) * streamed);
}

}  // namespace

TEST_CASE("streaming engine: all layers resident") {
  runtime::engine e(tiny_qwen, options(6, 2));
  CHECK(e.plan().all_resident());
  CHECK(e.streamed_bytes_per_token() == 0);
  check_identical(options(6, 2));
}

TEST_CASE("streaming engine: all but one resident, ring 1 and 2") {
  check_identical(options(5, 1));
  check_identical(options(5, 2));
}

TEST_CASE("streaming engine: one resident, ring 1 and 2") {
  check_identical(options(1, 1));
  check_identical(options(1, 2));
}

TEST_CASE("streaming engine: nothing resident, ring 1, 2 and 3") {
  check_identical(options(0, 1));
  check_identical(options(0, 2));
  check_identical(options(0, 3));
}

TEST_CASE("streaming engine: the RAM tier") {
  // every streamed layer fits: one read per layer, then only hits
  {
    runtime::engine probe(tiny_qwen, options(0, 2));
    const std::uint64_t slot = probe.plan().slot_bytes;
    auto o = options(0, 2, 6 * slot);
    check_identical(o);
    runtime::engine e(tiny_qwen, o);
    (void)run(e);
    const auto& s = e.stats();
    CHECK(s.ram_misses == 6);
    CHECK(s.ram_hits + s.ram_misses == s.layer_uploads);
    // two slots of the tier: a fixed two layers hit on every pass, the other four are read each time
    o = options(0, 2, 2 * slot);
    check_identical(o);
    runtime::engine f(tiny_qwen, o);
    (void)run(f);
    CHECK(f.stats().ram_hits >= 2 * (f.stats().passes - 1));
    CHECK(f.stats().bytes_from_source > 0);
  }
}

TEST_CASE("streaming engine: the plan from a VRAM budget") {
  runtime::engine all(tiny_qwen, options(6, 2));  // the chain, every layer resident
  const auto& p = all.plan();
  {
    // No budget, or one the whole model fits: one program per pass, more memory than the chain's.
    runtime::engine whole(tiny_qwen, options(-1, 2));
    CHECK(whole.plan().all_resident());
    CHECK(whole.plan().total_bytes > p.total_bytes);
    auto w = options(-1, 2);
    w.vram_budget = whole.plan().total_bytes;
    runtime::engine fits(tiny_qwen, w);
    CHECK(fits.plan().total_bytes == whole.plan().total_bytes);
    // Between the two: every layer resident, as the chain.
    w.vram_budget = whole.plan().total_bytes - 1;
    runtime::engine chain(tiny_qwen, w);
    CHECK(chain.plan().all_resident());
    CHECK(chain.plan().total_bytes == p.total_bytes);
    check_identical(w);
  }
  // A budget one byte short of everything resident: layers stream, results stay identical.
  auto o = options(-1, 2);
  o.vram_budget = p.total_bytes - 1;
  runtime::engine e(tiny_qwen, o);
  CHECK(e.plan().streamed_layers > 0);
  CHECK(e.plan().total_bytes <= o.vram_budget);
  // tiny-qwen's layers have one size: k resident + min(2, 6-k) slots must be under 6 layers: k = 3 (0, 5, 1)
  CHECK(e.plan().resident_layers == 3);
  CHECK(e.plan().resident[0]);
  CHECK(e.plan().resident[5]);
  CHECK_FALSE(e.plan().resident[3]);
  check_identical(o);
  // Below the minimum: one clear error naming the sizes.
  o.vram_budget = p.fixed_bytes;
  try {
    runtime::engine bad(tiny_qwen, o);
    FAIL("a budget below the minimum was accepted");
  } catch (const octo::error& err) {
    CHECK(std::string(err.what()).find("is below the minimum") != std::string::npos);
  }
}

TEST_CASE("streaming engine: bad input") {
  CHECK_THROWS_WITH_AS(runtime::engine("/nonexistent/model.gguf", options(0, 2)),
                       doctest::Contains("no such model file"), octo::error);
  CHECK_THROWS_WITH_AS(runtime::engine(tiny_qwen, options(0, 0)), doctest::Contains("ring depth"), octo::error);
  runtime::engine e(tiny_qwen, options(0, 2));
  CHECK_THROWS_WITH_AS(e.decode(632), doctest::Contains("outside the vocabulary"), octo::error);
  const std::vector<std::int32_t> empty;
  CHECK_THROWS_WITH_AS(e.prefill(empty), doctest::Contains("empty"), octo::error);
}

TEST_CASE("streaming engine: a layer file that goes bad mid-run is an error naming it, not a hang") {
  const fs::path dir = fs::temp_directory_path() / ("octo_stream_bad_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  runtime::decompose_gguf(tiny_qwen, dir);
  {
    // identical from the directory first (the same bytes, read through the layer files)
    runtime::engine e(dir, options(0, 2));
    const auto got = run(e);
    CHECK(got.tokens == resident().tokens);
    CHECK(same_bits(got.prompt_logits, resident().prompt_logits));
  }
  const auto flip_byte = [&](const char* name) {
    std::fstream f(dir / name, std::ios::in | std::ios::out | std::ios::binary);
    REQUIRE(f);
    f.seekg(100);
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ 0x5a);
    f.seekp(100);
    f.write(&c, 1);
  };
  {
    runtime::engine e(dir, options(0, 2));  // loads embed / head only: layers stream
    flip_byte("layer_002.bin");                        // corrupted after load, before its first read
    CHECK_THROWS_WITH_AS(e.prefill(prompt), doctest::Contains("layer_002.bin"), octo::error);
    CHECK_THROWS_WITH_AS(e.decode(1), doctest::Contains("failed earlier"), octo::error);
  }
  flip_byte("layer_002.bin");  // repaired
  {
    runtime::engine e(dir, options(0, 2));
    fs::resize_file(dir / "layer_004.bin", 4096);  // short
    CHECK_THROWS_WITH_AS(e.prefill(prompt), doctest::Contains("layer_004.bin"), octo::error);
  }
  fs::remove_all(dir);
}
