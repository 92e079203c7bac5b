// safetensors reader: an 8-byte little-endian header length, a JSON header {name: {dtype, shape,
// data_offsets}}, then the data; every offset is checked before a span into the mapping is made.
#include "octo/model_file/safetensors.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "octo/detail/element_convert.hpp"
#include "octo/error.hpp"
#include "octo/file_io.hpp"

namespace octo::model_file {
namespace {

using json = nlohmann::json;

// Headers of real checkpoints are a few hundred KiB; 100 MB is the limit the format's authors use too.
constexpr std::uint64_t max_header = 100ull << 20;

[[noreturn]] void fail(const std::string& path, const std::string& problem) {
  throw error("safetensors '" + path + "': " + problem);
}

std::optional<ir::dtype> dtype_of(std::string_view s) {
  if (s == "F32") return ir::dtype::f32;
  if (s == "F16") return ir::dtype::f16;
  if (s == "BF16") return ir::dtype::bf16;
  return std::nullopt;
}

// Bytes per element of every dtype the format defines, so sizes of tensors octo does not read are still
// checked. 0: unknown name.
std::uint64_t element_bytes(std::string_view s) {
  if (s == "F64" || s == "I64" || s == "U64") return 8;
  if (s == "F32" || s == "I32" || s == "U32") return 4;
  if (s == "F16" || s == "BF16" || s == "I16" || s == "U16") return 2;
  if (s == "I8" || s == "U8" || s == "BOOL" || s == "F8_E4M3" || s == "F8_E5M2") return 1;
  return 0;
}

void parse_header(const std::string& path, const std::byte* base, std::size_t size,
                  std::vector<safetensors_tensor>& out) {
  if (size < 8) fail(path, "file of " + std::to_string(size) + " bytes is too short for a header");
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | std::uint64_t(std::to_integer<std::uint8_t>(base[i]));
  if (n > max_header || n > size - 8)
    fail(path, "header length " + std::to_string(n) + " exceeds the file (" + std::to_string(size) + " bytes)");
  json header;
  try {
    header = json::parse(std::string_view(reinterpret_cast<const char*>(base + 8), std::size_t(n)));
  } catch (const json::exception& e) {
    fail(path, std::string("header is not valid JSON: ") + octo::library_text(e.what()));
  }
  if (!header.is_object()) fail(path, "header is not a JSON object");
  const std::byte* data = base + 8 + n;
  const std::uint64_t data_size = size - 8 - n;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    const std::string what = "tensor '" + name + "': ";
    if (!entry.is_object() || !entry.contains("dtype") || !entry["dtype"].is_string() || !entry.contains("shape") ||
        !entry["shape"].is_array() || !entry.contains("data_offsets") || !entry["data_offsets"].is_array() ||
        entry["data_offsets"].size() != 2)
      fail(path, what + "needs a string dtype, a shape array and two data_offsets");
    safetensors_tensor t;
    t.name = name;
    t.file = path;
    t.dtype_name = entry["dtype"].get<std::string>();
    t.type = dtype_of(t.dtype_name);
    const std::uint64_t eb = element_bytes(t.dtype_name);
    if (eb == 0) fail(path, what + "unknown dtype '" + t.dtype_name + "'");
    std::uint64_t count = 1;
    for (const auto& d : entry["shape"]) {
      if (!d.is_number_unsigned()) fail(path, what + "shape entries must be non-negative integers");
      const std::uint64_t v = d.get<std::uint64_t>();
      if (v > (std::uint64_t(1) << 40) || (v != 0 && count > (std::uint64_t(1) << 50) / v))
        fail(path, what + "shape is too large");
      count *= v;
      t.shape.push_back(std::int64_t(v));
    }
    const auto& off = entry["data_offsets"];
    if (!off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      fail(path, what + "data_offsets must be non-negative integers");
    const std::uint64_t begin = off[0].get<std::uint64_t>(), end = off[1].get<std::uint64_t>();
    if (begin > end || end > data_size)
      fail(path, what + "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                     ") lie outside the data (" + std::to_string(data_size) + " bytes)");
    if (end - begin != count * eb)
      fail(path, what + std::to_string(end - begin) + " bytes for " + std::to_string(count) + " elements of " +
                     t.dtype_name);
    t.data = std::span<const std::byte>(data + begin, std::size_t(end - begin));
    out.push_back(std::move(t));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
}

}  // namespace

std::int64_t safetensors_tensor::elements() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

safetensors_file safetensors_file::open(const std::filesystem::path& path) {
  safetensors_file f;
  f.path_ = path.string();
  const int fd = open_regular_file(f.path_);
  if (fd < 0) fail(f.path_, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(f.path_, "not a regular file");
  }
  f.size_ = std::size_t(st.st_size);
  if (f.size_ > 0) {
    void* m = ::mmap(nullptr, f.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
      ::close(fd);
      fail(f.path_, std::string("cannot map: ") + std::strerror(errno));
    }
    f.map_ = m;
  }
  ::close(fd);
  parse_header(f.path_, static_cast<const std::byte*>(f.map_), f.size_, f.tensors_);
  return f;
}

safetensors_file::safetensors_file(safetensors_file&& o) noexcept
    : path_(std::move(o.path_)), map_(std::exchange(o.map_, nullptr)), size_(std::exchange(o.size_, 0)),
      tensors_(std::move(o.tensors_)) {}

safetensors_file& safetensors_file::operator=(safetensors_file&& o) noexcept {
  if (this != &o) {
    release();
    path_ = std::move(o.path_);
    map_ = std::exchange(o.map_, nullptr);
    size_ = std::exchange(o.size_, 0);
    tensors_ = std::move(o.tensors_);
  }
  return *this;
}

safetensors_file::~safetensors_file() { release(); }

void safetensors_file::release() noexcept {
  if (map_) ::munmap(map_, size_);
  map_ = nullptr;
}

const safetensors_tensor* safetensors_file::find(std::string_view name) const {
  auto it = std::lower_bound(tensors_.begin(), tensors_.end(), name,
                             [](const safetensors_tensor& t, std::string_view n) { return t.name < n; });
  return it != tensors_.end() && it->name == name ? &*it : nullptr;
}

safetensors_model safetensors_model::open(const std::filesystem::path& folder) {
  safetensors_model m;
  const auto single = folder / "model.safetensors";
  const auto index = folder / "model.safetensors.index.json";
  if (std::filesystem::exists(index)) {
    const std::string text = read_file_text(index, std::uint64_t(1) << 30);
    json j;
    try {
      j = json::parse(text);
    } catch (const json::exception& e) {
      throw error("safetensors: '" + index.string() + "' is not valid JSON: " + octo::library_text(e.what()));
    }
    if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
      throw error("safetensors: '" + index.string() + "' has no weight_map object");
    std::map<std::string, std::vector<std::string>> by_file;
    for (const auto& [name, file] : j["weight_map"].items()) {
      if (!file.is_string()) throw error("safetensors: '" + index.string() + "': weight_map entry of '" + name +
                                         "' is not a file name");
      const auto f = file.get<std::string>();
      if (f.empty() || f.find('/') != std::string::npos || f == "." || f == "..")
        throw error("safetensors: '" + index.string() + "': bad shard name '" + f + "'");
      by_file[f].push_back(name);
    }
    if (by_file.empty()) throw error("safetensors: '" + index.string() + "' lists no tensors");
    for (const auto& [f, names] : by_file) {
      m.files_.push_back(safetensors_file::open(folder / f));
      for (const auto& n : names)
        if (!m.files_.back().find(n))
          throw error("safetensors: '" + index.string() + "' places '" + n + "' in '" + f + "', which lacks it");
    }
  } else if (std::filesystem::exists(single)) {
    m.files_.push_back(safetensors_file::open(single));
  } else {
    throw error("safetensors: '" + folder.string() + "' has neither model.safetensors nor model.safetensors.index.json");
  }
  std::map<std::string_view, const std::string*> seen;
  for (const auto& f : m.files_)
    for (const auto& t : f.tensors()) {
      auto [it, fresh] = seen.emplace(t.name, &f.path());
      if (!fresh) throw error("safetensors: tensor '" + t.name + "' appears in both '" + *it->second + "' and '" + f.path() + "'");
    }
  return m;
}

const safetensors_tensor* safetensors_model::find(std::string_view name) const {
  for (const auto& f : files_)
    if (const auto* t = f.find(name)) return t;
  return nullptr;
}

const safetensors_tensor& safetensors_model::get(std::string_view name) const {
  if (const auto* t = find(name)) return *t;
  throw error("safetensors: missing tensor '" + std::string(name) + "'");
}

std::vector<std::string> safetensors_model::names() const {
  std::vector<std::string> out;
  for (const auto& f : files_)
    for (const auto& t : f.tensors()) out.push_back(t.name);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<float> to_f32(const safetensors_tensor& t) {
  if (!t.type)
    throw error("safetensors '" + t.file + "': tensor '" + t.name + "' has dtype " + t.dtype_name +
                " (octo reads F32, F16 and BF16)");
  const auto n = std::size_t(t.elements());
  std::vector<float> out(n);
  const auto* p = reinterpret_cast<const unsigned char*>(t.data.data());
  switch (*t.type) {
    case ir::dtype::f32:
      if (n) std::memcpy(out.data(), p, n * 4);
      break;
    case ir::dtype::f16:
      for (std::size_t i = 0; i < n; ++i) out[i] = detail::f16_to_f32(std::uint16_t(p[2 * i] | (p[2 * i + 1] << 8)));
      break;
    default:
      for (std::size_t i = 0; i < n; ++i) out[i] = detail::bf16_to_f32(std::uint16_t(p[2 * i] | (p[2 * i + 1] << 8)));
      break;
  }
  return out;
}

}  // namespace octo::model_file
