// layer_reader: reads one file of a decomposed model (a layer, the embedding, the head) into a buffer the
// caller owns (pinned staging memory): pread with O_DIRECT where the filesystem allows, zstd decoded, checked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "octo/stream/manifest.hpp"

namespace octo::stream {

/// When a reader recomputes a file's XXH3 (reading is memory-bandwidth bound; hashing costs ~10% of it).
enum class checksum_policy : std::uint8_t {
  always,      // every read
  first_load,  // the first read of each file by this reader (later reads trust the disk) — the default
  never,
};

struct reader_options {
  bool direct_io = true;  // O_DIRECT; falls back to buffered reads where the filesystem refuses it (EINVAL)
  checksum_policy verify = checksum_policy::first_load;
  std::uint64_t chunk_bytes = std::uint64_t(8) << 20;  // pread size per call (a multiple of io_alignment)
};

/// Reads manifest files into caller buffers. One reader is used by one thread at a time (the prefetcher's
/// thread, or the caller's); separate readers may run in parallel. The manifest must outlive it.
/// @code
///   octo::stream::layer_reader r(m);
///   auto need = octo::stream::layer_reader::buffer_bytes(m.layer_file(3));  // <= m.max_layer_bytes()
///   r.read_layer(3, std::span(pinned.data, need));   // 4096-aligned pinned memory
/// @endcode
class layer_reader {
 public:
  explicit layer_reader(const manifest& m, reader_options o = {});
  ~layer_reader();
  layer_reader(const layer_reader&) = delete;
  layer_reader& operator=(const layer_reader&) = delete;

  /// Capacity a destination buffer needs for `f`: its raw bytes (already a multiple of io_alignment).
  static std::uint64_t buffer_bytes(const file_entry& f) { return f.raw_bytes; }

  /// Reads `f`'s raw (decompressed) bytes into dst[0, f.raw_bytes). `dst` must hold buffer_bytes(f);
  /// direct I/O needs dst.data() aligned to io_alignment (otherwise the read is buffered). Throws
  /// octo::error naming the file on: missing file, wrong size, short read, I/O error, bad zstd data,
  /// checksum mismatch. Returns f.raw_bytes.
  std::uint64_t read(const file_entry& f, std::span<std::byte> dst);
  std::uint64_t read_layer(std::int64_t layer, std::span<std::byte> dst) { return read(m_.layer_file(layer), dst); }

  const manifest& source() const { return m_; }
  /// Whether the last read used O_DIRECT (false after a fallback to buffered I/O).
  bool last_read_direct() const { return last_direct_; }
  std::uint64_t bytes_read() const { return bytes_read_; }  // stored bytes read from disk so far

 private:
  const manifest& m_;
  reader_options o_;
  std::vector<bool> verified_;        // per file index: checksum already checked (first_load)
  std::byte* scratch_ = nullptr;      // aligned buffer for compressed bytes
  std::uint64_t scratch_bytes_ = 0;
  void* zstd_ = nullptr;              // ZSTD_DCtx*
  bool last_direct_ = false;
  std::uint64_t bytes_read_ = 0;
};

/// Reads a whole file at `path` (expected `bytes` long) into `dst` (dst.size() >= round_up(bytes, 4096)),
/// O_DIRECT when `direct` and possible; returns whether direct I/O was used. Errors name the path.
bool read_file_into(const std::filesystem::path& path, std::uint64_t bytes, std::span<std::byte> dst, bool direct,
                    std::uint64_t chunk_bytes = std::uint64_t(8) << 20);

/// An aligned heap buffer (for tests and tools; engines use the VM's pinned memory instead).
class aligned_buffer {
 public:
  aligned_buffer() = default;
  explicit aligned_buffer(std::uint64_t bytes, std::uint64_t alignment = io_alignment);
  aligned_buffer(aligned_buffer&& o) noexcept;
  aligned_buffer& operator=(aligned_buffer&& o) noexcept;
  ~aligned_buffer();
  std::byte* data() const { return p_; }
  std::uint64_t size() const { return n_; }
  std::span<std::byte> span() const { return {p_, std::size_t(n_)}; }

 private:
  std::byte* p_ = nullptr;
  std::uint64_t n_ = 0;
  std::uint64_t al_ = io_alignment;
};

}  // namespace octo::stream
