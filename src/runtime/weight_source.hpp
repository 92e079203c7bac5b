// weight_source: where the streaming engine's weights come from: a mapped GGUF file or a decomposed
// directory. Both present a layer as one blob (the layer file's layout: the layer's tensors in GGUF
// table order at 4096-aligned offsets), which is what a ring slot holds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "octo/model_file/tokenizer.hpp"
#include "octo/models/model_config.hpp"

namespace octo::runtime::detail {

struct tensor_desc {
  std::uint32_t ggml_type = 0;
  std::vector<std::int64_t> dims;  // GGUF order
  std::uint64_t bytes = 0;
  std::int64_t layer = -1;         // block index, -1 outside the blocks
  std::uint64_t offset = 0;        // inside its layer blob (layers only)
};

class weight_source {
 public:
  virtual ~weight_source() = default;
  virtual const models::model_config& config() const = 0;
  virtual const model_file::tokenizer& tokenizer() const = 0;
  virtual const std::string& architecture() const = 0;
  virtual std::string label() const = 0;  // for messages: the file or directory name
  /// nullptr when the model has no tensor of that name.
  virtual const tensor_desc* find(std::string_view name) const = 0;
  /// Bytes of layer `l`'s blob (a multiple of 4096).
  virtual std::uint64_t layer_blob_bytes(std::int64_t l) const = 0;
  /// Fills dst[0, layer_blob_bytes(l)) with layer l's blob; returns the bytes read from the source.
  /// Called on the engine's reader thread only (one call at a time).
  virtual std::uint64_t read_layer(std::int64_t l, std::span<std::byte> dst) = 0;
  /// Calls `use(bytes)` with tensor `name`'s bytes (resident weights, at load; main thread).
  virtual void with_tensor(std::string_view name, const std::function<void(std::span<const std::byte>)>& use) = 0;
  /// Whether the source is a directory of layer files (its reads are disk reads, not a mapping's).
  virtual bool is_directory() const = 0;
};

std::unique_ptr<weight_source> open_gguf_source(const std::filesystem::path& gguf, std::int64_t ctx);
/// A decomposed directory (manifest.json, meta.gguf, embed / head / layer files).
std::unique_ptr<weight_source> open_directory_source(const std::filesystem::path& dir, std::int64_t ctx);

}  // namespace octo::runtime::detail
