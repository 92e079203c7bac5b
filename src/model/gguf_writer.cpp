// GGUF v3 writer: header, metadata, tensor directory, then each tensor's bytes at an aligned offset.
#include "octo/model_file/gguf_writer.hpp"

#include <bit>
#include <cstring>
#include <fstream>
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

void gguf_writer::add_tensor(std::string name, ir::dtype type, std::vector<std::int64_t> dims,
                             std::span<const std::byte> data) {
  const std::uint32_t g = to_ggml_type(type);
  std::int64_t n = 1;
  for (auto d : dims) n *= d;
  const auto l = ir::layout(type);
  if (!dims.empty() && dims[0] % l.block_elems != 0)
    throw octo::error("GGUF writer: tensor '" + name + "' row length " + std::to_string(dims[0]) +
                      " is not a multiple of " + std::string(ir::name(type)) + "'s block of " +
                      std::to_string(l.block_elems));
  const auto want = ir::nbytes(type, n);
  if (std::int64_t(data.size()) != want)
    throw octo::error("GGUF writer: tensor '" + name + "' has " + std::to_string(data.size()) + " bytes, " +
                      std::string(ir::name(type)) + " of " + std::to_string(n) + " elements needs " +
                      std::to_string(want));
  add({std::move(name), g, std::move(dims), std::vector<std::byte>(data.begin(), data.end())});
}

void gguf_writer::add_tensor_raw(std::string name, std::uint32_t ggml_type, std::vector<std::int64_t> dims,
                                 std::span<const std::byte> data) {
  add({std::move(name), ggml_type, std::move(dims), std::vector<std::byte>(data.begin(), data.end())});
}

std::vector<std::byte> gguf_writer::to_bytes() const {
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
    offset += (t.data.size() + alignment_ - 1) / alignment_ * alignment_;
  }
  s.pad_to(alignment_);
  for (const auto& t : tensors_) {
    s.out.insert(s.out.end(), t.data.begin(), t.data.end());
    s.pad_to(alignment_);
  }
  return s.out;
}

void gguf_writer::write(const std::filesystem::path& path) const {
  const auto bytes = to_bytes();
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw octo::error(path.string() + ": cannot open for writing");
  f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  f.close();
  if (!f) throw octo::error(path.string() + ": write failed");
}

}  // namespace octo::model_file
