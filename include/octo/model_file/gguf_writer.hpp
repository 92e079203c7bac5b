// gguf_writer: builds a GGUF v3 file from metadata values and tensors (any octo weight dtype, or a raw
// GGML type id), with aligned tensor data; used to export models and to make test files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "octo/ir/enums.hpp"
#include "octo/model_file/gguf.hpp"

namespace octo::model_file {

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

  /// The whole file.
  std::vector<std::byte> to_bytes() const;
  /// Writes the file; throws octo::error naming the path when it cannot.
  void write(const std::filesystem::path& path) const;

  std::size_t tensor_count() const { return tensors_.size(); }
  std::size_t metadata_count() const { return kvs_.size(); }

 private:
  struct tensor {
    std::string name;
    std::uint32_t ggml_type;
    std::vector<std::int64_t> dims;
    std::vector<std::byte> data;
  };
  void add(tensor t);

  std::uint32_t alignment_;
  std::vector<gguf_kv> kvs_;
  std::vector<tensor> tensors_;
};

}  // namespace octo::model_file
