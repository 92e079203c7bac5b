// The buddy allocator's pure logic (seeds/003): power-of-two blocks carved out of one range by splitting,
// merged with their buddy on free. The Vulkan VM runs one per device-memory block; no GPU needed here.
#pragma once

#include <bit>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "octo/error.hpp"

namespace octo::detail {

class buddy_allocator {
 public:
  struct statistics {
    std::uint64_t capacity = 0;
    std::uint64_t in_use = 0;         // bytes in allocated blocks (sizes rounded up to blocks)
    std::uint64_t requested = 0;      // bytes the callers asked for
    std::uint64_t free = 0;           // capacity - in_use
    std::uint64_t largest_free = 0;   // the largest block an allocation could get now
    std::uint64_t allocations = 0;    // live allocations
    /// 1 - largest_free / free: 0 when all free space is one block, near 1 when it is crumbs.
    double fragmentation = 0.0;
  };

  /// `capacity` and `min_block` are powers of two, min_block <= capacity.
  buddy_allocator(std::uint64_t capacity, std::uint64_t min_block)
      : capacity_(capacity), min_block_(min_block) {
    if (!std::has_single_bit(capacity) || !std::has_single_bit(min_block) || min_block > capacity)
      throw octo::error("buddy_allocator: capacity " + std::to_string(capacity) + " and minimum block " +
                        std::to_string(min_block) + " must be powers of two with min_block <= capacity");
    levels_ = std::countr_zero(capacity) - std::countr_zero(min_block) + 1;
    free_.resize(static_cast<std::size_t>(levels_));
    free_[0].insert(0);
  }

  std::uint64_t capacity() const { return capacity_; }
  std::uint64_t min_block() const { return min_block_; }

  /// The block size a request of `size` bytes aligned to `alignment` (a power of two) occupies.
  std::uint64_t block_for(std::uint64_t size, std::uint64_t alignment = 1) const {
    std::uint64_t need = size < min_block_ ? min_block_ : size;
    if (alignment > need) need = alignment;
    if (need > capacity_) return 0;
    return std::bit_ceil(need);
  }

  /// Offset of a block of at least `size` bytes whose offset is a multiple of `alignment`, or nullopt
  /// when no free block is large enough. Picks the smallest fitting block, lowest address first.
  std::optional<std::uint64_t> allocate(std::uint64_t size, std::uint64_t alignment = 1) {
    if (size == 0) size = 1;
    if (!std::has_single_bit(alignment))
      throw octo::error("buddy_allocator: alignment " + std::to_string(alignment) + " is not a power of two");
    std::uint64_t block = block_for(size, alignment);
    if (block == 0) return std::nullopt;
    int level = level_of(block);
    int from = level;
    while (from >= 0 && free_[static_cast<std::size_t>(from)].empty()) --from;
    if (from < 0) return std::nullopt;
    // Split down: keep the lower half, free the upper half at each level.
    std::uint64_t offset = *free_[static_cast<std::size_t>(from)].begin();
    free_[static_cast<std::size_t>(from)].erase(free_[static_cast<std::size_t>(from)].begin());
    for (int l = from; l < level; ++l) free_[static_cast<std::size_t>(l + 1)].insert(offset + size_at(l + 1));
    used_.emplace(offset, allocation{level, size});
    in_use_ += block;
    requested_ += size;
    return offset;
  }

  /// Returns the block at `offset` (as returned by allocate) and merges it with free buddies.
  void free(std::uint64_t offset) {
    auto it = used_.find(offset);
    if (it == used_.end())
      throw octo::error("buddy_allocator: free of offset " + std::to_string(offset) + ", which is not allocated");
    int level = it->second.level;
    in_use_ -= size_at(level);
    requested_ -= it->second.size;
    used_.erase(it);
    while (level > 0) {
      std::uint64_t buddy = offset ^ size_at(level);
      auto& list = free_[static_cast<std::size_t>(level)];
      auto b = list.find(buddy);
      if (b == list.end()) break;
      list.erase(b);
      offset = offset < buddy ? offset : buddy;
      --level;
    }
    free_[static_cast<std::size_t>(level)].insert(offset);
  }

  /// Size of the block allocated at `offset`, or 0 if none is.
  std::uint64_t allocated_block(std::uint64_t offset) const {
    auto it = used_.find(offset);
    return it == used_.end() ? 0 : size_at(it->second.level);
  }

  statistics stats() const {
    statistics s;
    s.capacity = capacity_;
    s.in_use = in_use_;
    s.requested = requested_;
    s.free = capacity_ - in_use_;
    s.allocations = used_.size();
    for (int l = 0; l < levels_; ++l)
      if (!free_[static_cast<std::size_t>(l)].empty()) {
        s.largest_free = size_at(l);
        break;
      }
    s.fragmentation = s.free == 0 ? 0.0 : 1.0 - static_cast<double>(s.largest_free) / static_cast<double>(s.free);
    return s;
  }

 private:
  struct allocation {
    int level;
    std::uint64_t size;
  };
  std::uint64_t size_at(int level) const { return capacity_ >> level; }
  int level_of(std::uint64_t block) const { return std::countr_zero(capacity_) - std::countr_zero(block); }

  std::uint64_t capacity_;
  std::uint64_t min_block_;
  int levels_ = 0;
  std::vector<std::set<std::uint64_t>> free_;  // per level (0 = the whole range), ordered: lowest address first
  std::unordered_map<std::uint64_t, allocation> used_;
  std::uint64_t in_use_ = 0;
  std::uint64_t requested_ = 0;
};

}  // namespace octo::detail
