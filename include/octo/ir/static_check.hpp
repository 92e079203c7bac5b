// Compile-time validation with a readable diagnostic: the first validate() error becomes a template
// argument of a failing static_assert, so the compiler prints the message itself (the {fmt} technique).
#pragma once

#include <cstddef>
#include <string_view>

#include "octo/ir/validate.hpp"

namespace octo::ir {

/// A string literal usable as a non-type template argument (structural: a public char array).
template <std::size_t N>
struct fixed_message {
  char text[N]{};
  constexpr fixed_message() = default;
  constexpr explicit fixed_message(std::string_view s) {
    for (std::size_t i = 0; i < s.size() && i + 1 < N; ++i) text[i] = s[i];
  }
  constexpr bool empty() const { return text[0] == '\0'; }
};

namespace detail {

template <auto Make>
constexpr std::size_t first_error_size() {
  auto r = validate(Make());
  return r.errors.empty() ? 1 : r.errors.front().size() + 1;
}

template <auto Make>
constexpr auto first_error() {
  fixed_message<first_error_size<Make>()> m;
  auto r = validate(Make());
  if (!r.errors.empty()) {
    auto s = r.errors.front().view();
    for (std::size_t i = 0; i < s.size(); ++i) m.text[i] = s[i];
  }
  return m;
}

/// Instantiated with the first error; the static_assert fails exactly when there is one, and g++ shows
/// `program_rejected_by_validate<fixed_message<N>{"deadlock: COPY#0 waits on counter 3, ..."}>`.
template <fixed_message Message>
struct program_rejected_by_validate {
  static_assert(Message.empty(), "octo: validate() rejected the program; the first error is the template argument above");
  static constexpr bool value = Message.empty();
};

}  // namespace detail

/// Validates the program `Make()` returns at compile time; on failure the build stops with the first
/// validate() error in the diagnostic. `Make` is a captureless lambda or a function pointer.
/// @code
///   octo::ir::assert_valid<[] { return make_mlp(); }>();
/// @endcode
template <auto Make>
constexpr bool assert_valid() {
  return detail::program_rejected_by_validate<detail::first_error<Make>()>::value;
}

}  // namespace octo::ir

/// static_assert that `make` (a constexpr callable returning an octo::ir::program) validates, showing the
/// first error text on failure.
#define OCTO_STATIC_VALIDATE(...) static_assert(::octo::ir::assert_valid<__VA_ARGS__>())
