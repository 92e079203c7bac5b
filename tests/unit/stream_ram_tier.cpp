// ram_tier: eviction order on scripted access sequences worked out by hand (score = last_use +
// weight * uses, the clock bumped by every lookup and insert), pins, slots carved from several regions.
#include <cstring>

#include "octo/error.hpp"
#include "octo/stream/layer_reader.hpp"
#include "octo/stream/ram_tier.hpp"

using namespace octo;
using stream::ram_tier;

namespace {

constexpr std::uint64_t slot = 4096;

struct memory {
  stream::aligned_buffer a{3 * slot};
  std::vector<std::span<std::byte>> regions{a.span()};
};

// The script: insert A B C (t1..t3); lookups A A A B C (t4..t8); insert D (t9); insert E (t10);
// lookups D, B (t11, t12; hit or miss recorded); insert F (t13). Keys: A=1 ... F=6.
void script(ram_tier& t, std::vector<std::vector<ram_tier::key>>& order_after_inserts, std::vector<bool>& hits) {
  REQUIRE(t.insert(1, 10));
  REQUIRE(t.insert(2, 10));
  REQUIRE(t.insert(3, 10));
  for (ram_tier::key k : {1u, 1u, 1u, 2u, 3u}) REQUIRE(t.lookup(k));
  REQUIRE(t.insert(4, 10));
  order_after_inserts.push_back(t.eviction_order());
  REQUIRE(t.insert(5, 10));
  order_after_inserts.push_back(t.eviction_order());
  hits.push_back(t.lookup(4).has_value());
  hits.push_back(t.lookup(2).has_value());
  REQUIRE(t.insert(6, 10));
  order_after_inserts.push_back(t.eviction_order());
}

}  // namespace

TEST_CASE("ram_tier: recency plus frequency evicts by the hand-computed scores") {
  memory mem;
  stream::ram_tier_options o;
  o.frequency_weight = 2.0;
  ram_tier t(slot, mem.regions, o);
  REQUIRE(t.capacity() == 3);
  std::vector<std::vector<ram_tier::key>> orders;
  std::vector<bool> hits;
  script(t, orders, hits);
  CHECK(hits == std::vector<bool>{false, false});  // D and B were evicted
  // t8: A(last 6, uses 4) = 14, B(7, 2) = 11, C(8, 2) = 12. t9 insert D evicts B; D(9, 1) = 11.
  CHECK(orders[0] == std::vector<ram_tier::key>{4, 3, 1});  // D 11, C 12, A 14
  // t10 insert E evicts D (11), the newcomer used once: frequency protects A and C. E(10, 1) = 12.
  CHECK(orders[1] == std::vector<ram_tier::key>{3, 5, 1});  // C 12 (last 8), E 12 (last 10), A 14
  // t13 insert F: C and E tie at 12, C is older -> evicted. F(13, 1) = 15.
  CHECK(orders[2] == std::vector<ram_tier::key>{5, 1, 6});  // E 12, A 14, F 15
  const auto s = t.stats();
  CHECK(s.hits == 5);
  CHECK(s.misses == 2);
  CHECK(s.inserts == 6);
  CHECK(s.evictions == 3);
  CHECK(s.bytes_inserted == 60);
  CHECK(s.bytes_evicted == 30);
}

TEST_CASE("ram_tier: weight 0 is plain LRU on the same script") {
  memory mem;
  stream::ram_tier_options o;
  o.frequency_weight = 0.0;
  ram_tier t(slot, mem.regions, o);
  std::vector<std::vector<ram_tier::key>> orders;
  std::vector<bool> hits;
  script(t, orders, hits);
  // t9: A (last 6) evicted, B 7, C 8, D 9; t10: B evicted; t11 D hits (last 11), t12 B misses;
  // t13: C (8) evicted -> E 10, D 11, F 13.
  CHECK(orders[0] == std::vector<ram_tier::key>{2, 3, 4});
  CHECK(orders[1] == std::vector<ram_tier::key>{3, 4, 5});
  CHECK(hits == std::vector<bool>{true, false});
  CHECK(orders[2] == std::vector<ram_tier::key>{5, 4, 6});
}

TEST_CASE("ram_tier: blobs keep their bytes, pinned blobs are never evicted") {
  stream::aligned_buffer a(2 * slot + 100), b(slot);
  const std::vector<std::span<std::byte>> regions{a.span(), b.span()};
  ram_tier t(slot, regions);
  REQUIRE(t.capacity() == 3);  // two slots from the first region, one from the second
  CHECK(t.budget_bytes() == 3 * slot);
  for (ram_tier::key k = 1; k <= 3; ++k) {
    auto s = t.insert(k, slot);
    REQUIRE(s);
    REQUIRE(s->size() == slot);
    // Inside one of the regions, 4096-aligned.
    const bool in_a = s->data() >= a.data() && s->data() + slot <= a.data() + a.size();
    const bool in_b = s->data() >= b.data() && s->data() + slot <= b.data() + b.size();
    CHECK((in_a || in_b));
    CHECK(reinterpret_cast<std::uintptr_t>(s->data()) % 4096 == 0);
    std::memset(s->data(), int(k), slot);
  }
  for (ram_tier::key k = 1; k <= 3; ++k) {
    auto s = t.lookup(k);
    REQUIRE(s);
    CHECK(std::to_integer<int>((*s)[0]) == int(k));
    CHECK(std::to_integer<int>((*s)[slot - 1]) == int(k));
  }
  // Key 1 is the LRU victim; pinned, it survives and key 2 goes instead.
  t.pin(1);
  REQUIRE(t.insert(4, 100));
  CHECK(t.contains(1));
  CHECK_FALSE(t.contains(2));
  CHECK(t.lookup(4)->size() == 100);
  t.pin(3);
  t.pin(4);
  CHECK_FALSE(t.insert(5, 100));  // everything pinned
  CHECK_FALSE(t.erase(3));
  t.unpin(1);
  t.unpin(3);
  t.unpin(4);
  CHECK_THROWS_AS(t.unpin(4), octo::error);
  CHECK_THROWS_AS(t.pin(99), octo::error);
  CHECK_THROWS_AS(t.insert(6, slot + 1), octo::error);
  CHECK(t.erase(3));
  CHECK(t.resident_count() == 2);

  // No slots at all: a disabled tier.
  ram_tier none(slot, {});
  CHECK(none.capacity() == 0);
  CHECK_FALSE(none.lookup(1));
  CHECK_FALSE(none.insert(1, 10));
}

TEST_CASE("ram_tier: admit keeps a fixed subset under a cyclic access where LRU never hits") {
  // Six keys visited in a cycle, three slots. The scoring the engine uses: one use outweighs a cycle of
  // recency (weight = keys per cycle; at most one tick per visit since a refused admit does not tick).
  const auto cycle = [](ram_tier& t, bool admit, int passes) {
    std::uint64_t hits = 0;
    for (int p = 0; p < passes; ++p)
      for (ram_tier::key k = 1; k <= 6; ++k) {
        if (t.contains(k)) {
          REQUIRE(t.lookup(k));
          ++hits;
        } else if (admit) {
          (void)t.admit(k, 10);
        } else {
          REQUIRE(t.insert(k, 10));
        }
      }
    return hits;
  };
  memory mem;
  stream::ram_tier_options o;
  o.frequency_weight = 6.0;
  ram_tier vital(slot, mem.regions, o);
  CHECK(cycle(vital, true, 5) == 3 * 4);  // keys 1-3 admitted on the first pass, hit on the other four
  CHECK(vital.eviction_order() == std::vector<ram_tier::key>{1, 2, 3});
  CHECK(vital.stats().evictions == 0);
  memory mem2;
  ram_tier lru(slot, mem2.regions, o);
  CHECK(cycle(lru, false, 5) == 0);  // insert always evicts: the victim is the key needed next
  CHECK(lru.stats().evictions == 6 * 5 - 3);
}

TEST_CASE("ram_tier: admit evicts a blob gone stale, and only for a newcomer scoring higher") {
  memory mem;
  stream::ram_tier_options o;
  o.frequency_weight = 2.0;
  o.max_counted_uses = 2;
  ram_tier t(slot, mem.regions, o);
  // score = last_use + 2 * min(uses, 2); a newcomer scores the tick it would get
  REQUIRE(t.admit(1, 10));  // t1: 1 = 3
  REQUIRE(t.admit(2, 10));  // t2: 2 = 4
  REQUIRE(t.admit(3, 10));  // t3: 3 = 5
  REQUIRE(t.lookup(1));     // t4
  REQUIRE(t.lookup(1));     // t5: 1 = 5 + 2 * 2 = 9
  REQUIRE(t.admit(4, 10));  // newcomer 6 > 2's 4: t6, 4 = 8
  CHECK_FALSE(t.contains(2));
  REQUIRE(t.admit(5, 10));  // newcomer 7 > 3's 5: t7, 5 = 9
  CHECK(t.eviction_order() == std::vector<ram_tier::key>{4, 1, 5});  // 8, 9 (last 5), 9 (last 7)
  CHECK_FALSE(t.admit(6, 10));  // newcomer 8, not above 4's 8: refused, no tick
  REQUIRE(t.lookup(4));         // t8: 4 = 12
  CHECK_FALSE(t.admit(6, 10));  // newcomer 9, not above 1's 9
  REQUIRE(t.lookup(5));         // t9: 5 = 13
  REQUIRE(t.lookup(4));         // t10: 4 = 14
  REQUIRE(t.admit(6, 10));      // newcomer 11 > 1's 9: 1, unused since t5, gives way
  CHECK(t.eviction_order() == std::vector<ram_tier::key>{5, 6, 4});  // 5 = 13 (last 9), 6 = 11 + 2 = 13, 4 = 14
  CHECK(t.stats().evictions == 3);
}

TEST_CASE("ram_tier: slots added and removed at run time") {
  stream::aligned_buffer a{2 * slot}, b{slot};
  std::vector<std::span<std::byte>> regions{a.span()};
  stream::ram_tier_options o;
  o.frequency_weight = 4.0;
  ram_tier t(slot, regions, o);
  REQUIRE(t.insert(1, 10));     // t1: 1 = 5
  REQUIRE(t.insert(2, 10));     // t2: 2 = 6
  CHECK_FALSE(t.admit(3, 10));  // full, and 3 (next tick: 3) is not more vital than 1
  t.add_slots(b.span());         // grows by one slot
  CHECK(t.capacity() == 3);
  CHECK(t.budget_bytes() == 3 * slot);
  const auto s3 = t.admit(3, 10);
  REQUIRE(s3);
  CHECK(s3->data() == b.span().data());
  REQUIRE(t.lookup(1));  // 2 is now the least vital
  // Shrinking: no free slot, so the lowest-scoring unpinned blob goes; pinned ones stay.
  const auto freed = t.remove_slot();
  REQUIRE(freed);
  CHECK(freed->size() == slot);
  CHECK_FALSE(t.contains(2));
  CHECK(t.capacity() == 2);
  CHECK(t.stats().evictions == 1);
  t.pin(1);
  t.pin(3);
  CHECK_FALSE(t.remove_slot());  // every blob pinned
  CHECK(t.capacity() == 2);
  t.unpin(1);
  REQUIRE(t.remove_slot());  // 1 goes, 3 (pinned) stays
  CHECK(t.contains(3));
  CHECK_FALSE(t.contains(1));
  CHECK(t.erase(3) == false);  // pinned
  t.unpin(3);
  CHECK(t.erase(3));
  REQUIRE(t.remove_slot());  // a free slot
  CHECK(t.capacity() == 0);
  CHECK_FALSE(t.remove_slot());
  CHECK_FALSE(t.admit(7, 10));  // no slots: nothing admitted
}
