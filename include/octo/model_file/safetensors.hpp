// safetensors: read-only, memory-mapped Hugging Face safetensors checkpoints (one file, or shards listed
// by model.safetensors.index.json), every header offset and size checked against the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "octo/ir/enums.hpp"

namespace octo::model_file {

/// One tensor of a safetensors file. `shape` is row-major as PyTorch has it (last dimension fastest).
/// `type` is empty for dtypes octo does not read (I64, F64, ...): `dtype_name` still names it.
struct safetensors_tensor {
  std::string name;
  std::string dtype_name;          // as the header writes it: "F32", "BF16", ...
  std::optional<ir::dtype> type;   // f32, f16 or bf16
  std::vector<std::int64_t> shape;
  std::span<const std::byte> data;
  std::string file;                // the file it lives in, for messages
  std::int64_t elements() const;
};

/// One mapped .safetensors file. Move-only; tensors' data stays valid while it lives.
class safetensors_file {
 public:
  /// Maps and parses `path`; any problem throws octo::error naming the file and the problem.
  static safetensors_file open(const std::filesystem::path& path);
  safetensors_file(safetensors_file&&) noexcept;
  safetensors_file& operator=(safetensors_file&&) noexcept;
  ~safetensors_file();

  const std::string& path() const { return path_; }
  std::span<const safetensors_tensor> tensors() const { return tensors_; }
  const safetensors_tensor* find(std::string_view name) const;  // nullptr when absent

 private:
  safetensors_file() = default;
  void release() noexcept;
  std::string path_;
  void* map_ = nullptr;
  std::size_t size_ = 0;
  std::vector<safetensors_tensor> tensors_;
};

/// A checkpoint folder: model.safetensors, or the shards named by model.safetensors.index.json.
class safetensors_model {
 public:
  /// Throws octo::error when neither file exists, a shard is missing, or a tensor appears twice.
  static safetensors_model open(const std::filesystem::path& folder);

  const safetensors_tensor* find(std::string_view name) const;
  /// The tensor `name`; throws octo::error "missing tensor NAME" when absent.
  const safetensors_tensor& get(std::string_view name) const;
  /// All tensor names, sorted.
  std::vector<std::string> names() const;
  std::span<const safetensors_file> files() const { return files_; }

 private:
  std::vector<safetensors_file> files_;
};

/// The tensor's values as float32, row-major; throws octo::error for a dtype octo does not read.
std::vector<float> to_f32(const safetensors_tensor& t);

}  // namespace octo::model_file
