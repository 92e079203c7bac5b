// posix_io: small POSIX helpers shared by the stream sources (an owning file descriptor, errno text,
// full writes, fsync of files and directories). Internal to octo_core.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <utility>

#include "octo/error.hpp"

namespace octo::stream::detail {

inline std::string errno_text(int e) { return std::strerror(e); }

/// An owning file descriptor.
class fd_handle {
 public:
  fd_handle() = default;
  explicit fd_handle(int fd) : fd_(fd) {}
  fd_handle(fd_handle&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  fd_handle& operator=(fd_handle&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  fd_handle(const fd_handle&) = delete;
  fd_handle& operator=(const fd_handle&) = delete;
  ~fd_handle() { reset(); }
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  /// close() with its error reported (a write error may only show up here).
  void close_checked(const std::filesystem::path& p) {
    const int fd = std::exchange(fd_, -1);
    if (fd >= 0 && ::close(fd) != 0) throw octo::error(p.string() + ": close failed: " + errno_text(errno));
  }

 private:
  int fd_ = -1;
};

/// Writes all of `bytes` (retrying short writes and EINTR); octo::error naming `p` otherwise.
inline void write_all(int fd, std::span<const std::byte> bytes, const std::filesystem::path& p) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw octo::error(p.string() + ": write failed: " + errno_text(errno));
    }
    if (n == 0) throw octo::error(p.string() + ": write made no progress");
    done += std::size_t(n);
  }
}

inline void fsync_path(const std::filesystem::path& p, bool directory) {
  fd_handle fd(::open(p.c_str(), (directory ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC));
  if (!fd) throw octo::error(p.string() + ": cannot open to sync: " + errno_text(errno));
  if (::fsync(fd.get()) != 0 && errno != EINVAL)  // some filesystems cannot sync directories
    throw octo::error(p.string() + ": fsync failed: " + errno_text(errno));
}

}  // namespace octo::stream::detail
