// layer_reader: whole-file reads with pread (O_DIRECT when the filesystem and the buffer allow it), the
// checksum computed chunk by chunk while the data is cache-hot, zstd frames decoded into the caller's buffer.
#include "octo/stream/layer_reader.hpp"

#include <zstd.h>

#include <algorithm>
#include <cstdlib>
#include <new>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "octo/error.hpp"
#include "posix_io.hpp"

namespace octo::stream {

namespace {

bool aligned(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % io_alignment == 0; }

// Reads `bytes` of `path` into dst; hashes what it reads into `hash` when given. Returns whether O_DIRECT
// was used. A file of another size, a short read or an I/O error throws naming the path.
bool read_whole(const std::filesystem::path& path, std::uint64_t bytes, std::span<std::byte> dst, bool direct,
                std::uint64_t chunk, XXH3_state_t* hash) {
  if (dst.size() < bytes)
    throw octo::error(path.string() + ": destination buffer of " + std::to_string(dst.size()) + " bytes is too small for " +
                      std::to_string(bytes));
  chunk = std::max<std::uint64_t>(round_up(chunk, io_alignment), io_alignment);
  // O_DIRECT transfers whole 4096-byte blocks into an aligned buffer: only when dst can take them.
  bool use_direct = direct && aligned(dst.data()) && dst.size() >= round_up(bytes, io_alignment);
  detail::fd_handle fd;
  if (use_direct) {
    fd = detail::fd_handle(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT));
    if (!fd && errno == EINVAL) use_direct = false;  // the filesystem has no direct I/O (tmpfs)
    else if (!fd) throw octo::error(path.string() + ": cannot open: " + detail::errno_text(errno));
  }
  if (!use_direct) {
    fd = detail::fd_handle(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) throw octo::error(path.string() + ": cannot open: " + detail::errno_text(errno));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw octo::error(path.string() + ": cannot stat: " + detail::errno_text(errno));
  if (!S_ISREG(st.st_mode)) throw octo::error(path.string() + ": not a regular file");
  if (std::uint64_t(st.st_size) != bytes)
    throw octo::error(path.string() + ": " + std::to_string(st.st_size) + " bytes, the manifest says " +
                      std::to_string(bytes) + " (truncated or replaced)");
  if (hash) XXH3_64bits_reset(hash);
  std::uint64_t done = 0;
  while (done < bytes) {
    const std::uint64_t want = use_direct ? std::min(chunk, round_up(bytes - done, io_alignment))
                                          : std::min(chunk, bytes - done);
    const ssize_t n = ::pread(fd.get(), dst.data() + done, std::size_t(want), off_t(done));
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EINVAL && use_direct) {
        // Some filesystems accept O_DIRECT at open and refuse the read (or return a partial block, leaving
        // the next offset unaligned): continue with buffered reads from where we are.
        fd = detail::fd_handle(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
        if (!fd) throw octo::error(path.string() + ": cannot open: " + detail::errno_text(errno));
        use_direct = false;
        continue;
      }
      throw octo::error(path.string() + ": read error at byte " + std::to_string(done) + ": " + detail::errno_text(errno));
    }
    if (n == 0)
      throw octo::error(path.string() + ": short read: the file ended after " + std::to_string(done) + " of " +
                        std::to_string(bytes) + " bytes");
    const std::uint64_t got = std::min<std::uint64_t>(std::uint64_t(n), bytes - done);
    if (hash) XXH3_64bits_update(hash, dst.data() + done, std::size_t(got));
    done += got;
  }
  return use_direct;
}

struct xxh_state {
  XXH3_state_t* s = XXH3_createState();
  ~xxh_state() { XXH3_freeState(s); }
};

}  // namespace

bool read_file_into(const std::filesystem::path& path, std::uint64_t bytes, std::span<std::byte> dst, bool direct,
                    std::uint64_t chunk_bytes) {
  return read_whole(path, bytes, dst, direct, chunk_bytes, nullptr);
}

// ---- aligned_buffer ---------------------------------------------------------------------------------------

aligned_buffer::aligned_buffer(std::uint64_t bytes, std::uint64_t alignment) : n_(bytes) {
  if (bytes == 0) return;
  p_ = static_cast<std::byte*>(::operator new(std::size_t(round_up(bytes, alignment)), std::align_val_t(alignment)));
  al_ = alignment;
}
aligned_buffer::aligned_buffer(aligned_buffer&& o) noexcept
    : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)), al_(o.al_) {}
aligned_buffer& aligned_buffer::operator=(aligned_buffer&& o) noexcept {
  if (this != &o) {
    if (p_) ::operator delete(p_, std::align_val_t(al_));
    p_ = std::exchange(o.p_, nullptr);
    n_ = std::exchange(o.n_, 0);
    al_ = o.al_;
  }
  return *this;
}
aligned_buffer::~aligned_buffer() {
  if (p_) ::operator delete(p_, std::align_val_t(al_));
}

// ---- layer_reader -----------------------------------------------------------------------------------------

layer_reader::layer_reader(const manifest& m, reader_options o) : m_(m), o_(o), verified_(m.files().size(), false) {}

layer_reader::~layer_reader() {
  if (zstd_) ZSTD_freeDCtx(static_cast<ZSTD_DCtx*>(zstd_));
  if (scratch_) ::operator delete(scratch_, std::align_val_t(io_alignment));
}

std::uint64_t layer_reader::read(const file_entry& f, std::span<std::byte> dst) {
  const auto path = m_.path_of(f);
  if (dst.size() < f.raw_bytes)
    throw octo::error(path.string() + ": destination buffer of " + std::to_string(dst.size()) +
                      " bytes is too small for its " + std::to_string(f.raw_bytes) + " bytes");
  const auto files = m_.files();
  const bool listed = &f >= files.data() && &f < files.data() + files.size();
  const std::size_t index = listed ? std::size_t(&f - files.data()) : 0;
  const bool check = o_.verify == checksum_policy::always ||
                     (o_.verify == checksum_policy::first_load && (!listed || !verified_[index]));
  xxh_state hash;
  if (check && !hash.s) throw std::bad_alloc();

  if (f.comp == compression::none) {
    last_direct_ = read_whole(path, f.stored_bytes, dst, o_.direct_io, o_.chunk_bytes, check ? hash.s : nullptr);
  } else {
    const std::uint64_t need = round_up(f.stored_bytes, io_alignment);
    if (scratch_bytes_ < need) {
      if (scratch_) ::operator delete(scratch_, std::align_val_t(io_alignment));
      scratch_ = nullptr;
      scratch_bytes_ = 0;
      scratch_ = static_cast<std::byte*>(::operator new(std::size_t(need), std::align_val_t(io_alignment)));
      scratch_bytes_ = need;
    }
    last_direct_ = read_whole(path, f.stored_bytes, {scratch_, std::size_t(scratch_bytes_)}, o_.direct_io,
                              o_.chunk_bytes, check ? hash.s : nullptr);
  }
  bytes_read_ += f.stored_bytes;
  if (check) {
    const auto h = XXH3_64bits_digest(hash.s);
    if (h != f.xxh3)
      throw octo::error(path.string() + ": checksum mismatch (XXH3 " + hex64(h) + ", the manifest says " + hex64(f.xxh3) +
                        "): the file is corrupt");
  }
  if (f.comp == compression::zstd) {
    if (!zstd_) {
      zstd_ = ZSTD_createDCtx();
      if (!zstd_) throw std::bad_alloc();
    }
    const std::size_t r = ZSTD_decompressDCtx(static_cast<ZSTD_DCtx*>(zstd_), dst.data(), std::size_t(f.raw_bytes), scratch_,
                                              std::size_t(f.stored_bytes));
    if (ZSTD_isError(r))
      throw octo::error(path.string() + ": zstd data is corrupt: " + ZSTD_getErrorName(r));
    if (r != f.raw_bytes)
      throw octo::error(path.string() + ": zstd data decodes to " + std::to_string(r) + " bytes, the manifest says " +
                        std::to_string(f.raw_bytes));
  }
  if (check && listed) verified_[index] = true;
  return f.raw_bytes;
}

}  // namespace octo::stream
