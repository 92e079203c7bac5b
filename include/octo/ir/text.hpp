// text: the IR's string type. A plain heap buffer (pointer, size, capacity) rather than std::string,
// because g++ 12 miscompiles moves of short std::strings during constant evaluation ("accessing
// _M_allocated_capacity instead of _M_local_buf"), and the IR must build and validate inside static_assert.
#pragma once

#include <cstddef>
#include <cstring>
#include <type_traits>
#include <string>
#include <string_view>

namespace octo::ir {

/// Hand-rolled rather than a std::vector<char>: in constant evaluation g++ charges ~150 operations per
/// character for vector<char>'s range constructor and several hundred per empty vector built or
/// destroyed; here an empty text costs a few operations and a copy a few per character
/// (docs/compile-time.md), which matters for programs of thousands of named buffers.
class text {
 public:
  constexpr text() noexcept = default;
  constexpr text(std::string_view s) { init(s.data(), s.size()); }  // NOLINT: implicit, like std::string
  constexpr text(const char* s) : text(std::string_view(s)) {}
  text(const std::string& s) : text(std::string_view(s)) {}
  constexpr text(const text& o) { init(o.p_, o.n_); }
  constexpr text(text&& o) noexcept : p_(o.p_), n_(o.n_), cap_(o.cap_) {
    o.p_ = nullptr;
    o.n_ = o.cap_ = 0;
  }
  constexpr text& operator=(const text& o) {
    if (this != &o) {
      n_ = 0;
      append(o.p_, o.n_);
    }
    return *this;
  }
  constexpr text& operator=(text&& o) noexcept {
    if (this != &o) {
      delete[] p_;
      p_ = o.p_;
      n_ = o.n_;
      cap_ = o.cap_;
      o.p_ = nullptr;
      o.n_ = o.cap_ = 0;
    }
    return *this;
  }
  constexpr ~text() { delete[] p_; }

  constexpr std::string_view view() const { return n_ == 0 ? std::string_view() : std::string_view(p_, n_); }
  constexpr operator std::string_view() const { return view(); }  // NOLINT: implicit by design
  std::string str() const { return std::string(view()); }
  constexpr const char* data() const { return p_ == nullptr ? "" : p_; }
  constexpr bool empty() const { return n_ == 0; }
  constexpr std::size_t size() const { return n_; }
  constexpr text& operator+=(std::string_view s) {
    append(s.data(), s.size());
    return *this;
  }
  constexpr text& operator+=(char c) {
    append(&c, 1);
    return *this;
  }
  friend constexpr bool operator==(const text& a, const text& b) { return a.view() == b.view(); }
  friend constexpr bool operator==(const text& a, std::string_view b) { return a.view() == b; }
  friend constexpr bool operator==(const text& a, const char* b) { return a.view() == std::string_view(b); }

 private:
  // Plain loops in constant evaluation (char_traits::copy / std::copy cost several times more per char
  // there); memcpy at run time.
  static constexpr void copy_chars(char* d, const char* s, std::size_t k) {
    if (std::is_constant_evaluated()) {
      for (const char* e = s + k; s != e; ++s, ++d) *d = *s;
    } else {
      copy_at_run_time(d, s, k);
    }
  }
  // Out of line: inlined, g++ 12 -O3 "proves" impossible sizes for the memcpy and warns
  // (-Wstringop-overflow, -Warray-bounds) at every call site.
  [[gnu::noinline]] static void copy_at_run_time(char* d, const char* s, std::size_t k) {
    if (k != 0) std::memcpy(d, s, k);
  }
  // The constructors' path: an exact allocation (and a shape g++'s -Wstringop-overflow follows).
  constexpr void init(const char* s, std::size_t k) {
    if (k == 0) return;
    p_ = new char[k];
    copy_chars(p_, s, k);
    n_ = cap_ = k;
  }
  constexpr void append(const char* s, std::size_t k) {
    if (k == 0) return;
    if (n_ + k > cap_) {
      const std::size_t cap = 2 * cap_ > n_ + k ? 2 * cap_ : n_ + k;
      char* q = new char[cap];
      if (p_ != nullptr) copy_chars(q, p_, n_);
      copy_chars(q + n_, s, k);  // before freeing: s may point into p_
      delete[] p_;
      p_ = q;
      cap_ = cap;
    } else {
      copy_chars(p_ + n_, s, k);
    }
    n_ += k;
  }

  char* p_ = nullptr;
  std::size_t n_ = 0;
  std::size_t cap_ = 0;
};

}  // namespace octo::ir
