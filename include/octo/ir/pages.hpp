// Physical scratch pages for activations (docs/ir.md §4): a page is a slot that activations with
// non-overlapping live ranges may share.
#pragma once

#include <cstdint>
#include <vector>

#include "octo/ir/enums.hpp"

namespace octo::ir {

struct page {
  std::int32_t id = 0;
  mem_space space = mem_space::global_scratch;
  std::int64_t nbytes = 0;
  std::int32_t live_start = -1;  // first task (topological index) that touches a buffer on this page
  std::int32_t live_end = -1;    // last one
  friend constexpr bool operator==(const page&, const page&) = default;
};

struct page_binding {
  std::int32_t buffer = 0;
  std::int32_t page = 0;
  friend constexpr bool operator==(const page_binding&, const page_binding&) = default;
};

struct page_allocation {
  std::vector<page_binding> buffer_to_page;  // sorted by buffer id
  std::vector<page> pages;

  constexpr std::int64_t total_scratch_bytes() const {
    std::int64_t n = 0;
    for (const auto& p : pages) n += p.nbytes;
    return n;
  }
  /// The page of buffer `b`, or -1.
  constexpr std::int32_t page_of(std::int32_t b) const {
    for (const auto& e : buffer_to_page)
      if (e.buffer == b) return e.page;
    return -1;
  }
  friend constexpr bool operator==(const page_allocation&, const page_allocation&) = default;
};

}  // namespace octo::ir
