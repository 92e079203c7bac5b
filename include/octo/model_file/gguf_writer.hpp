// gguf_writer: builds a GGUF v3 file from metadata values and tensors (any octo weight dtype, or a raw
// GGML type id), with aligned tensor data, in memory or streamed tensor by tensor (gguf_stream).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "octo/ir/enums.hpp"
#include "octo/model_file/gguf.hpp"
#include "octo/file_io.hpp"

namespace octo::model_file {

class gguf_stream;

/// Collects metadata and tensors in insertion order and serialises them as GGUF v3.
/// @code
///   gguf_writer w;
///   w.set("general.architecture", gguf_value::of_string("llama"));
///   w.add_tensor("output_norm.weight", ir::dtype::f32, {64}, as_bytes(std::span(norm)));
///   w.write("model.gguf");
/// @endcode
class gguf_writer {
 public:
  /// `alignment` (a power of two) for tensor data; other than 32 it is recorded as general.alignment.
  explicit gguf_writer(std::uint32_t alignment = 32);

  /// Adds or replaces a metadata entry (replacing keeps its position). Nested arrays are valid GGUF and
  /// octo reads them, but ggml's reader refuses them: avoid them in files meant for llama.cpp.
  void set(std::string key, gguf_value value);
  void set_string(std::string key, std::string v) { set(std::move(key), gguf_value::of_string(std::move(v))); }
  void set_u32(std::string key, std::uint32_t v) { set(std::move(key), gguf_value::of_u32(v)); }
  void set_i32(std::string key, std::int32_t v) { set(std::move(key), gguf_value::of_i32(v)); }
  void set_u64(std::string key, std::uint64_t v) { set(std::move(key), gguf_value::of_u64(v)); }
  void set_f32(std::string key, float v) { set(std::move(key), gguf_value::of_f32(v)); }
  void set_bool(std::string key, bool v) { set(std::move(key), gguf_value::of_bool(v)); }

  /// Adds a tensor; `dims` in GGUF order (ne0 fastest); `data` must hold exactly ir::nbytes(type, n)
  /// bytes in GGUF layout and is copied. Throws octo::error on a size mismatch, a repeated name, a row
  /// length that is not a whole number of blocks, or a dtype GGUF cannot store.
  void add_tensor(std::string name, ir::dtype type, std::vector<std::int64_t> dims, std::span<const std::byte> data);
  /// Adds a tensor of any GGML type id without checking its size against a layout (test files).
  void add_tensor_raw(std::string name, std::uint32_t ggml_type, std::vector<std::int64_t> dims,
                      std::span<const std::byte> data);

  /// Declares a tensor whose ir::nbytes(type, n) bytes are supplied later, in declaration order,
  /// through the gguf_stream of stream_to(); nothing is held in memory. Checks as add_tensor.
  void declare_tensor(std::string name, ir::dtype type, std::vector<std::int64_t> dims);

  /// The whole file (throws octo::error if a tensor was only declared).
  std::vector<std::byte> to_bytes() const;
  /// Writes the file through stream_to(path).finish(): atomically, via a temporary sibling. Throws octo::error
  /// naming the path when it cannot, or if a tensor was only declared.
  void write(const std::filesystem::path& path) const;
  /// Starts writing the file to a temporary sibling of `path` (octo::output_file): header, metadata and tensor directory (offsets computed
  /// from the declared sizes) go out at once; the returned stream then takes the declared tensors'
  /// bytes in order (tensors added with data are copied out when their turn comes) and
  /// gguf_stream::finish renames the file to `path`. The writer must outlive the stream and not change.
  gguf_stream stream_to(const std::filesystem::path& path) const;

  std::size_t tensor_count() const { return tensors_.size(); }
  std::size_t metadata_count() const { return kvs_.size(); }
  /// Bytes before the first tensor's data (header, metadata, directory, padding).
  std::uint64_t data_offset() const;
  /// The size of the finished file.
  std::uint64_t file_size() const;

 private:
  friend class gguf_stream;
  struct tensor {
    std::string name;
    std::uint32_t ggml_type;
    std::vector<std::int64_t> dims;
    std::vector<std::byte> data;
    std::uint64_t size = 0;  // bytes of data (held or declared)
    bool held = true;        // false: declared, its bytes come through a gguf_stream
  };
  void add(tensor t);
  std::vector<std::byte> header_bytes() const;
  std::uint64_t padded(std::uint64_t n) const { return (n + alignment_ - 1) / alignment_ * alignment_; }

  std::uint32_t alignment_;
  std::vector<gguf_kv> kvs_;
  std::vector<tensor> tensors_;
};

/// A GGUF file being written tensor by tensor (see gguf_writer::stream_to). Memory stays bounded by
/// what the caller passes to write(); the file appears under its name only when finish() succeeds.
/// Destroying an unfinished stream deletes the temporary file.
/// @code
///   gguf_stream s = w.stream_to("model.gguf");
///   while (s.tensor_index() < w.tensor_count()) s.write(next_chunk_of_bytes());
///   s.finish();
/// @endcode
class gguf_stream {
 public:
  gguf_stream(gguf_stream&& other) noexcept;
  gguf_stream& operator=(gguf_stream&&) = delete;
  gguf_stream(const gguf_stream&) = delete;
  ~gguf_stream();

  /// Appends bytes of the current tensor (any number of calls per tensor); when a tensor is complete
  /// the stream pads to the alignment and moves on. Throws octo::error on more bytes than declared
  /// or a write failure.
  void write(std::span<const std::byte> bytes);
  /// Index of the tensor the next bytes belong to; tensor_count() when all are written.
  std::size_t tensor_index() const { return index_; }
  /// Bytes of the current tensor still expected.
  std::uint64_t remaining_in_tensor() const;
  /// Bytes in the file so far (header included).
  std::uint64_t bytes_written() const { return written_; }
  /// Checks every tensor is complete, syncs the file and renames it to `path`.
  void finish();

 private:
  friend class gguf_writer;
  gguf_stream(const gguf_writer& w, std::filesystem::path path);
  void put(const void* p, std::size_t n);
  void settle();  // pads finished tensors and copies out held ones
  void abandon() noexcept;

  const gguf_writer* w_ = nullptr;
  std::optional<octo::output_file> out_;  // empty once finished or abandoned
  std::filesystem::path path_;
  std::size_t index_ = 0;
  std::uint64_t in_tensor_ = 0;  // bytes of the current tensor written
  std::uint64_t written_ = 0;
  bool finished_ = false;
};

}  // namespace octo::model_file
