// The buddy allocator against a reference model: a bitmap of minimum blocks, where an allocation of a
// rounded block size s must succeed exactly when some s-aligned run of s bytes is free (with full
// merging a buddy system never refuses such a request), and must land on such a run.
#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "octo/detail/buddy_allocator.hpp"
#include "octo/error.hpp"

namespace {

struct model {
  std::uint64_t capacity, unit;
  std::vector<bool> used;  // one flag per minimum block
  model(std::uint64_t cap, std::uint64_t u) : capacity(cap), unit(u), used(cap / u, false) {}

  bool run_free(std::uint64_t offset, std::uint64_t size) const {
    for (std::uint64_t i = offset / unit; i < (offset + size) / unit; ++i)
      if (used[i]) return false;
    return true;
  }
  bool any_aligned_free(std::uint64_t size) const {
    for (std::uint64_t o = 0; o + size <= capacity; o += size)
      if (run_free(o, size)) return true;
    return false;
  }
  std::uint64_t largest_free() const {
    for (std::uint64_t s = capacity; s >= unit; s /= 2)
      if (any_aligned_free(s)) return s;
    return 0;
  }
  void mark(std::uint64_t offset, std::uint64_t size, bool v) {
    for (std::uint64_t i = offset / unit; i < (offset + size) / unit; ++i) used[i] = v;
  }
};

std::uint64_t round_block(std::uint64_t size, std::uint64_t align, std::uint64_t unit) {
  std::uint64_t s = unit;
  while (s < size || s < align) s *= 2;
  return s;
}

}  // namespace

TEST_CASE("buddy allocator: split, merge, statistics by hand") {
  octo::detail::buddy_allocator a(1024, 64);
  auto s0 = a.stats();
  CHECK(s0.free == 1024);
  CHECK(s0.largest_free == 1024);
  CHECK(s0.fragmentation == 0.0);

  auto x = a.allocate(100);  // 128-byte block at 0
  REQUIRE(x);
  CHECK(*x == 0);
  CHECK(a.allocated_block(0) == 128);
  auto y = a.allocate(64);  // 64 at 128
  REQUIRE(y);
  CHECK(*y == 128);
  auto z = a.allocate(10, 512);  // alignment 512 -> a 512 block at 512
  REQUIRE(z);
  CHECK(*z == 512);
  auto s = a.stats();
  CHECK(s.in_use == 128 + 64 + 512);
  CHECK(s.requested == 100 + 64 + 10);
  CHECK(s.free == 1024 - 704);
  CHECK(s.largest_free == 256);  // [256, 512)
  CHECK(s.allocations == 3);
  CHECK(s.fragmentation == doctest::Approx(1.0 - 256.0 / 320.0));
  CHECK_FALSE(a.allocate(300));  // needs 512: none free
  a.free(*z);
  a.free(*x);
  a.free(*y);
  auto e = a.stats();
  CHECK(e.largest_free == 1024);  // everything merged back into the root
  CHECK(e.in_use == 0);
  CHECK_THROWS_AS(a.free(0), octo::error);
  CHECK_FALSE(a.allocate(2048));
  CHECK_THROWS_AS(octo::detail::buddy_allocator(1000, 64), octo::error);
  CHECK_THROWS_AS(a.allocate(8, 3), octo::error);
}

TEST_CASE("buddy allocator: random sequences against the bitmap model") {
  for (std::uint32_t seed : {1u, 2u, 3u, 42u}) {
    CAPTURE(seed);
    const std::uint64_t cap = 1 << 20, unit = 256;
    octo::detail::buddy_allocator a(cap, unit);
    model m(cap, unit);
    std::mt19937_64 rng(seed);
    std::map<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>> live;  // offset -> (block, requested)
    std::uint64_t refused = 0;
    for (int op = 0; op < 3000; ++op) {
      bool do_alloc = live.empty() || (rng() % 100) < 55;
      if (do_alloc) {
        // Log-uniform sizes from 1 byte to cap/8, occasional large alignments.
        std::uint64_t size = 1 + (rng() % (std::uint64_t{1} << (rng() % 18)));
        std::uint64_t align = (rng() % 8 == 0) ? (std::uint64_t{1} << (8 + rng() % 8)) : 1;
        std::uint64_t block = round_block(size, align, unit);
        bool expect = m.any_aligned_free(block);
        auto got = a.allocate(size, align);
        REQUIRE(got.has_value() == expect);
        if (got) {
          CHECK(*got % block == 0);
          CHECK(*got % align == 0);
          REQUIRE(m.run_free(*got, block));
          CHECK(a.allocated_block(*got) == block);
          m.mark(*got, block, true);
          live[*got] = {block, size};
        } else {
          ++refused;
        }
      } else {
        auto it = live.begin();
        std::advance(it, static_cast<long>(rng() % live.size()));
        a.free(it->first);
        m.mark(it->first, it->second.first, false);
        live.erase(it);
      }
      std::uint64_t in_use = 0, requested = 0;
      for (auto& [o, br] : live) {
        in_use += br.first;
        requested += br.second;
      }
      auto s = a.stats();
      REQUIRE(s.in_use == in_use);
      REQUIRE(s.requested == requested);
      REQUIRE(s.free == cap - in_use);
      REQUIRE(s.allocations == live.size());
      REQUIRE(s.largest_free == m.largest_free());
    }
    CHECK(refused > 0);  // the sequence reached full-ish states, so refusals were tested too
    for (auto& [o, br] : live) a.free(o);
    CHECK(a.stats().largest_free == cap);
  }
}
