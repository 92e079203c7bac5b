// text: the IR's string type. A std::vector<char> underneath, because g++ 12 miscompiles moves of
// short std::strings during constant evaluation ("accessing _M_allocated_capacity instead of
// _M_local_buf"), and the IR must build and validate inside static_assert.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace octo::ir {

class text {
 public:
  constexpr text() = default;
  constexpr text(std::string_view s) : chars_(s.begin(), s.end()) {}
  constexpr text(const char* s) : text(std::string_view(s)) {}
  text(const std::string& s) : text(std::string_view(s)) {}

  constexpr std::string_view view() const { return {chars_.data(), chars_.size()}; }
  constexpr operator std::string_view() const { return view(); }
  std::string str() const { return std::string(view()); }
  constexpr bool empty() const { return chars_.empty(); }
  constexpr std::size_t size() const { return chars_.size(); }
  constexpr text& operator+=(std::string_view s) {
    // Geometric reserve + push_back rather than vector::insert of a range: g++ 12 at -O3 reports a false
    // -Wnonnull inside insert's memmove whenever a message is built from an empty text.
    if (chars_.capacity() < chars_.size() + s.size()) chars_.reserve(std::max(2 * chars_.capacity(), chars_.size() + s.size()));
    for (char c : s) chars_.push_back(c);
    return *this;
  }
  constexpr text& operator+=(char c) {
    chars_.push_back(c);
    return *this;
  }
  friend constexpr bool operator==(const text& a, const text& b) { return a.view() == b.view(); }
  friend constexpr bool operator==(const text& a, std::string_view b) { return a.view() == b; }
  friend constexpr bool operator==(const text& a, const char* b) { return a.view() == std::string_view(b); }

 private:
  std::vector<char> chars_;
};

}  // namespace octo::ir
