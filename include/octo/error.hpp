// octo::error: the one exception type octo's compiled parts throw for bad input, bad files and device
// failures. Its what() is one line naming the problem, fit to print as is before a nonzero exit.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

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

/// Another library's exception text (nlohmann::json's, the standard library's) made fit for an
/// octo::error: json's "[json.exception.KIND.N] " tag dropped, anything outside printable ASCII written as
/// \xNN (its parse errors quote the bytes they read), at most `max` bytes.
inline std::string library_text(std::string_view what, std::size_t max = 200) {
  if (what.starts_with("[json.exception.")) {
    const auto end = what.find("] ");
    if (end != std::string_view::npos) what.remove_prefix(end + 2);
  }
  const std::string q = quoted(what, max);
  return q.substr(1, q.size() - 2);
}

/// The one line about the words a command line left over (unknown options, stray arguments), from
/// `words` as given (CLI11's CLI::App::remaining(); its ExtrasError message lists them last first, so
/// "--prompt-file p.txt" would name 'p.txt'): the first option among them (a word starting with '-'),
/// else the first word, quoted.
inline std::string leftover_arguments_text(const std::vector<std::string>& words) {
  for (const auto& w : words)
    if (w.size() > 1 && w[0] == '-') return "unknown option " + octo::quoted(w);
  return "unexpected argument " + octo::quoted(words.empty() ? std::string_view() : std::string_view(words.front()));
}

}  // namespace octo
