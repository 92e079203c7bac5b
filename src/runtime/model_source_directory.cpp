// The decomposed-directory model source: config from the manifest, tokenizer from meta.gguf, layer blobs
// are the layer files themselves (read by octo::stream::layer_reader: O_DIRECT, zstd, checksums).

#include "octo/error.hpp"
#include "octo/file_io.hpp"
#include "octo/model_file/gguf.hpp"
#include "octo/model_file/vocabulary.hpp"
#include "octo/runtime/decomposed.hpp"
#include "octo/runtime/model_source.hpp"
#include "octo/stream/layer_reader.hpp"
#include "octo/stream/manifest.hpp"

namespace octo::runtime {

namespace {

class directory_source final : public model_source {
 public:
  directory_source(const std::filesystem::path& dir, std::int64_t ctx)
      : model_source(dir.filename().empty() ? dir.parent_path().filename().string() : dir.filename().string()),
        m_(stream::manifest::load(dir)) {
    config_ = config_from_manifest(m_, ctx);
    arch_ = m_.config().architecture;
    const auto meta = dir / std::string(m_.meta_gguf());
    // meta.gguf is read once, checked against the manifest's checksum, and parsed from those same bytes
    // (no window for the file to change between the check and the use).
    const std::string bytes = read_file_text(meta, m_.meta_file().stored_bytes);
    const auto raw = std::as_bytes(std::span(bytes));
    if (raw.size() != m_.meta_file().stored_bytes || stream::xxh3_64(raw) != m_.meta_file().xxh3)
      throw octo::error(meta.string() + ": checksum mismatch against the manifest (XXH3 " + stream::hex64(stream::xxh3_64(raw)) +
                        ", the manifest says " + stream::hex64(m_.meta_file().xxh3) + "): the file is corrupt");
    try {
      tokenizer_ = std::make_unique<model_file::tokenizer>(
          model_file::load_gguf_vocabulary(model_file::gguf_file::from_bytes(raw, meta.string())));
    } catch (const octo::error& e) {
      throw octo::error("octo: " + label_ + ": tokenizer from " + std::string(m_.meta_gguf()) + ": " + e.what());
    }
    if (tokenizer_->size() > config_.vocab)
      throw octo::error("octo: " + label_ + ": the tokenizer has more tokens than the embedding has rows");
    for (const auto& t : m_.tensors()) {
      const auto& f = m_.file_of(t);
      tensor_info d;
      d.ggml_type = t.ggml_type;
      d.dims = t.dims;
      d.bytes = t.bytes;
      d.layer = f.role == stream::file_role::layer ? f.layer : -1;
      d.offset = t.offset;
      tensors_.emplace(t.name, std::move(d));
    }
    worker_ = std::make_unique<stream::layer_reader>(m_);
    main_ = std::make_unique<stream::layer_reader>(m_);
  }

  std::uint64_t layer_blob_bytes(std::int64_t l) const override { return m_.layer_file(l).raw_bytes; }
  std::uint64_t read_layer(std::int64_t l, std::span<std::byte> dst) const override {
    const auto before = worker_->bytes_read();
    worker_->read_layer(l, dst);
    return worker_->bytes_read() - before;
  }
  void with_file_tensor(std::string_view name, const std::function<void(std::span<const std::byte>)>& use) const override {
    const auto* t = m_.find_tensor(name);
    if (!t) throw octo::error("octo: " + label_ + ": missing tensor '" + std::string(name) + "'");
    const auto& f = m_.file_of(*t);
    if (cached_file_ != &f) {  // resident tensors come file by file: read each file once
      cached_ = stream::aligned_buffer(stream::layer_reader::buffer_bytes(f));
      main_->read(f, cached_.span());
      cached_file_ = &f;
    }
    use(cached_.span().subspan(std::size_t(t->offset), std::size_t(t->bytes)));
  }

 private:
  stream::manifest m_;
  // read_layer runs on the engine's reader thread, with_file_tensor at load: each has its own reader
  std::unique_ptr<stream::layer_reader> worker_, main_;
  mutable stream::aligned_buffer cached_;
  mutable const stream::file_entry* cached_file_ = nullptr;
};

}  // namespace

std::unique_ptr<model_source> open_directory_source(const std::filesystem::path& dir, std::int64_t ctx) {
  return std::make_unique<directory_source>(dir, ctx);
}

}  // namespace octo::runtime
