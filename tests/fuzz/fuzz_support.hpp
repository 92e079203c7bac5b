// Shared by the fuzz targets: a private scratch folder (for readers that take paths) and byte helpers.
#pragma once

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

namespace octo::fuzz {

/// A folder of this process's own, made once, for files the input is written to.
inline const std::filesystem::path& scratch() {
  static const std::filesystem::path dir = [] {
    std::string t = (std::filesystem::temp_directory_path() / "octo-fuzz-XXXXXX").string();
    if (!::mkdtemp(t.data())) __builtin_trap();
    return std::filesystem::path(t);
  }();
  return dir;
}

/// Writes `bytes` to scratch()/name (replacing it) and returns the path.
inline std::filesystem::path put(std::string_view name, std::span<const std::byte> bytes) {
  const auto p = scratch() / std::string(name);
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) __builtin_trap();
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) __builtin_trap();
    done += std::size_t(n);
  }
  ::close(fd);
  return p;
}
inline std::filesystem::path put(std::string_view name, std::string_view text) {
  return put(name, std::as_bytes(std::span(text.data(), text.size())));
}

/// Splits an input in two at a length read from its first two bytes (little-endian).
inline std::pair<std::string_view, std::span<const std::byte>> split(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return {{}, {}};
  std::size_t n = std::size_t(data[0]) | (std::size_t(data[1]) << 8);
  if (n > size - 2) n = size - 2;
  return {std::string_view(reinterpret_cast<const char*>(data + 2), n),
          std::as_bytes(std::span(data + 2 + n, size - 2 - n))};
}

}  // namespace octo::fuzz
