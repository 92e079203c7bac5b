// small_vector<T, N>: a vector that keeps up to N elements inline and spills to the heap beyond, with
// std::vector's interface for what the IR uses. The task fields (inputs, outputs, waits, params) and
// buffer shapes are small_vectors sized by the ABI caps, so building a program in constant evaluation
// costs a few operations per element instead of the ~300-1500 g++ charges per std::vector.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

namespace octo::ir {

/// Holds any number of elements (a file may carry more than the ABI allows, and validate() must be
/// able to say so); only the first N live inline. T must be default-constructible.
template <class T, std::size_t N>
class small_vector {
 public:
  using value_type = T;
  using size_type = std::size_t;
  using difference_type = std::ptrdiff_t;
  using reference = T&;
  using const_reference = const T&;
  using pointer = T*;
  using const_pointer = const T*;
  using iterator = T*;
  using const_iterator = const T*;
  using reverse_iterator = std::reverse_iterator<T*>;
  using const_reverse_iterator = std::reverse_iterator<const T*>;

  constexpr small_vector() = default;
  constexpr small_vector(std::initializer_list<T> il) { append(il.begin(), il.size()); }
  constexpr small_vector(std::size_t n, const T& v) { assign(n, v); }
  constexpr explicit small_vector(std::size_t n) { resize(n); }
  template <std::input_iterator It>
  constexpr small_vector(It first, It last) {
    for (; first != last; ++first) push_back(*first);
  }
  /// From a std::vector (what parsers and tests build): implicit, so `t.inputs = ids;` reads naturally.
  constexpr small_vector(const std::vector<T>& v) { append(v.data(), v.size()); }  // NOLINT
  constexpr small_vector(const small_vector& o) { append(o.data(), o.size_); }
  constexpr small_vector(small_vector&& o) noexcept(std::is_nothrow_move_assignable_v<T>) { take(o); }
  constexpr small_vector& operator=(const small_vector& o) {
    if (this != &o) {
      clear();
      append(o.data(), o.size_);
    }
    return *this;
  }
  constexpr small_vector& operator=(small_vector&& o) noexcept(std::is_nothrow_move_assignable_v<T>) {
    if (this != &o) {
      clear();
      delete[] heap_;
      heap_ = nullptr;
      cap_ = N;
      take(o);
    }
    return *this;
  }
  constexpr small_vector& operator=(std::initializer_list<T> il) {
    clear();
    append(il.begin(), il.size());
    return *this;
  }
  constexpr ~small_vector() { delete[] heap_; }

  /// A std::vector copy, for code that needs one.
  std::vector<T> to_vector() const { return std::vector<T>(begin(), end()); }

  // ---- access ------------------------------------------------------------------------------------
  constexpr T* data() { return heap_ ? heap_ : inline_.data(); }
  constexpr const T* data() const { return heap_ ? heap_ : inline_.data(); }
  constexpr std::size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr std::size_t capacity() const { return cap_; }
  constexpr T& operator[](std::size_t i) { return data()[i]; }
  constexpr const T& operator[](std::size_t i) const { return data()[i]; }
  constexpr T& at(std::size_t i) {
    if (i >= size_) throw std::out_of_range("octo::ir::small_vector::at: index out of range");
    return data()[i];
  }
  constexpr const T& at(std::size_t i) const {
    if (i >= size_) throw std::out_of_range("octo::ir::small_vector::at: index out of range");
    return data()[i];
  }
  constexpr T& front() { return data()[0]; }
  constexpr const T& front() const { return data()[0]; }
  constexpr T& back() { return data()[size_ - 1]; }
  constexpr const T& back() const { return data()[size_ - 1]; }
  constexpr T* begin() { return data(); }
  constexpr T* end() { return data() + size_; }
  constexpr const T* begin() const { return data(); }
  constexpr const T* end() const { return data() + size_; }
  constexpr const T* cbegin() const { return data(); }
  constexpr const T* cend() const { return data() + size_; }
  constexpr reverse_iterator rbegin() { return reverse_iterator(end()); }
  constexpr reverse_iterator rend() { return reverse_iterator(begin()); }
  constexpr const_reverse_iterator rbegin() const { return const_reverse_iterator(end()); }
  constexpr const_reverse_iterator rend() const { return const_reverse_iterator(begin()); }

  // ---- modifiers ---------------------------------------------------------------------------------
  constexpr void reserve(std::size_t n) {
    if (n > cap_) grow(n);
  }
  constexpr void push_back(const T& v) {
    if (size_ == cap_) {
      T copy = v;  // v may live in this vector
      grow(2 * cap_ + 1);
      data()[size_++] = std::move(copy);
    } else {
      data()[size_++] = v;
    }
  }
  constexpr void push_back(T&& v) {
    if (size_ == cap_) {
      T moved = std::move(v);
      grow(2 * cap_ + 1);
      data()[size_++] = std::move(moved);
    } else {
      data()[size_++] = std::move(v);
    }
  }
  template <class... A>
  constexpr T& emplace_back(A&&... a) {
    T v{std::forward<A>(a)...};  // before a reallocation: the arguments may refer into this vector
    if (size_ == cap_) grow(2 * cap_ + 1);
    T& r = data()[size_++];
    r = std::move(v);
    return r;
  }
  constexpr void pop_back() { data()[--size_] = T{}; }
  constexpr void clear() {
    if constexpr (!std::is_trivially_destructible_v<T>)
      for (std::size_t i = 0; i < size_; ++i) data()[i] = T{};  // release what the elements own
    size_ = 0;
  }
  constexpr void resize(std::size_t n) {
    if (n > cap_) grow(n);
    if (n < size_) {
      if constexpr (!std::is_trivially_destructible_v<T>)
        for (std::size_t i = n; i < size_; ++i) data()[i] = T{};
    } else {
      for (std::size_t i = size_; i < n; ++i) data()[i] = T{};
    }
    size_ = static_cast<std::uint32_t>(n);
  }
  constexpr void resize(std::size_t n, const T& v) {
    const std::size_t old = size_;
    resize(n);
    for (std::size_t i = old; i < n; ++i) data()[i] = v;
  }
  constexpr void assign(std::size_t n, const T& v) {
    clear();
    if (n > cap_) grow(n);
    for (std::size_t i = 0; i < n; ++i) data()[i] = v;
    size_ = static_cast<std::uint32_t>(n);
  }
  template <std::input_iterator It>
  constexpr void assign(It first, It last) {
    clear();
    for (; first != last; ++first) push_back(*first);
  }
  constexpr T* erase(const T* first, const T* last) {
    T* d = data();
    const auto at = static_cast<std::size_t>(first - d), k = static_cast<std::size_t>(last - first);
    for (std::size_t i = at; i + k < size_; ++i) d[i] = std::move(d[i + k]);
    for (std::size_t i = size_ - k; i < size_; ++i) d[i] = T{};
    size_ = static_cast<std::uint32_t>(size_ - k);
    return d + at;
  }
  constexpr T* erase(const T* pos) { return erase(pos, pos + 1); }
  constexpr T* insert(const T* pos, const T& v) {
    const auto at = static_cast<std::size_t>(pos - data());
    push_back(v);
    T* d = data();
    for (std::size_t i = size_ - 1; i > at; --i) std::swap(d[i], d[i - 1]);
    return d + at;
  }

  friend constexpr bool operator==(const small_vector& a, const small_vector& b) {
    if (a.size_ != b.size_) return false;
    for (std::size_t i = 0; i < a.size_; ++i)
      if (!(a.data()[i] == b.data()[i])) return false;
    return true;
  }

 private:
  constexpr void append(const T* s, std::size_t k) {
    if (size_ + k > cap_) grow(size_ + k);
    T* d = data() + size_;
    for (std::size_t i = 0; i < k; ++i) d[i] = s[i];
    size_ = static_cast<std::uint32_t>(size_ + k);
  }
  constexpr void grow(std::size_t want) {
    T* q = new T[want];
    T* d = data();
    for (std::size_t i = 0; i < size_; ++i) q[i] = std::move(d[i]);
    if (heap_) {
      delete[] heap_;
    } else if constexpr (!std::is_trivially_destructible_v<T>) {
      for (std::size_t i = 0; i < size_; ++i) inline_[i] = T{};
    }
    heap_ = q;
    cap_ = static_cast<std::uint32_t>(want);
  }
  // Precondition: *this holds nothing (empty, inline).
  constexpr void take(small_vector& o) {
    if (o.heap_) {
      heap_ = o.heap_;
      cap_ = o.cap_;
      o.heap_ = nullptr;
      o.cap_ = N;
    } else {
      for (std::size_t i = 0; i < o.size_; ++i) inline_[i] = std::move(o.inline_[i]);
    }
    size_ = o.size_;
    o.size_ = 0;
  }

  std::array<T, N> inline_{};
  T* heap_ = nullptr;
  std::uint32_t size_ = 0;
  std::uint32_t cap_ = N;
};

}  // namespace octo::ir
