// The residency planner against plans worked out by hand: all resident, the first-and-last order,
// non-uniform layer sizes (the slot follows the largest streamed layer), slot alignment, ring depth, the
// minimum-does-not-fit error; size parsing and formatting.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <octo/error.hpp>
#include <octo/runtime/residency_plan.hpp>

using namespace octo::runtime;

namespace {

// 6 layers of 100 bytes; embed 50 + head 30 + KV 60 + activations 10 = 150 fixed; no alignment.
residency_inputs uniform(std::uint64_t budget, std::uint32_t ring = 2) {
  residency_inputs in;
  in.layer_bytes = {100, 100, 100, 100, 100, 100};
  in.embed_bytes = 50;
  in.head_bytes = 30;
  in.kv_bytes = 60;
  in.activation_bytes = 10;
  in.ring_depth = ring;
  in.slot_alignment = 1;
  in.vram_budget = budget;
  return in;
}

std::vector<bool> mask(std::initializer_list<int> bits) {
  std::vector<bool> r;
  for (int b : bits) r.push_back(b != 0);
  return r;
}

std::string error_of(const residency_inputs& in) {
  try {
    (void)plan_residency(in);
  } catch (const octo::error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("residency plan: everything fits, no ring") {
  const auto p = plan_residency(uniform(750));  // 150 + 6 * 100
  CHECK(p.all_resident());
  CHECK(p.resident == mask({1, 1, 1, 1, 1, 1}));
  CHECK(p.resident_layers == 6);
  CHECK(p.ring_depth == 0);
  CHECK(p.slot_bytes == 0);
  CHECK(p.fixed_bytes == 150);
  CHECK(p.resident_bytes == 600);
  CHECK(p.total_bytes == 750);
  CHECK(p.streamed_bytes_per_pass == 0);
}

TEST_CASE("residency plan: first and last layers first") {
  // 749: 5 resident + 1 slot = 750 and 4 resident + 2 slots = 750 do not fit; 3 + 2 slots = 650 does:
  // the order is 0, 5, 1, 4, 2, 3, so layers 0, 1 and 5 stay.
  auto p = plan_residency(uniform(749));
  CHECK(p.resident == mask({1, 1, 0, 0, 0, 1}));
  CHECK(p.resident_layers == 3);
  CHECK(p.streamed_layers == 3);
  CHECK(p.ring_depth == 2);
  CHECK(p.slot_bytes == 100);
  CHECK(p.ring_bytes == 200);
  CHECK(p.resident_bytes == 300);
  CHECK(p.total_bytes == 650);
  CHECK(p.streamed_bytes_per_pass == 300);
  // 549: 150 + 100 * 2 (ring) + 100 * k <= 549 -> k = 1: only layer 0
  p = plan_residency(uniform(549));
  CHECK(p.resident == mask({1, 0, 0, 0, 0, 0}));
  CHECK(p.total_bytes == 450);
  // 350 = the minimum: nothing resident
  p = plan_residency(uniform(350));
  CHECK(p.resident == mask({0, 0, 0, 0, 0, 0}));
  CHECK(p.total_bytes == 350);
  CHECK(p.streamed_bytes_per_pass == 600);
}

TEST_CASE("residency plan: ring depth") {
  // depth 1: 150 + 100 + 100k <= 649 -> k = 3 (0, 5, 1) ... and with 650, k = 4 (0, 5, 1, 4)
  auto p = plan_residency(uniform(649, 1));
  CHECK(p.resident == mask({1, 1, 0, 0, 0, 1}));
  CHECK(p.ring_depth == 1);
  CHECK(p.total_bytes == 550);
  p = plan_residency(uniform(650, 1));
  CHECK(p.resident == mask({1, 1, 0, 0, 1, 1}));
  CHECK(p.total_bytes == 650);
  // depth 4 with only 2 layers streamed allocates 2 slots: 150 + 400 + 200 = 750 ... but 750 holds all
  p = plan_residency(uniform(749, 4));
  // k = 5: 150 + 500 + 1 * 100 = 750 > 749; k = 4: 150 + 400 + 2 * 100 = 750; k = 3: 150 + 300 + 3 * 100 = 750;
  // k = 2: 150 + 200 + 4 * 100 = 750; k = 1: 150 + 100 + 4 * 100 = 650 -> layer 0 only, 4 slots
  CHECK(p.resident == mask({1, 0, 0, 0, 0, 0}));
  CHECK(p.ring_depth == 4);
  CHECK(p.total_bytes == 650);
}

TEST_CASE("residency plan: the slot follows the largest streamed layer") {
  residency_inputs in = uniform(0);
  in.layer_bytes = {100, 100, 300, 100, 100, 100};  // order 0, 5, 1, 4, 2, 3
  // all: 950. k=5 (3 streams, 100): 950. k=4 (2,3 stream, slot 300): 1150. k=3: 1050. k=2: 950.
  // k=1: 150 + 100 + 2 * 300 = 850.
  in.vram_budget = 949;
  auto p = plan_residency(in);
  CHECK(p.resident == mask({1, 0, 0, 0, 0, 0}));
  CHECK(p.slot_bytes == 300);
  CHECK(p.total_bytes == 850);
  in.vram_budget = 950;
  p = plan_residency(in);
  CHECK(p.all_resident());
  CHECK(p.total_bytes == 950);
  // 1100 also holds everything; 849 holds nothing beyond the minimum of 150 + 2 * 300 = 750
  in.vram_budget = 849;
  p = plan_residency(in);
  CHECK(p.resident_layers == 0);
  CHECK(p.total_bytes == 750);
}

TEST_CASE("residency plan: slots are aligned") {
  residency_inputs in = uniform(0);
  in.layer_bytes = {5000, 5000, 5000, 5000};
  in.slot_alignment = 4096;
  in.embed_bytes = in.head_bytes = in.kv_bytes = in.activation_bytes = 0;
  // all: 20000. k=3: 15000 + 1 * 8192; k=2: 10000 + 2 * 8192; k=1: 5000 + 2 * 8192 = 21384; k=0: 16384.
  in.vram_budget = 19999;
  auto p = plan_residency(in);
  CHECK(p.resident == mask({0, 0, 0, 0}));
  CHECK(p.slot_bytes == 8192);
  CHECK(p.ring_depth == 2);
  CHECK(p.total_bytes == 16384);
  in.vram_budget = 16383;
  CHECK(error_of(in).find("below the minimum of 16 KiB") != std::string::npos);
}

TEST_CASE("residency plan: the minimum does not fit") {
  const std::string e = error_of(uniform(349));
  CHECK(e.find("VRAM budget of 349 B is below the minimum of 350 B") != std::string::npos);
  CHECK(e.find("KV cache 60 B") != std::string::npos);
  CHECK(e.find("ring 2 x 100 B") != std::string::npos);
  residency_inputs in = uniform(1000);
  in.ring_depth = 0;
  CHECK(error_of(in).find("ring depth") != std::string::npos);
  in = uniform(1000);
  in.layer_bytes.clear();
  CHECK(error_of(in).find("no layers") != std::string::npos);
  in = uniform(1000);
  in.layer_bytes[3] = 0;
  CHECK(error_of(in).find("layer 3") != std::string::npos);
}

TEST_CASE("residency plan: describe") {
  const auto p = plan_residency(uniform(749));
  const std::string d = p.describe();
  CHECK(d.find("3 of 6 layers resident, 3 streamed; 650 B of 749 B budget") != std::string::npos);
  CHECK(d.find("resident layers: 0-1, 5 (300 B)") != std::string::npos);
  CHECK(d.find("streamed layers: 2-4 (300 B per token)") != std::string::npos);
  CHECK(d.find("ring: 2 x 100 B = 200 B") != std::string::npos);
}

TEST_CASE("sizes: parse and format") {
  CHECK(parse_bytes("4GiB") == 4ull << 30);
  CHECK(parse_bytes("4G") == 4ull << 30);
  CHECK(parse_bytes("512MiB") == 512ull << 20);
  CHECK(parse_bytes("512mb") == 512ull << 20);
  CHECK(parse_bytes("1.5GiB") == 3ull << 29);
  CHECK(parse_bytes("4096") == 4096);
  CHECK(parse_bytes("10 KiB") == 10240);
  CHECK(parse_bytes("1T") == 1ull << 40);
  for (const char* bad : {"", "GiB", "abc", "4XB", "1.2.3", "4 GiBs", "-5", "."})
    CHECK_THROWS_WITH_AS(parse_bytes(bad, "--vram-budget"), doctest::Contains("--vram-budget"), octo::error);
  CHECK_THROWS_WITH_AS(parse_bytes("0", "--ram-budget"), doctest::Contains("less than one byte"), octo::error);
  CHECK(format_bytes(0) == "0 B");
  CHECK(format_bytes(1023) == "1023 B");
  CHECK(format_bytes(4ull << 30) == "4 GiB");
  CHECK(format_bytes(3ull << 29) == "1.50 GiB");
}

TEST_CASE("residency plan: a fixed number of resident layers") {
  auto p = plan_with_resident_count(uniform(0), 5);  // the budget is only reported
  CHECK(p.resident == mask({1, 1, 1, 0, 1, 1}));     // order 0, 5, 1, 4, 2: layer 3 streams
  CHECK(p.ring_depth == 1);
  CHECK(p.slot_bytes == 100);
  CHECK(p.total_bytes == 750);
  p = plan_with_resident_count(uniform(0), 0);
  CHECK(p.resident_layers == 0);
  CHECK(p.ring_depth == 2);
  CHECK(p.total_bytes == 350);
  p = plan_with_resident_count(uniform(0), 6);
  CHECK(p.all_resident());
  CHECK_THROWS_WITH_AS(plan_with_resident_count(uniform(0), 7), doctest::Contains("not in [0, 6]"), octo::error);
  CHECK_THROWS_WITH_AS(plan_with_resident_count(uniform(0), -1), doctest::Contains("not in [0, 6]"), octo::error);
}
