// octo::error: the one exception type octo's compiled parts throw for bad input, bad files and device
// failures. Its what() is one line naming the problem, fit to print as is before a nonzero exit.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace octo {

class error : public std::runtime_error {
 public:
  explicit error(const std::string& what) : std::runtime_error(what) {}
};

/// `text` (a name or value read from a file) quoted for a message: at most `max` bytes shown, every byte
/// outside printable ASCII written as \xNN, so a hostile file can neither break the one-line rule nor
/// send escape sequences to a terminal.
inline std::string quoted(std::string_view text, std::size_t max = 200) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out = "'";
  for (unsigned char c : text.substr(0, max)) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += char(c);
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  if (text.size() > max) out += "...";
  return out + "'";
}

}  // namespace octo
