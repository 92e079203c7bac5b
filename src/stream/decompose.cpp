// decompose: GGUF -> decomposed directory. Tensor bytes are copied with pread from the source (bounded
// memory, any GGML type), hashed (and zstd-compressed) as they are written; everything lands in a
// temporary sibling directory that is fsynced and renamed over OUTDIR only when complete.
#include "octo/stream/decompose.hpp"

#include <signal.h>
#include <stdio.h>
#include <zstd.h>

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <vector>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "octo/error.hpp"
#include "octo/file_io.hpp"
#include "octo/model_file/gguf_writer.hpp"
#include "posix_io.hpp"

namespace octo::stream {

namespace fs = std::filesystem;

tensor_placement place_tensor(std::string_view n) {
  if (n == "token_embd.weight") return {file_role::embed, -1};
  if (n.starts_with("blk.")) {
    const auto rest = n.substr(4);
    std::int64_t layer = 0;
    const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), layer);
    if (ec == std::errc() && end != rest.data() && end < rest.data() + rest.size() && *end == '.' && layer >= 0)
      return {file_role::layer, layer};
  }
  return {file_role::head, -1};
}

std::string layer_file_name(std::int64_t layer) {
  std::string digits = std::to_string(layer);
  while (digits.size() < 3) digits.insert(digits.begin(), '0');
  return "layer_" + digits + ".bin";
}

namespace {

constexpr std::size_t copy_chunk = std::size_t(4) << 20;

struct xxh_state {
  XXH3_state_t* s = XXH3_createState();
  xxh_state() {
    if (!s) throw std::bad_alloc();
    XXH3_64bits_reset(s);
  }
  ~xxh_state() { XXH3_freeState(s); }
};

// Receives a file's raw bytes in order; stores them (optionally zstd-compressed), hashing what is stored.
class file_sink {
 public:
  file_sink(fs::path path, bool zstd, int level, std::uint64_t raw_total) : path_(std::move(path)) {
    fd_ = detail::fd_handle(::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
    if (!fd_) throw octo::error(path_.string() + ": cannot create: " + detail::errno_text(errno));
    if (zstd) {
      cctx_ = ZSTD_createCCtx();
      if (!cctx_) throw std::bad_alloc();
      check(ZSTD_CCtx_setParameter(cctx_, ZSTD_c_compressionLevel, level));
      check(ZSTD_CCtx_setPledgedSrcSize(cctx_, raw_total));
      out_.resize(ZSTD_CStreamOutSize());
    }
  }
  ~file_sink() {
    if (cctx_) ZSTD_freeCCtx(cctx_);
  }
  file_sink(const file_sink&) = delete;
  file_sink& operator=(const file_sink&) = delete;

  void put(std::span<const std::byte> raw) {
    raw_ += raw.size();
    if (!cctx_) return store(raw);
    ZSTD_inBuffer in{raw.data(), raw.size(), 0};
    while (in.pos < in.size) drain(&in, ZSTD_e_continue);
  }
  void zeros(std::uint64_t n) {
    static const std::vector<std::byte> z(64 * 1024);
    while (n > 0) {
      const auto k = std::min<std::uint64_t>(n, z.size());
      put({z.data(), std::size_t(k)});
      n -= k;
    }
  }
  std::uint64_t raw_bytes() const { return raw_; }
  /// Flushes, fsyncs and closes; returns {stored bytes, XXH3 of them}.
  std::pair<std::uint64_t, std::uint64_t> finish() {
    if (cctx_) {
      ZSTD_inBuffer in{nullptr, 0, 0};
      while (drain(&in, ZSTD_e_end) != 0) {
      }
    }
    if (::fsync(fd_.get()) != 0) throw octo::error(path_.string() + ": fsync failed: " + detail::errno_text(errno));
    fd_.close_checked(path_);
    return {stored_, XXH3_64bits_digest(hash_.s)};
  }

 private:
  void check(std::size_t r) {
    if (ZSTD_isError(r)) throw octo::error(path_.string() + ": zstd: " + ZSTD_getErrorName(r));
  }
  std::size_t drain(ZSTD_inBuffer* in, ZSTD_EndDirective mode) {
    ZSTD_outBuffer out{out_.data(), out_.size(), 0};
    const std::size_t left = ZSTD_compressStream2(cctx_, &out, in, mode);
    check(left);
    store({out_.data(), out.pos});
    return left;
  }
  void store(std::span<const std::byte> b) {
    detail::write_all(fd_.get(), b, path_);
    XXH3_64bits_update(hash_.s, b.data(), b.size());
    stored_ += b.size();
  }

  fs::path path_;
  detail::fd_handle fd_;
  ZSTD_CCtx* cctx_ = nullptr;
  std::vector<std::byte> out_;
  xxh_state hash_;
  std::uint64_t raw_ = 0, stored_ = 0;
};

std::string random_hex() {
  std::random_device rd;
  return hex64((std::uint64_t(rd()) << 32) ^ rd()).substr(0, 8);
}


// OUTDIR.tmp-PID-XXXX directories whose PID no longer runs are leftovers of interrupted runs.
void remove_stale_temporaries(const fs::path& out_dir) {
  const fs::path parent = out_dir.parent_path().empty() ? fs::path(".") : out_dir.parent_path();
  const std::string prefix = out_dir.filename().string() + ".tmp-";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(parent, ec)) {
    const std::string n = e.path().filename().string();
    if (!n.starts_with(prefix)) continue;
    const std::string_view rest = std::string_view(n).substr(prefix.size());
    long pid = 0;
    const auto [end, perr] = std::from_chars(rest.data(), rest.data() + rest.size(), pid);
    if (perr != std::errc() || end == rest.data() || *end != '-' || pid <= 0) continue;
    if (::kill(pid_t(pid), 0) == 0 || errno != ESRCH) continue;  // still running (or not ours to judge)
    std::error_code rm;
    fs::remove_all(e.path(), rm);
  }
}

// Why `dir` (non-empty) is not a directory decompose may replace, or nullopt when it is one: its
// manifest.json says it is an octo decomposition and it holds nothing but the files decompose writes. A
// user's folder that merely contains a manifest.json, or a decomposition with anything added, is kept.
std::optional<std::string> not_a_decomposition(const fs::path& dir) {
  std::string format;
  try {
    if (!fs::exists(fs::symlink_status(dir / "manifest.json"))) return "no manifest.json";
    const auto j = nlohmann::json::parse(read_file_text(dir / "manifest.json", std::uint64_t(1) << 30));
    if (j.is_object() && j.contains("format") && j["format"].is_string()) format = j["format"].get<std::string>();
  } catch (const std::exception&) {
    return "its manifest.json is not JSON";
  }
  if (format != manifest_format) return "its manifest.json is not an octo manifest";
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string n = it->path().filename().string();
    const bool ours = n == "manifest.json" || n == "meta.gguf" || n == "embed.bin" || n == "head.bin" ||
                      (n.starts_with("layer_") && n.ends_with(".bin") && n.size() > 10 &&
                       std::all_of(n.begin() + 6, n.end() - 4, [](char c) { return c >= '0' && c <= '9'; }));
    if (!ours || !it->is_regular_file(ec) || it->is_symlink(ec)) return "it holds " + octo::quoted(n, 80) + ", which decompose does not write";
  }
  if (ec) return "cannot list it: " + ec.message();
  return std::nullopt;
}

bool same_layout(const manifest& m, const source_info& src, const stored_config& config, const decompose_options& o) {
  if (!(m.source() == src) || !(m.config() == config) || m.tensor_alignment() != o.alignment) return false;
  for (const auto& f : m.files())
    if (f.role == file_role::layer && (f.comp == compression::zstd) != o.zstd) return false;
  return true;
}

void read_exact(int fd, std::byte* dst, std::size_t n, std::uint64_t at, const fs::path& p) {
  std::size_t done = 0;
  while (done < n) {
    const ssize_t r = ::pread(fd, dst + done, n - done, off_t(at + done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw octo::error(p.string() + ": read error: " + detail::errno_text(errno));
    if (r == 0) throw octo::error(p.string() + ": ended early (truncated while reading?)");
    done += std::size_t(r);
  }
}

struct planned_file {
  file_entry entry;
  std::vector<std::size_t> gguf_tensors;  // indices into gguf.tensors(), in file order
};

}  // namespace

decompose_outcome decompose(const model_file::gguf_file& gguf, const fs::path& gguf_path, const fs::path& out_dir_in,
                            const stored_config& config, const decompose_options& o) {
  if (o.alignment < 16 || o.alignment > (1u << 20) || (o.alignment & (o.alignment - 1)) != 0)
    throw octo::error("alignment " + std::to_string(o.alignment) + " is not a power of two from 16 to 1048576");
  if (o.zstd && (o.zstd_level < 1 || o.zstd_level > ZSTD_maxCLevel()))
    throw octo::error("zstd level " + std::to_string(o.zstd_level) + " is outside 1.." + std::to_string(ZSTD_maxCLevel()));
  if (config.layers <= 0) throw octo::error("the model config has no layers");
  fs::path out_dir = out_dir_in;
  if (out_dir.filename().empty()) out_dir = out_dir.parent_path();  // "dir/" -> "dir"
  if (out_dir.empty()) throw octo::error("empty output directory name");

  const source_info src = describe_source(gguf_path);
  remove_stale_temporaries(out_dir);

  // An existing OUTDIR: keep it when it is this decomposition, complete and intact; replace it when it
  // is an octo decomposition (stale or broken); refuse anything else rather than delete user files.
  std::error_code ec;
  const bool exists = fs::exists(fs::symlink_status(out_dir, ec));
  if (exists) {
    if (fs::is_symlink(fs::symlink_status(out_dir, ec)) || !fs::is_directory(out_dir, ec))
      throw octo::error(out_dir.string() + " exists and is not a directory");
    if (!fs::is_empty(out_dir, ec)) {
      if (const auto why = not_a_decomposition(out_dir))
        throw octo::error(out_dir.string() + " is not a decomposed model directory (" + *why +
                          "); refusing to replace it: remove it or choose another OUTDIR");
      try {
        const auto m = manifest::load(out_dir);
        if (same_layout(m, src, config, o)) {
          m.verify_all();
          return decompose_outcome::kept;
        }
      } catch (const octo::error&) {
        // a damaged octo decomposition, or one from another version: rebuilt below
      }
    }
  }

  // ---- plan: which tensor goes where, at which offset --------------------------------------------------
  const auto infos = gguf.tensors();
  std::vector<planned_file> plan;
  plan.push_back({{"embed.bin", file_role::embed, -1, 0, 0, compression::none, 0, {}}, {}});
  plan.push_back({{"head.bin", file_role::head, -1, 0, 0, compression::none, 0, {}}, {}});
  for (std::int64_t l = 0; l < config.layers; ++l)
    plan.push_back({{layer_file_name(l), file_role::layer, l, 0, 0, o.zstd ? compression::zstd : compression::none, 0, {}},
                    {}});
  std::vector<tensor_entry> tensors;
  std::uint64_t bytes_total = 0;
  for (std::size_t i = 0; i < infos.size(); ++i) {
    const auto& t = infos[i];
    const auto place = place_tensor(t.name);
    std::size_t fi = place.role == file_role::embed ? 0 : 1;
    if (place.role == file_role::layer) {
      if (place.layer >= config.layers)
        throw octo::error(gguf_path.string() + ": tensor '" + t.name + "' belongs to layer " + std::to_string(place.layer) +
                          " but the model has " + std::to_string(config.layers) + " layers");
      fi = 2 + std::size_t(place.layer);
    }
    auto& f = plan[fi];
    const std::uint64_t offset = round_up(f.entry.raw_bytes, o.alignment);
    tensors.push_back({t.name, t.ggml_type, t.dims, fi, offset, t.size});
    f.gguf_tensors.push_back(i);
    f.entry.raw_bytes = offset + t.size;
    bytes_total += t.size;
  }
  for (auto& f : plan) f.entry.raw_bytes = round_up(f.entry.raw_bytes, io_alignment);

  // ---- write into a temporary sibling ------------------------------------------------------------------
  const fs::path tmp = out_dir.string() + ".tmp-" + std::to_string(::getpid()) + "-" + random_hex();
  if (!fs::create_directory(tmp, ec) || ec)
    throw octo::error(tmp.string() + ": cannot create the temporary directory: " + ec.message());
  try {
    detail::fd_handle in(open_regular_file(gguf_path));
    std::vector<std::byte> buf(copy_chunk);
    std::uint64_t bytes_done = 0;
    std::size_t files_done = 0;
    const std::size_t files_total = plan.size() + 2;  // + meta.gguf, manifest.json
    auto report = [&](std::string_view name) {
      ++files_done;
      if (o.progress) o.progress({name, files_done, files_total, bytes_done, bytes_total});
      if (o.after_file) o.after_file(name);
    };

    // meta.gguf first: the metadata and tokenizer, no tensors.
    file_entry meta{"meta.gguf", file_role::head, -1, 0, 0, compression::none, 0, {}};
    {
      model_file::gguf_writer w;
      for (const auto& kv : gguf.metadata()) w.set(kv.key, kv.value);
      const auto bytes = w.to_bytes();
      file_sink sink(tmp / meta.name, false, 0, bytes.size());
      sink.put(bytes);
      std::tie(meta.stored_bytes, meta.xxh3) = sink.finish();
      meta.raw_bytes = meta.stored_bytes;
      report(meta.name);
    }

    for (auto& f : plan) {
      file_sink sink(tmp / f.entry.name, f.entry.comp == compression::zstd, o.zstd_level, f.entry.raw_bytes);
      for (std::size_t k = 0; k < f.gguf_tensors.size(); ++k) {
        const auto& info = infos[f.gguf_tensors[k]];
        const auto& placed = tensors[f.gguf_tensors[k]];
        sink.zeros(placed.offset - sink.raw_bytes());
        for (std::uint64_t at = 0; at < info.size;) {
          const std::size_t n = std::size_t(std::min<std::uint64_t>(buf.size(), info.size - at));
          read_exact(in.get(), buf.data(), n, gguf.data_offset() + info.offset + at, gguf_path);
          sink.put({buf.data(), n});
          at += n;
        }
        bytes_done += info.size;
      }
      sink.zeros(f.entry.raw_bytes - sink.raw_bytes());
      std::tie(f.entry.stored_bytes, f.entry.xxh3) = sink.finish();
      report(f.entry.name);
    }

    // The manifest last: a directory without it never loads.
    std::vector<file_entry> files;
    for (auto& f : plan) files.push_back(std::move(f.entry));
    const manifest m(out_dir, config, src, o.alignment, meta, std::move(files), std::move(tensors));
    const std::string text = m.to_json();
    {
      file_sink sink(tmp / "manifest.json", false, 0, text.size());
      sink.put(std::as_bytes(std::span(text)));
      sink.finish();
      report("manifest.json");
    }
    detail::fsync_path(tmp, true);

    // ---- publish -----------------------------------------------------------------------------------
    const fs::path parent = out_dir.parent_path().empty() ? fs::path(".") : out_dir.parent_path();
    decompose_outcome outcome = decompose_outcome::created;
    if (!fs::exists(out_dir, ec)) {
      if (::rename(tmp.c_str(), out_dir.c_str()) != 0)
        throw octo::error(out_dir.string() + ": cannot rename the finished directory into place: " + detail::errno_text(errno));
    } else {
      outcome = fs::is_empty(out_dir, ec) ? decompose_outcome::created : decompose_outcome::replaced;
      // Swap atomically where the filesystem can (readers see the old or the new directory, never
      // neither); otherwise move the old one aside first.
      if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, out_dir.c_str(), RENAME_EXCHANGE) == 0) {
        fs::remove_all(tmp, ec);
      } else {
        const fs::path old = out_dir.string() + ".tmp-" + std::to_string(::getpid()) + "-old" + random_hex();
        if (::rename(out_dir.c_str(), old.c_str()) != 0)
          throw octo::error(out_dir.string() + ": cannot move the old directory aside: " + detail::errno_text(errno));
        if (::rename(tmp.c_str(), out_dir.c_str()) != 0)
          throw octo::error(out_dir.string() + ": cannot rename the finished directory into place: " +
                            detail::errno_text(errno));
        fs::remove_all(old, ec);
      }
    }
    detail::fsync_path(parent, true);
    return outcome;
  } catch (...) {
    std::error_code rm;
    fs::remove_all(tmp, rm);
    throw;
  }
}

}  // namespace octo::stream
