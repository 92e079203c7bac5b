// ram_tier: the warm tier (seeds/003): whole layer blobs kept in caller-supplied (pinned) host memory
// within a byte budget, evicting the blob with the lowest recency+frequency score (the vitality score);
// slots added and removed at run time as the budget changes; hit/miss/evict counts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

namespace octo::stream {

struct ram_tier_options {
  /// score = last_use + frequency_weight * min(uses, max_counted_uses), where last_use is the value of
  /// a counter bumped by every lookup and insert. 0 gives plain LRU; with weight w, a blob used k times
  /// outlives roughly w*k more recent single-use blobs.
  double frequency_weight = 1.0;
  std::uint32_t max_counted_uses = 8;
};

struct ram_tier_stats {
  std::uint64_t hits = 0, misses = 0, inserts = 0, evictions = 0;
  std::uint64_t bytes_inserted = 0, bytes_evicted = 0;
};

/// Fixed-size slots carved from the caller's regions (several, since one pinned allocation may be
/// capped at a few GiB): a slot holds one blob of at most slot_bytes. Keys are the caller's (e.g. a
/// manifest file index). Thread-safe; spans stay valid while the blob is resident, and a blob that is
/// pinned (pin/unpin, e.g. while an upload reads it) is never evicted.
/// @code
///   octo::stream::ram_tier tier(m.max_layer_bytes(), regions);
///   if (auto blob = tier.lookup(file_index)) upload(*blob);          // hit
///   else { auto slot = tier.insert(file_index, bytes); reader.read(f, slot); }  // miss: fill the slot
/// @endcode
class ram_tier {
 public:
  using key = std::uint32_t;

  /// `slot_bytes` is rounded up to 4096; every region contributes floor(size / slot_bytes) slots whose
  /// starts keep the region's alignment plus multiples of slot_bytes. Zero slots is allowed (a
  /// disabled tier: every lookup misses, insert returns nullopt).
  ram_tier(std::uint64_t slot_bytes, std::span<const std::span<std::byte>> regions, ram_tier_options o = {});

  std::size_t capacity() const;  // number of slots
  std::uint64_t slot_bytes() const { return slot_bytes_; }
  std::uint64_t budget_bytes() const { return slot_bytes_ * capacity(); }
  std::size_t resident_count() const;

  /// The blob for `k` when resident (a hit: counts a use), else nullopt (a miss).
  std::optional<std::span<std::byte>> lookup(key k);
  /// Whether `k` is resident, without counting anything.
  bool contains(key k) const;
  /// A slot for `k` holding `bytes` (<= slot_bytes), to be filled by the caller before its next lookup;
  /// evicts the unpinned blob with the lowest score when full. Returns nullopt when every slot is pinned
  /// or there are none. If `k` is already resident, returns its slot (resized, counted as a use).
  std::optional<std::span<std::byte>> insert(key k, std::uint64_t bytes);
  /// Like insert, but a newcomer must be more vital than the blob it would evict: when no slot is free
  /// it takes the lowest-scoring unpinned blob's slot only if that score is below the newcomer's, which
  /// counts no use yet (score = the clock tick it gets). A refusal changes nothing (no tick). So a blob
  /// used once more than the newcomer within frequency_weight ticks stays, and a blob left unused for
  /// about max_counted_uses * frequency_weight ticks gives way. Under a cyclic access (streamed layers,
  /// pass after pass, frequency_weight at least the ticks of one cycle) the tier keeps a fixed subset that
  /// hits on every cycle, where LRU would evict the blob needed next and never hit. nullopt: not admitted
  /// (the caller reads the blob elsewhere).
  std::optional<std::span<std::byte>> admit(key k, std::uint64_t bytes);
  /// Drops `k` if resident (not counted as an eviction); false when pinned or absent.
  bool erase(key k);
  /// Pin counts: a pinned blob is not evicted. unpin of an absent or unpinned key throws octo::error.
  void pin(key k);
  void unpin(key k);

  /// Grows the tier: `region` adds floor(size / slot_bytes) empty slots (the budget grew).
  void add_slots(std::span<std::byte> region);
  /// Shrinks the tier by one slot (the budget shrank): an empty one if any, else the lowest-scoring
  /// unpinned blob's (counted as an eviction). Returns the slot's memory, which the tier no longer uses
  /// (the caller may free it), or nullopt when every slot holds a pinned blob.
  std::optional<std::span<std::byte>> remove_slot();
  /// Resident keys, lowest score (next victim) first: for logging and tests.
  std::vector<key> eviction_order() const;
  ram_tier_stats stats() const;

 private:
  struct slot {
    std::span<std::byte> memory;
    bool used = false;
    key k = 0;
    std::uint64_t bytes = 0;
    std::uint64_t last_use = 0;
    std::uint32_t uses = 0;
    std::uint32_t pins = 0;
  };
  double score(const slot& s) const;
  slot* lowest_unpinned();  // the next victim, or nullptr when every used slot is pinned
  std::span<std::byte> occupy(slot& s, key k, std::uint64_t bytes);
  slot* find(key k);
  const slot* find(key k) const;

  std::uint64_t slot_bytes_;
  ram_tier_options o_;
  mutable std::mutex mu_;
  std::vector<slot> slots_;
  std::uint64_t clock_ = 0;
  ram_tier_stats stats_;
};

}  // namespace octo::stream
