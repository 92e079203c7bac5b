// The streaming engine on the reference backend (the VM's streaming API emulated on the CPU reference
// VM): tiny-qwen's prompt logits, greedy tokens and a decode step's logits are bit-identical to the
// resident engine (octo::runtime::engine, one whole program) with all, all-but-one, one and no layers
// resident, ring depth 1 and 2, with and without the RAM tier, from the GGUF and a decomposed directory;
// the pipeline's counters; budget errors; a layer file corrupted or cut short mid-run.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <optional>
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

namespace {

/// Hits expected over the first `fetched` streamed items (layer i % 6 of the cycle, every layer streamed)
/// when the tier holds `kept` from the first pass on: every later visit of them hits.
std::uint64_t expected_hits(std::uint64_t fetched, const std::vector<std::int64_t>& kept) {
  std::uint64_t n = 0;
  for (std::uint64_t i = 6; i < fetched; ++i)
    if (std::find(kept.begin(), kept.end(), std::int64_t(i % 6)) != kept.end()) ++n;
  return n;
}

/// Prefill, then greedy steps one at a time, calling `between(step)` before each decode step.
std::vector<std::int32_t> greedy_steps(runtime::engine& e, const std::function<void(int)>& between) {
  std::vector<std::int32_t> out;
  const auto logits = e.prefill(prompt);
  out.push_back(std::int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin()));
  for (int step = 1; step < n_greedy; ++step) {
    between(step);
    out.push_back(e.decode_greedy(out.back()));
  }
  return out;
}

}  // namespace

TEST_CASE("streaming engine: a RAM tier smaller than the streamed layers keeps the first it admits") {
  runtime::engine probe(tiny_qwen, options(0, 2));
  const std::uint64_t slot = probe.plan().slot_bytes;
  for (const std::uint32_t ring : {1u, 2u}) {
    auto o = options(0, ring, 3 * slot + slot / 2);  // three whole slots
    check_identical(o);
    runtime::engine e(tiny_qwen, o);
    (void)run(e);
    const auto tier = e.tier_state();
    CHECK_FALSE(tier.automatic);
    CHECK(tier.slots == 3);
    CHECK(tier.bytes == 3 * slot);
    CHECK(tier.bytes <= tier.budget);
    // Layers 0-2 were admitted into free slots; a newcomer never scores above a layer hit every pass.
    auto layers = tier.layers;
    std::sort(layers.begin(), layers.end());
    CHECK(layers == std::vector<std::int64_t>{0, 1, 2});
    const auto& s = e.stats();
    const std::uint64_t fetched = s.ram_hits + s.ram_misses;
    CHECK(fetched >= s.passes * 6);
    CHECK(s.ram_hits == expected_hits(fetched, {0, 1, 2}));
    CHECK(s.ram_evictions == 0);
  }
}

TEST_CASE("streaming engine: the RAM tier shrinks and grows mid-run, tokens unchanged") {
  runtime::engine probe(tiny_qwen, options(0, 2));
  const std::uint64_t slot = probe.plan().slot_bytes;
  runtime::engine e(tiny_qwen, options(0, 2, 6 * slot));
  const std::vector<std::uint64_t> budgets = {6 * slot, 4 * slot + 1, 2 * slot, slot - 1, 0, 5 * slot, 6 * slot};
  std::vector<std::uint64_t> slots_seen;
  const auto tokens = greedy_steps(e, [&](int step) {
    // every pass so far stayed within the budget it ran under
    CHECK(e.tier_state().bytes <= e.tier_state().budget);
    e.set_ram_budget(budgets[std::size_t(step) % budgets.size()]);
    const auto t = e.tier_state();
    CHECK(t.budget == budgets[std::size_t(step) % budgets.size()]);
    CHECK(t.bytes <= t.budget);
    CHECK(t.slots == std::min<std::uint64_t>(t.budget / slot, 6));
    CHECK(t.layers.size() <= t.slots);
    slots_seen.push_back(t.slots);
  });
  CHECK(tokens == std::vector<std::int32_t>(resident().tokens.begin(), resident().tokens.begin() + n_greedy));
  CHECK(slots_seen == std::vector<std::uint64_t>{4, 2, 0, 0});
  CHECK(e.stats().ram_resizes == 3);  // 6 -> 4 -> 2 -> 0 (0 -> 0 changes nothing)
  CHECK(e.stats().ram_evictions >= 6);  // every layer was resident after the prefill

  // Longer: shrink to 2 of 6, then grow back to all, checking the hits of each phase.
  runtime::engine f(tiny_qwen, options(0, 2, 6 * slot));
  const auto more = greedy_steps(f, [&](int step) {
    if (step == 1) {
      f.set_ram_budget(2 * slot);
      CHECK(f.tier_state().slots == 2);
      CHECK(f.tier_state().layers.size() == 2);  // the two most vital of the six kept
      f.reset_stats();
    }
    if (step == 3) {
      // two decode steps with two layers resident: 2 hits, 4 misses a pass
      CHECK(f.stats().ram_hits + f.stats().ram_misses >= 12);
      CHECK(f.stats().ram_hits >= 4);
      CHECK(f.stats().ram_misses >= 8);
      f.set_ram_budget(6 * slot);
      CHECK(f.tier_state().slots == 6);
      f.reset_stats();
    }
  });
  CHECK(more == tokens);
  // after growing: the first pass fills the four new slots, then every lookup hits
  const auto& s = f.stats();
  CHECK(s.ram_misses == 4);
  CHECK(s.ram_evictions == 0);
  const auto after = f.decode(more.back());
  CHECK(f.stats().ram_misses == 4);
  CHECK(after.size() == 632);
}

TEST_CASE("streaming engine: the automatic RAM tier follows the memory available") {
  CHECK(runtime::auto_ram_budget(0, 100) == 0);
  CHECK(runtime::auto_ram_budget(std::uint64_t(1) << 30, 100) == 0);
  CHECK(runtime::auto_ram_budget((std::uint64_t(3) << 30), std::uint64_t(10) << 30) == std::uint64_t(1) << 30);
  CHECK(runtime::auto_ram_budget(std::uint64_t(100) << 30, std::uint64_t(10) << 30) == std::uint64_t(10) << 30);

  runtime::engine probe(tiny_qwen, options(0, 2));
  const std::uint64_t slot = probe.plan().slot_bytes;
  const std::uint64_t gib = std::uint64_t(1) << 30;
  // The machine's memory beyond what others use; what the engine pins is no longer available.
  std::optional<std::uint64_t> available = gib + 2 * 3 * slot;  // half of it beyond 1 GiB: three slots
  const runtime::engine* self = nullptr;
  auto o = options(0, 2);
  o.ram_budget.reset();  // automatic
  o.host_memory_available = [&]() -> std::optional<std::uint64_t> {
    if (!available) return std::nullopt;
    return *available - (self ? self->tier_state().bytes : 0);
  };
  o.memory_check_ms = 0;  // re-read before every pass
  std::vector<std::string> lines;
  o.progress = [&](std::string_view l) { lines.emplace_back(l); };
  runtime::engine e(tiny_qwen, o);
  self = &e;
  auto t = e.tier_state();
  CHECK(t.automatic);
  CHECK(t.slots == 3);
  CHECK(t.budget == 3 * slot);
  CHECK(t.wanted == 6 * slot);
  const auto said =
      std::find_if(lines.begin(), lines.end(), [](const std::string& l) { return l.rfind("RAM tier: 3 of 6", 0) == 0; });
  REQUIRE(said != lines.end());
  CHECK(said->find("automatic") != std::string::npos);

  const auto tokens = greedy_steps(e, [&](int step) {
    if (step == 1) available = gib + 3 * slot;  // pressure: 3 slots (the tier's) beyond 1 GiB, half: 1
    if (step == 2) {
      CHECK(e.tier_state().slots == 1);
      available.reset();  // unknown: the tier stays as it is
    }
    if (step == 3) {
      CHECK(e.tier_state().slots == 1);
      available = std::uint64_t(64) << 30;  // plenty: every streamed layer, no more
    }
  });
  CHECK(tokens == std::vector<std::int32_t>(resident().tokens.begin(), resident().tokens.begin() + n_greedy));
  t = e.tier_state();
  CHECK(t.slots == 6);
  CHECK(t.budget == 6 * slot);
  CHECK(e.stats().ram_resizes == 2);

  // Explicit 0: no tier whatever is available, no lookups counted.
  o.ram_budget = 0;
  runtime::engine off(tiny_qwen, o);
  (void)run(off);
  CHECK(off.tier_state().slots == 0);
  CHECK(off.stats().ram_hits + off.stats().ram_misses == 0);
  // set_ram_budget back to automatic
  self = &off;
  off.set_ram_budget(std::nullopt);
  CHECK(off.tier_state().automatic);
  CHECK(off.tier_state().slots == 6);

  // MemAvailable from a meminfo file
  const fs::path f = fs::temp_directory_path() / ("octo_meminfo_" + std::to_string(::getpid()));
  std::ofstream(f) << "MemTotal:       131072000 kB\nMemFree:         1000 kB\nMemAvailable:   123456 kB\n";
  CHECK(runtime::read_mem_available(f) == std::uint64_t(123456) * 1024);
  std::ofstream(f) << "MemTotal:       131072000 kB\n";
  CHECK_FALSE(runtime::read_mem_available(f));
  std::ofstream(f) << "MemAvailable: lots\n";
  CHECK_FALSE(runtime::read_mem_available(f));
  fs::remove(f);
  CHECK_FALSE(runtime::read_mem_available(f));
  CHECK(runtime::read_mem_available().value_or(0) > 0);  // this machine's
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
