// file_io: how octo opens the files it is given and writes the files it is asked for.
// Reading: never blocks on a FIFO or a device, refuses anything but a regular file, bounds what it
// loads into memory. Writing (--dump-logits, convert's GGUF, a .npy): into a new temporary sibling,
// renamed over the target only when complete, so a failure or a crash never leaves the target
// truncated or half-written, and nothing but the target itself is ever replaced.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

namespace octo {

/// Opens `path` read-only (O_NONBLOCK, so a FIFO or a device cannot hang the call) and returns the
/// descriptor if it is a regular file; otherwise octo::error, one line naming the path and its type.
/// `flags` are added to O_RDONLY | O_CLOEXEC (O_DIRECT, for example). The caller closes it.
int open_regular_file(const std::filesystem::path& path, int flags = 0);

/// The whole of a regular file (JSON, a template) as text; octo::error naming the path when it is not
/// a regular file, cannot be read, or holds more than `max_bytes`.
std::string read_file_text(const std::filesystem::path& path, std::uint64_t max_bytes = std::uint64_t(1) << 30);

/// Throws octo::error (one line naming the path) unless a file could be written at `path` later: its
/// folder exists and is writable and `path` is not a directory, a FIFO or a device. Touches nothing,
/// so a command can check its output before the slow work without emptying an existing file.
void check_output_path(const std::filesystem::path& path);

/// Makes SIGINT and SIGTERM remove every output_file temporary still open before the process dies of
/// the signal (a command line tool calls it once; a library never installs signal handlers itself).
void remove_temporaries_on_signals();

/// A file being written at `path`: bytes go to PATH.tmp-PID-RANDOM (created exclusively: an existing
/// file of that name is never reused), commit() fsyncs it and renames it over `path`. Destroyed without
/// commit() (an error, an exception), the temporary is removed and `path` is untouched.
/// @code
///   octo::output_file out("logits.npy");
///   out.write(header);
///   out.write(data);
///   out.commit();
/// @endcode
class output_file {
 public:
  explicit output_file(std::filesystem::path path);
  output_file(output_file&& o) noexcept;
  output_file& operator=(output_file&&) = delete;
  output_file(const output_file&) = delete;
  output_file& operator=(const output_file&) = delete;
  ~output_file();

  /// Appends `bytes`; octo::error naming the path on a write error (a full disk, for example).
  void write(std::span<const std::byte> bytes);
  /// Flushes, fsyncs and renames the file into place; octo::error naming the path when it cannot.
  void commit();

  const std::filesystem::path& path() const { return path_; }
  const std::filesystem::path& temporary() const { return tmp_; }

 private:
  std::filesystem::path path_, tmp_;
  int fd_ = -1;
  int slot_ = -1;  // in the signal handler's list of temporaries
};

}  // namespace octo
