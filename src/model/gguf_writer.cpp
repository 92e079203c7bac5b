// GGUF v3 writer: header, metadata, tensor directory, then each tensor's bytes at an aligned offset;
// in memory (to_bytes) or streamed to PATH.tmp and renamed (gguf_stream).
#include "octo/model_file/gguf_writer.hpp"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <type_traits>

#include "octo/error.hpp"

namespace octo::model_file {

namespace {

class byte_sink {
 public:
  std::vector<std::byte> out;

  template <class T>
  void le(T v) {
    static_assert(std::is_unsigned_v<T>);
    for (std::size_t k = 0; k < sizeof(T); ++k) out.push_back(std::byte((v >> (8 * k)) & 0xff));
  }
  void str(const std::string& s) {
    le<std::uint64_t>(s.size());
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    out.insert(out.end(), p, p + s.size());
  }
  void pad_to(std::uint64_t alignment) {
    while (out.size() % alignment != 0) out.push_back(std::byte{0});
  }

  void value(const gguf_value& v) {
    switch (v.type()) {
      case gguf_type::u8: le<std::uint8_t>(std::uint8_t(v.as_u64())); break;
      case gguf_type::i8: le<std::uint8_t>(std::uint8_t(v.as_i64())); break;
      case gguf_type::u16: le<std::uint16_t>(std::uint16_t(v.as_u64())); break;
      case gguf_type::i16: le<std::uint16_t>(std::uint16_t(v.as_i64())); break;
      case gguf_type::u32: le<std::uint32_t>(std::uint32_t(v.as_u64())); break;
      case gguf_type::i32: le<std::uint32_t>(std::uint32_t(v.as_i64())); break;
      case gguf_type::u64: le<std::uint64_t>(v.as_u64()); break;
      case gguf_type::i64: le<std::uint64_t>(std::uint64_t(v.as_i64())); break;
      case gguf_type::f32: le<std::uint32_t>(std::bit_cast<std::uint32_t>(float(v.as_f64()))); break;
      case gguf_type::f64: le<std::uint64_t>(std::bit_cast<std::uint64_t>(v.as_f64())); break;
      case gguf_type::boolean: le<std::uint8_t>(v.as_bool() ? 1 : 0); break;
      case gguf_type::string: str(v.as_string()); break;
      case gguf_type::array:
        le<std::uint32_t>(std::uint32_t(v.element_type()));
        le<std::uint64_t>(v.as_array().size());
        for (const auto& item : v.as_array()) value(item);
        break;
    }
  }
};

}  // namespace

gguf_writer::gguf_writer(std::uint32_t alignment) : alignment_(alignment) {
  if (alignment == 0 || !std::has_single_bit(alignment))
    throw octo::error("GGUF alignment " + std::to_string(alignment) + " is not a power of two");
  if (alignment != 32) set_u32("general.alignment", alignment);
}

void gguf_writer::set(std::string key, gguf_value value) {
  for (auto& kv : kvs_)
    if (kv.key == key) {
      kv.value = std::move(value);
      return;
    }
  kvs_.push_back({std::move(key), std::move(value)});
}

void gguf_writer::add(tensor t) {
  for (const auto& other : tensors_)
    if (other.name == t.name) throw octo::error("GGUF writer: tensor '" + t.name + "' added twice");
  if (t.dims.empty() || t.dims.size() > 4)
    throw octo::error("GGUF writer: tensor '" + t.name + "' has " + std::to_string(t.dims.size()) +
                      " dimensions (1 to 4 allowed)");
  for (auto d : t.dims)
    if (d < 0) throw octo::error("GGUF writer: tensor '" + t.name + "' has a negative dimension");
  tensors_.push_back(std::move(t));
}

namespace {
// The byte size of a tensor of `type` and `dims`, after checking its rows are whole blocks.
std::uint64_t checked_size(const std::string& name, ir::dtype type, const std::vector<std::int64_t>& dims) {
  std::int64_t n = 1;
  for (auto d : dims) n *= d;
  const auto l = ir::layout(type);
  if (!dims.empty() && dims[0] % l.block_elems != 0)
    throw octo::error("GGUF writer: tensor '" + name + "' row length " + std::to_string(dims[0]) +
                      " is not a multiple of " + std::string(ir::name(type)) + "'s block of " +
                      std::to_string(l.block_elems));
  return std::uint64_t(ir::nbytes(type, n));
}
}  // namespace

void gguf_writer::add_tensor(std::string name, ir::dtype type, std::vector<std::int64_t> dims,
                             std::span<const std::byte> data) {
  const std::uint32_t g = to_ggml_type(type);
  std::int64_t n = 1;
  for (auto d : dims) n *= d;
  const auto want = checked_size(name, type, dims);
  if (data.size() != want)
    throw octo::error("GGUF writer: tensor '" + name + "' has " + std::to_string(data.size()) + " bytes, " +
                      std::string(ir::name(type)) + " of " + std::to_string(n) + " elements needs " +
                      std::to_string(want));
  add({std::move(name), g, std::move(dims), std::vector<std::byte>(data.begin(), data.end()), want, true});
}

void gguf_writer::declare_tensor(std::string name, ir::dtype type, std::vector<std::int64_t> dims) {
  const std::uint32_t g = to_ggml_type(type);
  const auto size = checked_size(name, type, dims);
  add({std::move(name), g, std::move(dims), {}, size, false});
}

void gguf_writer::add_tensor_raw(std::string name, std::uint32_t ggml_type, std::vector<std::int64_t> dims,
                                 std::span<const std::byte> data) {
  add({std::move(name), ggml_type, std::move(dims), std::vector<std::byte>(data.begin(), data.end()), data.size(), true});
}

std::vector<std::byte> gguf_writer::header_bytes() const {
  byte_sink s;
  s.out.push_back(std::byte{'G'});
  s.out.push_back(std::byte{'G'});
  s.out.push_back(std::byte{'U'});
  s.out.push_back(std::byte{'F'});
  s.le<std::uint32_t>(3);
  s.le<std::uint64_t>(tensors_.size());
  s.le<std::uint64_t>(kvs_.size());
  for (const auto& kv : kvs_) {
    s.str(kv.key);
    s.le<std::uint32_t>(std::uint32_t(kv.value.type()));
    s.value(kv.value);
  }
  std::uint64_t offset = 0;
  for (const auto& t : tensors_) {
    s.str(t.name);
    s.le<std::uint32_t>(std::uint32_t(t.dims.size()));
    for (auto d : t.dims) s.le<std::uint64_t>(std::uint64_t(d));
    s.le<std::uint32_t>(t.ggml_type);
    s.le<std::uint64_t>(offset);
    offset += padded(t.size);
  }
  s.pad_to(alignment_);
  return s.out;
}

std::uint64_t gguf_writer::data_offset() const { return header_bytes().size(); }

std::uint64_t gguf_writer::file_size() const {
  std::uint64_t n = data_offset();
  for (const auto& t : tensors_) n += padded(t.size);
  return n;
}

std::vector<std::byte> gguf_writer::to_bytes() const {
  byte_sink s;
  s.out = header_bytes();
  for (const auto& t : tensors_) {
    if (!t.held) throw octo::error("GGUF writer: tensor '" + t.name + "' was declared but has no data in memory");
    s.out.insert(s.out.end(), t.data.begin(), t.data.end());
    s.pad_to(alignment_);
  }
  return s.out;
}

void gguf_writer::write(const std::filesystem::path& path) const {
  for (const auto& t : tensors_)
    if (!t.held) throw octo::error("GGUF writer: tensor '" + t.name + "' was declared but has no data in memory");
  stream_to(path).finish();
}

gguf_stream gguf_writer::stream_to(const std::filesystem::path& path) const { return gguf_stream(*this, path); }

// ---- gguf_stream ------------------------------------------------------------------------------------

gguf_stream::gguf_stream(const gguf_writer& w, std::filesystem::path path)
    : w_(&w), out_(std::in_place, path), path_(std::move(path)) {
  const auto header = w.header_bytes();
  put(header.data(), header.size());
  settle();
}

gguf_stream::gguf_stream(gguf_stream&& o) noexcept
    : w_(o.w_), out_(std::move(o.out_)), path_(std::move(o.path_)), index_(o.index_), in_tensor_(o.in_tensor_),
      written_(o.written_), finished_(o.finished_) {
  o.out_.reset();
  o.finished_ = true;
}

gguf_stream::~gguf_stream() = default;  // an unfinished output_file removes its temporary

void gguf_stream::abandon() noexcept {
  out_.reset();
  finished_ = true;
}

void gguf_stream::put(const void* p, std::size_t n) {
  if (n == 0) return;
  if (!out_) throw octo::error(path_.string() + ": the GGUF stream is closed");
  try {
    out_->write({static_cast<const std::byte*>(p), n});
  } catch (...) {
    abandon();
    throw;
  }
  written_ += n;
}

std::uint64_t gguf_stream::remaining_in_tensor() const {
  if (index_ >= w_->tensors_.size()) return 0;
  return w_->tensors_[index_].size - in_tensor_;
}

void gguf_stream::settle() {
  static const std::byte zeros[64] = {};
  while (index_ < w_->tensors_.size()) {
    const auto& t = w_->tensors_[index_];
    if (t.held && in_tensor_ == 0) {
      put(t.data.data(), t.data.size());
      in_tensor_ = t.size;
    }
    if (in_tensor_ < t.size) return;
    for (std::uint64_t pad = w_->padded(t.size) - t.size; pad > 0;) {
      const auto n = std::min<std::uint64_t>(pad, sizeof zeros);
      put(zeros, n);
      pad -= n;
    }
    ++index_;
    in_tensor_ = 0;
  }
}

void gguf_stream::write(std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    if (finished_ || index_ >= w_->tensors_.size())
      throw octo::error(path_.string() + ": " + std::to_string(bytes.size()) + " bytes beyond the last tensor");
    const auto n = std::min<std::uint64_t>(bytes.size(), remaining_in_tensor());
    put(bytes.data(), n);
    in_tensor_ += n;
    bytes = bytes.subspan(n);
    settle();
  }
}

void gguf_stream::finish() {
  if (finished_) throw octo::error(path_.string() + ": the GGUF stream was already finished or abandoned");
  if (index_ < w_->tensors_.size()) {
    const auto& t = w_->tensors_[index_];
    const std::string msg = path_.string() + ": tensor '" + t.name + "' got " + std::to_string(in_tensor_) + " of " +
                            std::to_string(t.size) + " bytes";
    abandon();
    throw octo::error(msg);
  }
  try {
    out_->commit();
  } catch (...) {
    abandon();
    throw;
  }
  out_.reset();
  finished_ = true;
}

}  // namespace octo::model_file
