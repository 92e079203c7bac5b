// Small constexpr text helpers: number formatting and concatenation usable inside constant evaluation,
// so validate() can build messages that name tasks and counters even within a static_assert.
#pragma once

#include <cstdint>
#include <string_view>
#include <type_traits>

#include "octo/ir/text.hpp"

namespace octo::detail {

constexpr ir::text to_text(std::int64_t v) {
  if (v == 0) return ir::text("0");
  bool neg = v < 0;
  // Work in unsigned to survive INT64_MIN.
  std::uint64_t u = neg ? std::uint64_t(0) - std::uint64_t(v) : std::uint64_t(v);
  char buf[24]{};
  int n = 0;
  while (u != 0) {
    buf[n++] = char('0' + int(u % 10));
    u /= 10;
  }
  ir::text s;
  if (neg) s += '-';
  while (n > 0) s += buf[--n];
  return s;
}

template <class... Parts>
constexpr ir::text cat(const Parts&... parts) {
  ir::text s;
  auto add = [&s](const auto& p) {
    using P = std::remove_cvref_t<decltype(p)>;
    if constexpr (std::is_integral_v<P> && !std::is_same_v<P, char> && !std::is_same_v<P, bool>)
      s += to_text(static_cast<std::int64_t>(p));
    else if constexpr (std::is_same_v<P, char>)
      s += p;
    else
      s += std::string_view(p);
  };
  (add(parts), ...);
  return s;
}

}  // namespace octo::detail
