// manifest: the index of a decomposed model directory (`octo decompose`): the model's config, the GGUF it
// came from, every file with its sizes, compression and XXH3-64 checksum, and where each tensor lives.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "octo/ir/enums.hpp"

namespace octo::stream {

/// The manifest's "format" and "version"; a directory with another version is refused, not guessed at.
inline constexpr std::string_view manifest_format = "octo-decomposed-model";
inline constexpr std::int64_t manifest_version = 1;
/// Direct I/O granularity: every file's raw size and every buffer handed to a reader are multiples of it.
inline constexpr std::uint64_t io_alignment = 4096;

inline constexpr std::uint64_t round_up(std::uint64_t n, std::uint64_t a) { return (n + a - 1) / a * a; }

enum class compression : std::uint8_t { none, zstd };
std::string_view name(compression c);  // "none", "zstd"

/// What a file holds: the token embedding, the head (final norm, output.weight when untied, any other
/// tensor outside the blocks), or one transformer block.
enum class file_role : std::uint8_t { embed, head, layer };

/// The model config as octo::runtime::config_from_gguf read it (models::model_config's fields, kept as
/// plain values because this layer does not know octo::models; octo/runtime/decomposed.hpp converts).
struct stored_config {
  std::string architecture;  // "llama", "qwen2", "qwen3"
  std::int64_t vocab = 0, hidden = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, ffn = 0;
  double rope_theta = 0.0, rms_eps = 0.0;
  bool tied_embeddings = false, qkv_bias = false, qk_norm = false;
  std::string rope;                  // "neox" or "interleaved"
  // RoPE frequency scaling (models::model_config::rope_ramp; "rope_ramp": [low_scale, slope, offset] in
  // the manifest, absent where there is none): the defaults scale nothing.
  double rope_low_scale = 1.0, rope_ramp_slope = 0.0, rope_ramp_offset = 0.0;
  std::int64_t max_ctx = 0;          // config_from_gguf's default KV length (min(context_length, 4096))
  std::int64_t context_length = 0;   // the model's trained context (GGUF <arch>.context_length)
  ir::dtype weight_dtype = ir::dtype::f16;
  bool operator==(const stored_config&) const = default;
};

/// The GGUF a directory was made from: a directory is only used with the model version it came from.
struct source_info {
  std::string name;              // file name (no directory)
  std::uint64_t bytes = 0;       // file size
  std::uint64_t header_xxh3 = 0; // XXH3-64 of the header, metadata and tensor directory (bytes before data)
  bool operator==(const source_info&) const = default;
};

struct file_entry {
  std::string name;                 // relative to the directory: "layer_000.bin"
  file_role role = file_role::layer;
  std::int64_t layer = -1;          // block index for role layer, else -1
  std::uint64_t stored_bytes = 0;   // size on disk
  std::uint64_t raw_bytes = 0;      // size after decompression (== stored_bytes when uncompressed); a
                                    // multiple of io_alignment
  compression comp = compression::none;
  std::uint64_t xxh3 = 0;           // XXH3-64 of the stored bytes (the file as it is on disk)
  std::vector<std::size_t> tensors; // indices into manifest::tensors(), in file order
};

struct tensor_entry {
  std::string name;                 // GGUF name: "blk.3.attn_q.weight"
  std::uint32_t ggml_type = 0;      // GGML type id as in GGUF
  std::vector<std::int64_t> dims;   // GGUF order (ne0 fastest)
  std::size_t file = 0;             // index into manifest::files()
  std::uint64_t offset = 0;         // inside the file's raw (decompressed) bytes; aligned to tensor_alignment
  std::uint64_t bytes = 0;
};

/// 16 lower-case hex digits, as the manifest stores checksums.
std::string hex64(std::uint64_t v);
/// XXH3-64 (seed 0) of `bytes`, the checksum the manifest uses.
std::uint64_t xxh3_64(std::span<const std::byte> bytes);
/// XXH3-64 of a whole file, streamed; throws octo::error naming the file when it cannot be read.
std::uint64_t xxh3_64_file(const std::filesystem::path& path);
/// Name, size and header checksum of a GGUF file (reads only the header region, by parsing it).
source_info describe_source(const std::filesystem::path& gguf);

/// How much manifest::load checks beyond the JSON itself.
enum class verify_level : std::uint8_t {
  sizes,      // every listed file exists with its stored size (cheap; the default)
  checksums,  // ... and its XXH3 matches (reads every byte)
};

/// A decomposed model directory's manifest.json, validated.
/// @code
///   auto m = octo::stream::manifest::load("models/qwen-7b.octo");
///   const auto& l3 = m.layer_file(3);             // name, raw_bytes, tensors
///   const auto* q = m.find_tensor("blk.3.attn_q.weight");  // q->offset inside l3's raw bytes
/// @endcode
class manifest {
 public:
  /// Reads and validates DIR/manifest.json; any problem throws octo::error with one line naming the
  /// directory and the problem (missing file, wrong size, bad JSON, wrong version, checksum mismatch
  /// naming the file, ...).
  static manifest load(const std::filesystem::path& dir, verify_level level = verify_level::sizes);
  /// Parses manifest text (no file checks); `dir` is where its files are expected.
  static manifest parse(std::string_view json_text, const std::filesystem::path& dir);
  /// The manifest as JSON text (what load() reads back).
  std::string to_json() const;

  const std::filesystem::path& directory() const { return dir_; }
  std::filesystem::path path_of(const file_entry& f) const { return dir_ / f.name; }
  const stored_config& config() const { return config_; }
  const source_info& source() const { return source_; }
  std::uint64_t tensor_alignment() const { return tensor_alignment_; }
  std::string_view meta_gguf() const { return meta_.name; }  // "meta.gguf": metadata, tokenizer, no tensors
  /// meta.gguf's entry (its sizes and checksum; it holds no tensors and is not a multiple of 4096).
  const file_entry& meta_file() const { return meta_; }

  std::span<const file_entry> files() const { return files_; }
  std::span<const tensor_entry> tensors() const { return tensors_; }
  std::int64_t layer_count() const { return std::int64_t(layer_files_.size()); }
  const file_entry& layer_file(std::int64_t layer) const;  // octo::error when out of range
  const file_entry& embed_file() const { return files_[embed_index_]; }
  const file_entry& head_file() const { return files_[head_index_]; }
  const file_entry* find_file(std::string_view name) const;
  const tensor_entry* find_tensor(std::string_view name) const;
  const file_entry& file_of(const tensor_entry& t) const { return files_[t.file]; }
  /// The largest raw size among layer files: the size of a staging buffer / device slot for any layer.
  std::uint64_t max_layer_bytes() const;
  /// Sum of all files' raw / stored bytes.
  std::uint64_t total_raw_bytes() const;
  std::uint64_t total_stored_bytes() const;

  /// Throws octo::error unless `src` (describe_source of a GGUF) is the file this directory came from.
  void check_source(const source_info& src) const;
  /// Recomputes the checksum of `f` (reads the whole file); octo::error naming the file on mismatch.
  void verify_file(const file_entry& f) const;
  void verify_all() const;

  // ---- building (used by decompose) ---------------------------------------------------------------
  manifest() = default;
  /// Checks consistency (octo::error otherwise); file_entry::tensors is rebuilt from the tensors.
  manifest(std::filesystem::path dir, stored_config config, source_info source, std::uint64_t tensor_alignment,
           file_entry meta, std::vector<file_entry> files, std::vector<tensor_entry> tensors);

 private:
  void index();  // checks consistency and builds the lookup tables; octo::error on problems
  [[noreturn]] void fail(const std::string& problem) const;

  std::filesystem::path dir_;
  stored_config config_;
  source_info source_;
  std::uint64_t tensor_alignment_ = io_alignment;
  file_entry meta_;
  std::vector<file_entry> files_;
  std::vector<tensor_entry> tensors_;
  std::vector<std::size_t> layer_files_;
  std::size_t embed_index_ = 0;
  std::size_t head_index_ = 0;
};

}  // namespace octo::stream
