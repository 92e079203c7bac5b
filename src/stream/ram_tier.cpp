// ram_tier: fixed slots in caller memory; the victim is the unpinned blob with the lowest
// last_use + weight * min(uses, cap) score (ties: the least recently used); admit() evicts it only for a
// newcomer scoring higher; slots come and go with the caller's regions.
#include "octo/stream/ram_tier.hpp"

#include <algorithm>

#include "octo/error.hpp"
#include "octo/stream/manifest.hpp"

namespace octo::stream {

ram_tier::ram_tier(std::uint64_t slot_bytes, std::span<const std::span<std::byte>> regions, ram_tier_options o)
    : slot_bytes_(round_up(slot_bytes == 0 ? 1 : slot_bytes, io_alignment)), o_(o) {
  if (!(o_.frequency_weight >= 0.0)) throw octo::error("ram_tier: frequency_weight must be >= 0");
  for (const auto& r : regions)
    for (std::uint64_t at = 0; at + slot_bytes_ <= r.size(); at += slot_bytes_)
      slots_.push_back(slot{r.subspan(std::size_t(at), std::size_t(slot_bytes_))});
}

double ram_tier::score(const slot& s) const {
  return double(s.last_use) + o_.frequency_weight * double(std::min(s.uses, o_.max_counted_uses));
}

ram_tier::slot* ram_tier::find(key k) {
  for (auto& s : slots_)
    if (s.used && s.k == k) return &s;
  return nullptr;
}
const ram_tier::slot* ram_tier::find(key k) const {
  for (const auto& s : slots_)
    if (s.used && s.k == k) return &s;
  return nullptr;
}

std::size_t ram_tier::capacity() const {
  std::lock_guard lock(mu_);
  return slots_.size();
}

std::size_t ram_tier::resident_count() const {
  std::lock_guard lock(mu_);
  return std::size_t(std::count_if(slots_.begin(), slots_.end(), [](const slot& s) { return s.used; }));
}

std::optional<std::span<std::byte>> ram_tier::lookup(key k) {
  std::lock_guard lock(mu_);
  ++clock_;
  slot* s = find(k);
  if (!s) {
    ++stats_.misses;
    return std::nullopt;
  }
  ++stats_.hits;
  s->last_use = clock_;
  ++s->uses;
  return s->memory.first(std::size_t(s->bytes));
}

bool ram_tier::contains(key k) const {
  std::lock_guard lock(mu_);
  return find(k) != nullptr;
}

ram_tier::slot* ram_tier::lowest_unpinned() {
  slot* target = nullptr;
  for (auto& s : slots_) {
    if (!s.used || s.pins > 0) continue;
    if (!target || score(s) < score(*target) || (score(s) == score(*target) && s.last_use < target->last_use))
      target = &s;
  }
  return target;
}

std::span<std::byte> ram_tier::occupy(slot& s, key k, std::uint64_t bytes) {
  if (s.used) {
    ++stats_.evictions;
    stats_.bytes_evicted += s.bytes;
  }
  s.used = true;
  s.k = k;
  s.bytes = bytes;
  s.last_use = clock_;
  s.uses = 1;
  s.pins = 0;
  ++stats_.inserts;
  stats_.bytes_inserted += bytes;
  return s.memory.first(std::size_t(bytes));
}

std::optional<std::span<std::byte>> ram_tier::insert(key k, std::uint64_t bytes) {
  if (bytes > slot_bytes_)
    throw octo::error("ram_tier: a blob of " + std::to_string(bytes) + " bytes does not fit a slot of " +
                      std::to_string(slot_bytes_));
  std::lock_guard lock(mu_);
  ++clock_;
  if (slot* s = find(k)) {
    s->bytes = bytes;
    s->last_use = clock_;
    ++s->uses;
    return s->memory.first(std::size_t(bytes));
  }
  for (auto& s : slots_)
    if (!s.used) return occupy(s, k, bytes);
  slot* victim = lowest_unpinned();
  if (!victim) return std::nullopt;  // everything pinned
  return occupy(*victim, k, bytes);
}

std::optional<std::span<std::byte>> ram_tier::admit(key k, std::uint64_t bytes) {
  if (bytes > slot_bytes_)
    throw octo::error("ram_tier: a blob of " + std::to_string(bytes) + " bytes does not fit a slot of " +
                      std::to_string(slot_bytes_));
  std::lock_guard lock(mu_);
  if (slot* s = find(k)) {
    ++clock_;
    s->bytes = bytes;
    s->last_use = clock_;
    ++s->uses;
    return s->memory.first(std::size_t(bytes));
  }
  slot* target = nullptr;
  for (auto& s : slots_)
    if (!s.used) {
      target = &s;
      break;
    }
  if (!target) {
    target = lowest_unpinned();
    // the newcomer's score: the clock tick it would get, no use counted yet
    if (!target || !(score(*target) < double(clock_ + 1))) return std::nullopt;
  }
  ++clock_;
  return occupy(*target, k, bytes);
}

void ram_tier::add_slots(std::span<std::byte> region) {
  std::lock_guard lock(mu_);
  for (std::uint64_t at = 0; at + slot_bytes_ <= region.size(); at += slot_bytes_)
    slots_.push_back(slot{region.subspan(std::size_t(at), std::size_t(slot_bytes_))});
}

std::optional<std::span<std::byte>> ram_tier::remove_slot() {
  std::lock_guard lock(mu_);
  auto it = std::find_if(slots_.begin(), slots_.end(), [](const slot& s) { return !s.used; });
  if (it == slots_.end()) {
    slot* victim = lowest_unpinned();
    if (!victim) return std::nullopt;
    ++stats_.evictions;
    stats_.bytes_evicted += victim->bytes;
    it = slots_.begin() + (victim - slots_.data());
  }
  const auto memory = it->memory;
  slots_.erase(it);
  return memory;
}

bool ram_tier::erase(key k) {
  std::lock_guard lock(mu_);
  slot* s = find(k);
  if (!s || s->pins > 0) return false;
  s->used = false;
  return true;
}

void ram_tier::pin(key k) {
  std::lock_guard lock(mu_);
  slot* s = find(k);
  if (!s) throw octo::error("ram_tier: pin of key " + std::to_string(k) + ", which is not resident");
  ++s->pins;
}

void ram_tier::unpin(key k) {
  std::lock_guard lock(mu_);
  slot* s = find(k);
  if (!s || s->pins == 0) throw octo::error("ram_tier: unpin of key " + std::to_string(k) + ", which is not pinned");
  --s->pins;
}

std::vector<ram_tier::key> ram_tier::eviction_order() const {
  std::lock_guard lock(mu_);
  std::vector<const slot*> v;
  for (const auto& s : slots_)
    if (s.used) v.push_back(&s);
  std::sort(v.begin(), v.end(), [&](const slot* a, const slot* b) {
    if (score(*a) != score(*b)) return score(*a) < score(*b);
    return a->last_use < b->last_use;
  });
  std::vector<key> out;
  for (const auto* s : v) out.push_back(s->k);
  return out;
}

ram_tier_stats ram_tier::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

}  // namespace octo::stream
