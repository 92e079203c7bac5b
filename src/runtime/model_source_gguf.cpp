// The GGUF model source: config and tokenizer from the file's metadata, tensors copied out with pread
// (gguf_file::read_tensor: a file cut short while in use is an error, not SIGBUS from the mapping); a
// layer blob is packed by copying the layer's tensors to 4096-aligned offsets (the layout `octo
// decompose` writes).
#include <charconv>
#include <cstring>
#include <vector>

#include "octo/error.hpp"
#include "octo/model_file/vocabulary.hpp"
#include "octo/runtime/model_source.hpp"

namespace octo::runtime {

namespace {

constexpr std::uint64_t blob_alignment = 4096;
std::uint64_t align_up(std::uint64_t n) { return (n + blob_alignment - 1) / blob_alignment * blob_alignment; }

/// N for "blk.N.<rest>", else -1.
std::int64_t layer_of(std::string_view name) {
  if (name.substr(0, 4) != "blk.") return -1;
  const auto dot = name.find('.', 4);
  if (dot == std::string_view::npos) return -1;
  std::int64_t l = -1;
  const auto r = std::from_chars(name.data() + 4, name.data() + dot, l);
  if (r.ec != std::errc() || r.ptr != name.data() + dot) return -1;
  return l;
}

class gguf_source final : public model_source {
 public:
  gguf_source(const std::filesystem::path& path, std::int64_t ctx)
      : model_source(path.filename().string()), file_(model_file::gguf_file::open(path)) {
    const auto& f = file_;
    arch_ = f.get_string_or("general.architecture", "");
    config_ = config_from_gguf(f, ctx);
    try {
      tokenizer_ = std::make_unique<model_file::tokenizer>(model_file::load_gguf_vocabulary(f));
    } catch (const octo::error& e) {
      throw octo::error("octo: " + label_ + ": tokenizer: " + e.what());
    }
    if (tokenizer_->size() > config_.vocab)
      throw octo::error("octo: " + label_ + ": the tokenizer has " + std::to_string(tokenizer_->size()) +
                        " tokens but token_embd.weight only " + std::to_string(config_.vocab) + " rows");
    const std::int64_t L = config_.layers;
    blob_bytes_.assign(std::size_t(L), 0);
    for (const auto& t : f.tensors()) {
      tensor_info d;
      d.ggml_type = t.ggml_type;
      d.dims = t.dims;
      d.bytes = t.size;
      d.layer = layer_of(t.name);
      if (d.layer >= L) throw octo::error("octo: " + label_ + ": tensor '" + t.name + "' belongs to no layer of " + std::to_string(L));
      if (d.layer >= 0) {
        auto& end = blob_bytes_[std::size_t(d.layer)];
        d.offset = end;
        end = align_up(end + d.bytes);
        layer_tensors_.resize(std::size_t(L));
        layer_tensors_[std::size_t(d.layer)].push_back(t.name);
      }
      tensors_.emplace(t.name, std::move(d));
    }
  }

  std::uint64_t layer_blob_bytes(std::int64_t l) const override { return blob_bytes_.at(std::size_t(l)); }
  std::uint64_t read_layer(std::int64_t l, std::span<std::byte> dst) const override {
    if (dst.size() < layer_blob_bytes(l)) throw octo::error("octo: a staging buffer is too small for layer " + std::to_string(l));
    std::uint64_t n = 0;
    for (const auto& name : layer_tensors_.at(std::size_t(l))) {
      const auto& d = tensors_.find(name)->second;
      const auto* t = file_.find_tensor(name);
      // pread, not the mapping: a file cut short while streaming is an octo::error, never SIGBUS.
      file_.read_tensor(*t, dst.subspan(std::size_t(d.offset), std::size_t(t->size)));
      n += t->size;
    }
    return n;
  }
  void with_file_tensor(std::string_view name, const std::function<void(std::span<const std::byte>)>& use) const override {
    const auto* t = file_.find_tensor(name);
    if (!t) throw octo::error("octo: " + label_ + ": missing tensor '" + std::string(name) + "'");
    // Copied with pread, not handed out of the mapping: a file cut short meanwhile is an error, not SIGBUS.
    std::vector<std::byte> bytes(std::size_t(t->size));
    file_.read_tensor(*t, bytes);
    use(bytes);
  }

 private:
  model_file::gguf_file file_;
  std::vector<std::uint64_t> blob_bytes_;
  std::vector<std::vector<std::string>> layer_tensors_;
};

}  // namespace

std::unique_ptr<model_source> open_gguf_source(const std::filesystem::path& gguf, std::int64_t ctx) {
  return std::make_unique<gguf_source>(gguf, ctx);
}

}  // namespace octo::runtime
