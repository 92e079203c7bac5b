// file_io: non-blocking opens of regular files; output_file (temporary sibling created with O_EXCL,
// fsync, rename) and its signal-safe list of temporaries; check_output_path (stat-only checks).
#include "octo/file_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <utility>

#include "octo/error.hpp"

namespace octo {

namespace {

std::string text_of(int e) { return std::strerror(e); }

std::filesystem::path folder_of(const std::filesystem::path& p) {
  return p.parent_path().empty() ? std::filesystem::path(".") : p.parent_path();
}

// The temporaries open now, for the signal handler: fixed slots written before the file exists and
// cleared after it is gone, read with only async-signal-safe calls.
constexpr int slot_count = 16;
constexpr std::size_t slot_bytes = 4096;
char slots[slot_count][slot_bytes];
std::atomic<bool> slot_used[slot_count];

int claim_slot(const std::string& tmp) {
  if (tmp.size() >= slot_bytes) return -1;  // not removed on a signal; removed on every other exit
  for (int i = 0; i < slot_count; ++i) {
    bool expected = false;
    if (!slot_used[i].load() && slot_used[i].compare_exchange_strong(expected, true)) {
      std::memcpy(slots[i], tmp.c_str(), tmp.size() + 1);
      return i;
    }
  }
  return -1;
}

void release_slot(int i) {
  if (i >= 0) slot_used[i].store(false);
}

extern "C" void octo_remove_temporaries_and_die(int sig) {
  for (int i = 0; i < slot_count; ++i)
    if (slot_used[i].load()) ::unlink(slots[i]);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

}  // namespace

std::string_view type_of(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

int open_regular_file(const std::filesystem::path& path, int flags) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | flags);
  if (fd < 0) throw octo::error(path.string() + ": cannot open: " + text_of(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const int e = errno;
    const bool stat_failed = st.st_mode == 0;
    ::close(fd);
    if (stat_failed) throw octo::error(path.string() + ": cannot stat: " + text_of(e));
    throw octo::error(path.string() + ": is " + std::string(type_of(st.st_mode)) + ", not a regular file");
  }
  // Regular files ignore O_NONBLOCK, but clear it so reads behave as everyone expects.
  const int fl = ::fcntl(fd, F_GETFL);
  if (fl >= 0) ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  return fd;
}

std::string read_file_text(const std::filesystem::path& path, std::uint64_t max_bytes) {
  const int fd = open_regular_file(path);
  struct stat st {};
  ::fstat(fd, &st);
  if (std::uint64_t(st.st_size) > max_bytes) {
    ::close(fd);
    throw octo::error(path.string() + ": " + std::to_string(st.st_size) + " bytes, more than the " +
                      std::to_string(max_bytes) + " this file may hold");
  }
  std::string out(std::size_t(st.st_size), '\0');
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::read(fd, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = errno;
      ::close(fd);
      throw octo::error(path.string() + (n < 0 ? ": read failed: " + text_of(e) : std::string(": shrank while being read")));
    }
    done += std::size_t(n);
  }
  ::close(fd);
  return out;
}

void remove_temporaries_on_signals() {
  std::signal(SIGINT, octo_remove_temporaries_and_die);
  std::signal(SIGTERM, octo_remove_temporaries_and_die);
}

void check_output_path(const std::filesystem::path& path) {
  if (path.empty() || path.filename().empty()) throw octo::error("'" + path.string() + "': not a file name");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw octo::error(path.string() + ": is a directory");
    if (!S_ISREG(st.st_mode)) throw octo::error(path.string() + ": not a regular file (octo writes files by renaming)");
  }
  const auto folder = folder_of(path);
  if (::stat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw octo::error(path.string() + ": its folder " + folder.string() + " does not exist");
  if (::access(folder.c_str(), W_OK | X_OK) != 0)
    throw octo::error(path.string() + ": cannot write in " + folder.string() + ": " + text_of(errno));
}

output_file::output_file(std::filesystem::path path) : path_(std::move(path)) {
  check_output_path(path_);
  std::random_device rd;
  for (int attempt = 0; attempt < 16 && fd_ < 0; ++attempt) {
    char suffix[32];
    std::snprintf(suffix, sizeof suffix, ".tmp-%ld-%08x", long(::getpid()), unsigned(rd()));
    tmp_ = path_.string() + suffix;
    slot_ = claim_slot(tmp_.string());
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd_ >= 0) break;
    const int e = errno;
    release_slot(std::exchange(slot_, -1));
    if (e != EEXIST) throw octo::error(tmp_.string() + ": cannot create: " + text_of(e));
  }
  if (fd_ < 0) throw octo::error(path_.string() + ": cannot find a free temporary name beside it");
}

output_file::output_file(output_file&& o) noexcept
    : path_(std::move(o.path_)), tmp_(std::move(o.tmp_)), fd_(std::exchange(o.fd_, -1)), slot_(std::exchange(o.slot_, -1)) {}

output_file::~output_file() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(tmp_.c_str());
  }
  release_slot(slot_);
}

void output_file::write(std::span<const std::byte> bytes) {
  if (fd_ < 0) throw octo::error(path_.string() + ": already committed");
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw octo::error(path_.string() + ": write failed: " + (n < 0 ? text_of(errno) : "no progress"));
    done += std::size_t(n);
  }
}

void output_file::commit() {
  if (fd_ < 0) throw octo::error(path_.string() + ": already committed");
  if (::fsync(fd_) != 0) throw octo::error(path_.string() + ": write failed: " + text_of(errno));
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) {
    const int e = errno;
    ::unlink(tmp_.c_str());
    throw octo::error(path_.string() + ": write failed: " + text_of(e));
  }
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp_.c_str());
    throw octo::error(path_.string() + ": cannot rename the finished file into place: " + text_of(e));
  }
  release_slot(std::exchange(slot_, -1));  // the name is the user's file now: a signal must not remove it
  // The rename itself is durable once the folder is synced; a failure here loses nothing already visible.
  const int dir = ::open(folder_of(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

}  // namespace octo
