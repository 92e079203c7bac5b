// GGUF v2/v3 reader: maps the file, parses header, metadata and tensor directory with every count,
// offset and size checked against the bytes actually present (overflow-safe), so a corrupt file gives
// one octo::error line and never an out-of-bounds read.
#include "octo/model_file/gguf.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "octo/detail/quant_blocks.hpp"
#include "octo/error.hpp"
#include "octo/file_io.hpp"

namespace octo::model_file {

// ---- gguf_type / ggml types -------------------------------------------------------------------------

std::string_view name(gguf_type t) {
  switch (t) {
    case gguf_type::u8: return "u8";
    case gguf_type::i8: return "i8";
    case gguf_type::u16: return "u16";
    case gguf_type::i16: return "i16";
    case gguf_type::u32: return "u32";
    case gguf_type::i32: return "i32";
    case gguf_type::f32: return "f32";
    case gguf_type::boolean: return "bool";
    case gguf_type::string: return "string";
    case gguf_type::array: return "array";
    case gguf_type::u64: return "u64";
    case gguf_type::i64: return "i64";
    case gguf_type::f64: return "f64";
  }
  return "?";
}

namespace {

struct ggml_type_desc {
  std::uint32_t id;
  std::string_view name;
  int block_elems;
  int block_bytes;
};

// Every GGML tensor type in current ggml with its block layout, so that files holding types octo does
// not compute with still open with their sizes checked. Ids not listed are refused at open.
constexpr ggml_type_desc ggml_types[] = {
    {0, "F32", 1, 4},          {1, "F16", 1, 2},         {2, "Q4_0", 32, 18},       {3, "Q4_1", 32, 20},
    {6, "Q5_0", 32, 22},       {7, "Q5_1", 32, 24},      {8, "Q8_0", 32, 34},       {9, "Q8_1", 32, 36},
    {10, "Q2_K", 256, 84},     {11, "Q3_K", 256, 110},   {12, "Q4_K", 256, 144},    {13, "Q5_K", 256, 176},
    {14, "Q6_K", 256, 210},    {15, "Q8_K", 256, 292},   {16, "IQ2_XXS", 256, 66},  {17, "IQ2_XS", 256, 74},
    {18, "IQ3_XXS", 256, 98},  {19, "IQ1_S", 256, 50},   {20, "IQ4_NL", 32, 18},    {21, "IQ3_S", 256, 110},
    {22, "IQ2_S", 256, 82},    {23, "IQ4_XS", 256, 136}, {24, "I8", 1, 1},          {25, "I16", 1, 2},
    {26, "I32", 1, 4},         {27, "I64", 1, 8},        {28, "F64", 1, 8},         {29, "IQ1_M", 256, 56},
    {30, "BF16", 1, 2},        {34, "TQ1_0", 256, 54},   {35, "TQ2_0", 256, 66},    {39, "MXFP4", 32, 17},
};

const ggml_type_desc* find_ggml_type(std::uint32_t id) {
  for (const auto& d : ggml_types)
    if (d.id == id) return &d;
  return nullptr;
}

constexpr std::pair<std::uint32_t, ir::dtype> ggml_to_ir[] = {
    {0, ir::dtype::f32},   {1, ir::dtype::f16},   {30, ir::dtype::bf16}, {2, ir::dtype::q4_0},
    {3, ir::dtype::q4_1},  {6, ir::dtype::q5_0},  {7, ir::dtype::q5_1},  {8, ir::dtype::q8_0},
    {10, ir::dtype::q2_k}, {11, ir::dtype::q3_k}, {12, ir::dtype::q4_k}, {13, ir::dtype::q5_k},
    {14, ir::dtype::q6_k}, {20, ir::dtype::iq4_nl}, {23, ir::dtype::iq4_xs}, {24, ir::dtype::i8},
    {26, ir::dtype::i32},
};

std::string quote_name(std::string_view s) { return octo::quoted(s); }

}  // namespace

std::string_view ggml_type_name(std::uint32_t ggml_type) {
  const auto* d = find_ggml_type(ggml_type);
  return d ? d->name : std::string_view{};
}

std::optional<ir::dtype> to_dtype(std::uint32_t ggml_type) {
  for (auto [g, t] : ggml_to_ir)
    if (g == ggml_type) return t;
  return std::nullopt;
}

std::uint32_t to_ggml_type(ir::dtype t) {
  for (auto [g, d] : ggml_to_ir)
    if (d == t) return g;
  throw octo::error("GGUF cannot store element type " + std::string(ir::name(t)));
}

// ---- gguf_value ---------------------------------------------------------------------------------------

namespace {

// Bytes per packed item of an array of scalars; 0 for strings and arrays.
std::size_t packed_width(gguf_type t) {
  switch (t) {
    case gguf_type::u8: case gguf_type::i8: case gguf_type::boolean: return 1;
    case gguf_type::u16: case gguf_type::i16: return 2;
    case gguf_type::u32: case gguf_type::i32: case gguf_type::f32: return 4;
    case gguf_type::u64: case gguf_type::i64: case gguf_type::f64: return 8;
    case gguf_type::string: case gguf_type::array: return 0;
  }
  return 0;
}

}  // namespace

gguf_value gguf_value::array_of(gguf_type element, array items) {
  for (std::size_t i = 0; i < items.size(); ++i)
    if (items[i].type() != element)
      throw octo::error("GGUF array of " + std::string(name(element)) + " has item " + std::to_string(i) +
                        " of type " + std::string(name(items[i].type())));
  gguf_value v(gguf_type::array, items.size());
  v.element_ = element;
  if (element == gguf_type::array) {
    v.a_ = std::move(items);
  } else if (element == gguf_type::string) {
    for (const auto& x : items) {
      v.s_ += x.s_;
      v.ends_.push_back(v.s_.size());
    }
  } else {
    const std::size_t w = packed_width(element);
    v.s_.resize(items.size() * w);
    for (std::size_t i = 0; i < items.size(); ++i) {
      // f32 items hold a double's bits: store the float's, as the file does.
      const std::uint64_t bits = element == gguf_type::f32
                                     ? std::bit_cast<std::uint32_t>(float(std::bit_cast<double>(items[i].bits_)))
                                     : items[i].bits_;
      for (std::size_t k = 0; k < w; ++k) v.s_[i * w + k] = char((bits >> (8 * k)) & 0xff);
    }
  }
  return v;
}

gguf_value gguf_value::array_of_strings(const std::vector<std::string>& items) {
  array a;
  a.reserve(items.size());
  for (const auto& s : items) a.push_back(of_string(s));
  return array_of(gguf_type::string, std::move(a));
}

gguf_value gguf_value::array_of_f32(const std::vector<float>& items) {
  array a;
  a.reserve(items.size());
  for (float f : items) a.push_back(of_f32(f));
  return array_of(gguf_type::f32, std::move(a));
}

gguf_value gguf_value::array_of_i32(const std::vector<std::int32_t>& items) {
  array a;
  a.reserve(items.size());
  for (auto x : items) a.push_back(of_i32(x));
  return array_of(gguf_type::i32, std::move(a));
}

bool gguf_value::is_integer() const {
  switch (type_) {
    case gguf_type::u8: case gguf_type::i8: case gguf_type::u16: case gguf_type::i16: case gguf_type::u32:
    case gguf_type::i32: case gguf_type::u64: case gguf_type::i64:
      return true;
    default:
      return false;
  }
}

bool gguf_value::is_signed() const {
  return type_ == gguf_type::i8 || type_ == gguf_type::i16 || type_ == gguf_type::i32 || type_ == gguf_type::i64;
}

namespace {
[[noreturn]] void type_mismatch(gguf_type have, std::string_view want) {
  throw octo::error("GGUF value is " + std::string(name(have)) + ", expected " + std::string(want));
}
}  // namespace

std::uint64_t gguf_value::as_u64() const {
  if (!is_integer()) type_mismatch(type_, "an integer");
  if (is_signed() && std::int64_t(bits_) < 0)
    throw octo::error("GGUF value " + std::to_string(std::int64_t(bits_)) + " is negative, expected unsigned");
  return bits_;
}

std::int64_t gguf_value::as_i64() const {
  if (!is_integer()) type_mismatch(type_, "an integer");
  if (!is_signed() && bits_ > std::uint64_t(std::numeric_limits<std::int64_t>::max()))
    throw octo::error("GGUF value " + std::to_string(bits_) + " does not fit in int64");
  return std::int64_t(bits_);
}

double gguf_value::as_f64() const {
  if (is_float()) return std::bit_cast<double>(bits_);
  if (is_integer()) return is_signed() ? double(std::int64_t(bits_)) : double(bits_);
  type_mismatch(type_, "a number");
}

bool gguf_value::as_bool() const {
  if (type_ != gguf_type::boolean) type_mismatch(type_, "bool");
  return bits_ != 0;
}

const std::string& gguf_value::as_string() const {
  if (type_ != gguf_type::string) type_mismatch(type_, "string");
  return s_;
}

gguf_array_ref gguf_value::as_array() const {
  if (type_ != gguf_type::array) type_mismatch(type_, "array");
  return gguf_array_ref(*this);
}

std::size_t gguf_value::size() const {
  if (type_ != gguf_type::array) type_mismatch(type_, "array");
  return std::size_t(bits_);
}

void gguf_value::check_item(std::size_t i) const {
  if (i >= size())
    throw octo::error("GGUF array item " + std::to_string(i) + " is out of range (" + std::to_string(bits_) + " items)");
}

std::string_view gguf_value::string_item(std::size_t i) const {
  check_item(i);
  if (element_ != gguf_type::string) type_mismatch(element_, "string");
  const std::uint64_t begin = i == 0 ? 0 : ends_[i - 1];
  return std::string_view(s_).substr(std::size_t(begin), std::size_t(ends_[i] - begin));
}

gguf_value gguf_value::item(std::size_t i) const {
  check_item(i);
  if (element_ == gguf_type::array) return a_[i];
  if (element_ == gguf_type::string) return of_string(std::string(string_item(i)));
  const std::size_t w = packed_width(element_);
  std::uint64_t bits = 0;
  for (std::size_t k = 0; k < w; ++k) bits |= std::uint64_t(static_cast<unsigned char>(s_[i * w + k])) << (8 * k);
  switch (element_) {
    case gguf_type::i8: return of_i8(std::int8_t(std::uint8_t(bits)));
    case gguf_type::i16: return of_i16(std::int16_t(std::uint16_t(bits)));
    case gguf_type::i32: return of_i32(std::int32_t(std::uint32_t(bits)));
    case gguf_type::f32: return of_f32(std::bit_cast<float>(std::uint32_t(bits)));
    default: return gguf_value(element_, bits);
  }
}

std::int64_t gguf_tensor_info::elements() const {
  std::int64_t n = 1;
  for (auto d : dims) n *= d;  // checked against overflow when the file was read
  return n;
}

std::int64_t gguf_tensor::elements() const {
  std::int64_t n = 1;
  for (auto d : dims) n *= d;
  return n;
}

// ---- parsing ------------------------------------------------------------------------------------------

namespace {
constexpr std::uint64_t max_nested_items_total = std::uint64_t(1) << 20;  // arrays of arrays: rare, not packed
constexpr int max_array_depth = 8;
constexpr std::uint32_t max_dims = 4;  // GGML_MAX_DIMS
}  // namespace

class gguf_parser {
 public:
  explicit gguf_parser(gguf_file& f) : f_(f) {}

  void run() {
    if (f_.size_ < 4) f_.fail("file too small to be GGUF (" + std::to_string(f_.size_) + " bytes)");
    if (std::memcmp(f_.base_, "GGUF", 4) != 0) f_.fail("not a GGUF file (bad magic)");
    pos_ = 4;
    const std::uint32_t version = u32("version");
    if (version == 1) f_.fail("GGUF version 1 is not supported (only versions 2 and 3)");
    if (version != 2 && version != 3) {
      const bool swapped = (version & 0xffff) == 0 && version != 0;
      f_.fail("unsupported GGUF version " + std::to_string(version) +
              (swapped ? " (a big-endian file?)" : " (only versions 2 and 3)"));
    }
    f_.version_ = version;
    const std::uint64_t n_tensors = u64("tensor count");
    const std::uint64_t n_kv = u64("metadata count");
    // Each tensor entry takes at least 24 bytes, each key/value at least 13: reject counts the file
    // cannot hold before allocating anything for them.
    if (n_tensors > left() / 24)
      f_.fail("tensor count " + std::to_string(n_tensors) + " is impossible for a file of " +
              std::to_string(f_.size_) + " bytes");
    if (n_kv > left() / 13)
      f_.fail("metadata count " + std::to_string(n_kv) + " is impossible for a file of " +
              std::to_string(f_.size_) + " bytes");

    f_.kvs_.reserve(std::size_t(n_kv));
    for (std::uint64_t i = 0; i < n_kv; ++i) {
      what_ = "metadata entry " + std::to_string(i);
      std::string key = str("key");
      what_ = "metadata " + quote_name(key);
      const auto t = type_tag("value type");
      gguf_value v = value(t, 0);
      f_.kvs_.push_back({std::move(key), std::move(v)});
    }
    for (std::size_t i = 0; i < f_.kvs_.size(); ++i)
      if (!f_.kv_index_.emplace(f_.kvs_[i].key, i).second)
        f_.fail("duplicate metadata key " + quote_name(f_.kvs_[i].key));

    if (const auto* a = f_.find("general.alignment")) {
      if (!a->is_integer()) f_.fail("general.alignment is " + std::string(name(a->type())) + ", expected u32");
      const auto al = a->as_i64();
      if (al <= 0 || al > (1 << 30) || !std::has_single_bit(std::uint64_t(al)))
        f_.fail("general.alignment " + std::to_string(al) + " is not a power of two");
      f_.alignment_ = std::uint32_t(al);
    }

    f_.tensors_.reserve(std::size_t(n_tensors));
    for (std::uint64_t i = 0; i < n_tensors; ++i) f_.tensors_.push_back(tensor_info(i));
    for (std::size_t i = 0; i < f_.tensors_.size(); ++i)
      if (!f_.tensor_index_.emplace(f_.tensors_[i].name, i).second)
        f_.fail("duplicate tensor name " + quote_name(f_.tensors_[i].name));

    // The data section starts at the next multiple of the alignment.
    const std::uint64_t al = f_.alignment_;
    const std::uint64_t rem = pos_ % al;
    f_.data_offset_ = rem == 0 ? pos_ : pos_ + (al - rem);  // pos_ <= size_, so no overflow
    if (f_.tensors_.empty()) {
      // Vocabulary-only files may end without padding; like ggml, report the unpadded end then.
      f_.data_offset_ = pos_;
      return;
    }
    if (f_.data_offset_ > f_.size_)
      f_.fail("tensor data section would start at " + std::to_string(f_.data_offset_) + ", past the end (" +
              std::to_string(f_.size_) + " bytes)");
    const std::uint64_t data_bytes = f_.size_ - f_.data_offset_;
    std::vector<std::size_t> order(f_.tensors_.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    for (const auto& t : f_.tensors_) {
      if (t.offset > data_bytes || t.size > data_bytes - t.offset)
        f_.fail("tensor " + quote_name(t.name) + " (" + std::to_string(t.size) + " bytes at data offset " +
                std::to_string(t.offset) + ") extends past the end of the file (" + std::to_string(data_bytes) +
                " data bytes)");
    }
    std::sort(order.begin(), order.end(),
              [&](std::size_t a, std::size_t b) { return f_.tensors_[a].offset < f_.tensors_[b].offset; });
    for (std::size_t k = 1; k < order.size(); ++k) {
      const auto& p = f_.tensors_[order[k - 1]];
      const auto& q = f_.tensors_[order[k]];
      if (p.offset + p.size > q.offset) f_.fail("tensors " + quote_name(p.name) + " and " + quote_name(q.name) + " overlap");
    }
  }

 private:
  std::uint64_t left() const { return f_.size_ - pos_; }

  void need(std::uint64_t n, std::string_view field) {
    if (n > left())
      f_.fail("truncated: " + what_ + (what_.empty() ? "" : ": ") + std::string(field) + " needs " +
              std::to_string(n) + " bytes at offset " + std::to_string(pos_) + " but the file has " +
              std::to_string(left()) + " left");
  }

  template <class T>
  T scalar(std::string_view field) {
    need(sizeof(T), field);
    static_assert(std::is_unsigned_v<T>);
    T v = 0;  // GGUF is little endian (v3 big-endian files are refused by the version check)
    for (std::size_t k = 0; k < sizeof(T); ++k) v = T(v | (T(std::to_integer<unsigned char>(f_.base_[pos_ + k])) << (8 * k)));
    pos_ += sizeof(T);
    return v;
  }
  std::uint32_t u32(std::string_view field) { return scalar<std::uint32_t>(field); }
  std::uint64_t u64(std::string_view field) { return scalar<std::uint64_t>(field); }

  std::string str(std::string_view field) {
    const std::uint64_t len = u64(field);
    need(len, field);
    std::string s(reinterpret_cast<const char*>(f_.base_ + pos_), std::size_t(len));
    pos_ += len;
    return s;
  }

  gguf_type type_tag(std::string_view field) {
    const std::uint32_t t = u32(field);
    if (t > 12) f_.fail(what_ + ": unknown value type " + std::to_string(t));
    return gguf_type(t);
  }

  static std::uint64_t min_size(gguf_type t) {
    switch (t) {
      case gguf_type::u8: case gguf_type::i8: case gguf_type::boolean: return 1;
      case gguf_type::u16: case gguf_type::i16: return 2;
      case gguf_type::u32: case gguf_type::i32: case gguf_type::f32: return 4;
      case gguf_type::u64: case gguf_type::i64: case gguf_type::f64: case gguf_type::string: return 8;
      case gguf_type::array: return 12;
    }
    return 1;
  }

  gguf_value value(gguf_type t, int depth) {
    switch (t) {
      case gguf_type::u8: return gguf_value::of_u8(scalar<std::uint8_t>("u8 value"));
      case gguf_type::i8: return gguf_value::of_i8(std::int8_t(scalar<std::uint8_t>("i8 value")));
      case gguf_type::u16: return gguf_value::of_u16(scalar<std::uint16_t>("u16 value"));
      case gguf_type::i16: return gguf_value::of_i16(std::int16_t(scalar<std::uint16_t>("i16 value")));
      case gguf_type::u32: return gguf_value::of_u32(scalar<std::uint32_t>("u32 value"));
      case gguf_type::i32: return gguf_value::of_i32(std::int32_t(scalar<std::uint32_t>("i32 value")));
      case gguf_type::u64: return gguf_value::of_u64(scalar<std::uint64_t>("u64 value"));
      case gguf_type::i64: return gguf_value::of_i64(std::int64_t(scalar<std::uint64_t>("i64 value")));
      case gguf_type::f32: return gguf_value::of_f32(std::bit_cast<float>(scalar<std::uint32_t>("f32 value")));
      case gguf_type::f64: return gguf_value::of_f64(std::bit_cast<double>(scalar<std::uint64_t>("f64 value")));
      case gguf_type::boolean: {
        const auto b = scalar<std::uint8_t>("bool value");
        if (b > 1) f_.fail(what_ + ": bool value " + std::to_string(b) + " is neither 0 nor 1");
        return gguf_value::of_bool(b != 0);
      }
      case gguf_type::string: return gguf_value::of_string(str("string value"));
      case gguf_type::array: {
        if (depth >= max_array_depth)
          f_.fail(what_ + ": arrays nested deeper than " + std::to_string(max_array_depth) + " levels");
        const auto et = type_tag("array item type");
        const std::uint64_t n = u64("array length");
        if (n > left() / min_size(et))
          f_.fail(what_ + ": array length " + std::to_string(n) + " of " + std::string(name(et)) +
                  " does not fit in the " + std::to_string(left()) + " bytes left");
        // Packed as in the file: memory in proportion to the bytes read. Only arrays of arrays hold a
        // whole gguf_value per item, so their items are capped.
        gguf_value v(gguf_type::array, n);
        v.element_ = et;
        if (et == gguf_type::array) {
          items_total_ += n;
          if (items_total_ > max_nested_items_total)
            f_.fail(what_ + ": nested metadata arrays hold more than " + std::to_string(max_nested_items_total) +
                    " items in total");
          v.a_.reserve(std::size_t(n));
          for (std::uint64_t i = 0; i < n; ++i) v.a_.push_back(value(et, depth + 1));
        } else if (et == gguf_type::string) {
          v.ends_.reserve(std::size_t(n));
          for (std::uint64_t i = 0; i < n; ++i) {
            const std::uint64_t len = u64("string length");
            need(len, "string value");
            v.s_.append(reinterpret_cast<const char*>(f_.base_ + pos_), std::size_t(len));
            pos_ += len;
            v.ends_.push_back(v.s_.size());
          }
        } else {
          const std::uint64_t bytes = n * min_size(et);  // n <= left() / min_size: no overflow
          need(bytes, "array items");
          v.s_.assign(reinterpret_cast<const char*>(f_.base_ + pos_), std::size_t(bytes));
          if (et == gguf_type::boolean)
            for (std::uint64_t i = 0; i < n; ++i)
              if (static_cast<unsigned char>(v.s_[i]) > 1)
                f_.fail(what_ + ": bool item " + std::to_string(i) + " is neither 0 nor 1");
          pos_ += bytes;
        }
        return v;
      }
    }
    f_.fail(what_ + ": unknown value type");
  }

  gguf_tensor_info tensor_info(std::uint64_t index) {
    what_ = "tensor entry " + std::to_string(index);
    gguf_tensor_info t;
    t.name = str("name");
    what_ = "tensor " + quote_name(t.name);
    const std::uint32_t n_dims = u32("dimension count");
    if (n_dims == 0 || n_dims > max_dims)
      f_.fail(what_ + " has " + std::to_string(n_dims) + " dimensions (1 to " + std::to_string(max_dims) + " allowed)");
    std::uint64_t elements = 1;
    for (std::uint32_t d = 0; d < n_dims; ++d) {
      const std::uint64_t ne = u64("dimension");
      if (ne > std::uint64_t(std::numeric_limits<std::int64_t>::max()))
        f_.fail(what_ + ": dimension " + std::to_string(d) + " is " + std::to_string(ne) + ", out of range");
      if (ne != 0 && elements > std::uint64_t(std::numeric_limits<std::int64_t>::max()) / ne)
        f_.fail(what_ + ": element count overflows");
      elements *= ne;
      t.dims.push_back(std::int64_t(ne));
    }
    t.ggml_type = u32("type");
    const auto* desc = find_ggml_type(t.ggml_type);
    if (!desc) f_.fail(what_ + " has unknown GGML type " + std::to_string(t.ggml_type));
    if (t.dims[0] % desc->block_elems != 0)
      f_.fail(what_ + ": row length " + std::to_string(t.dims[0]) + " is not a multiple of " +
              std::string(desc->name) + "'s block of " + std::to_string(desc->block_elems));
    const std::uint64_t blocks = elements / std::uint64_t(desc->block_elems);
    if (blocks > std::numeric_limits<std::uint64_t>::max() / std::uint64_t(desc->block_bytes))
      f_.fail(what_ + ": byte size overflows");
    t.size = blocks * std::uint64_t(desc->block_bytes);
    t.offset = u64("data offset");
    if (t.offset % f_.alignment_ != 0)
      f_.fail(what_ + ": data offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
              std::to_string(f_.alignment_));
    what_.clear();
    return t;
  }

  gguf_file& f_;
  std::uint64_t pos_ = 0;
  std::uint64_t items_total_ = 0;
  std::string what_;
};

// ---- gguf_file ----------------------------------------------------------------------------------------

void gguf_file::fail(const std::string& problem) const { throw octo::error(path_ + ": " + problem); }

gguf_file gguf_file::open(const std::filesystem::path& path) {
  gguf_file f;
  f.path_ = path.string();
  const int fd = open_regular_file(path);  // never blocks on a FIFO; one line naming the file otherwise
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    f.fail(std::string("cannot stat: ") + std::strerror(e));
  }
  if (st.st_size == 0) {
    ::close(fd);
    f.fail("file is empty");
  }
  void* m = ::mmap(nullptr, std::size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  const int e = errno;
  if (m == MAP_FAILED) {
    ::close(fd);
    f.fail(std::string("cannot map: ") + std::strerror(e));
  }
  f.fd_ = fd;  // kept for read_tensor: pread reports a file cut short, where the mapping would SIGBUS
  f.map_ = m;
  f.base_ = static_cast<const std::byte*>(m);
  f.size_ = std::uint64_t(st.st_size);
  f.parse();
  return f;
}

gguf_file gguf_file::from_bytes(std::span<const std::byte> bytes, std::string name) {
  gguf_file f;
  f.path_ = std::move(name);
  f.owned_.assign(bytes.begin(), bytes.end());
  f.base_ = f.owned_.data();
  f.size_ = f.owned_.size();
  f.parse();
  return f;
}

void gguf_file::read_tensor(const gguf_tensor_info& t, std::span<std::byte> dst) const {
  if (dst.size() != t.size)
    fail("tensor " + quote_name(t.name) + ": a buffer of " + std::to_string(dst.size()) + " bytes for " +
         std::to_string(t.size));
  const std::uint64_t at = data_offset_ + t.offset;
  if (fd_ < 0) {  // from_bytes: the bytes are ours
    std::memcpy(dst.data(), base_ + at, dst.size());
    return;
  }
  std::size_t done = 0;
  while (done < dst.size()) {
    const ssize_t n = ::pread(fd_, dst.data() + done, dst.size() - done, off_t(at + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("tensor " + quote_name(t.name) + ": read failed: " + std::strerror(errno));
    if (n == 0)
      fail("tensor " + quote_name(t.name) + ": the file ends early (" + std::to_string(at + done) +
           " bytes; was it truncated or replaced while in use?)");
    done += std::size_t(n);
  }
}

void gguf_file::parse() {
  gguf_parser p(*this);
  p.run();
}

gguf_file::gguf_file(gguf_file&& o) noexcept
    : path_(std::move(o.path_)),
      base_(std::exchange(o.base_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      map_(std::exchange(o.map_, nullptr)),
      fd_(std::exchange(o.fd_, -1)),
      owned_(std::move(o.owned_)),
      version_(o.version_),
      alignment_(o.alignment_),
      data_offset_(o.data_offset_),
      kvs_(std::move(o.kvs_)),
      kv_index_(std::move(o.kv_index_)),
      tensors_(std::move(o.tensors_)),
      tensor_index_(std::move(o.tensor_index_)) {}

gguf_file& gguf_file::operator=(gguf_file&& o) noexcept {
  if (this != &o) {
    release();
    path_ = std::move(o.path_);
    base_ = std::exchange(o.base_, nullptr);
    size_ = std::exchange(o.size_, 0);
    map_ = std::exchange(o.map_, nullptr);
    fd_ = std::exchange(o.fd_, -1);
    owned_ = std::move(o.owned_);
    version_ = o.version_;
    alignment_ = o.alignment_;
    data_offset_ = o.data_offset_;
    kvs_ = std::move(o.kvs_);
    kv_index_ = std::move(o.kv_index_);
    tensors_ = std::move(o.tensors_);
    tensor_index_ = std::move(o.tensor_index_);
  }
  return *this;
}

gguf_file::~gguf_file() { release(); }

void gguf_file::release() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (map_) ::munmap(map_, std::size_t(size_));
  map_ = nullptr;
  base_ = nullptr;
}

const gguf_value* gguf_file::find(std::string_view key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kvs_[it->second].value;
}

const gguf_value& gguf_file::get(std::string_view key) const {
  const auto* v = find(key);
  if (!v) fail("metadata key " + quote_name(key) + " is missing");
  return *v;
}

namespace {
// Runs a typed conversion, prefixing its error with the file and key.
template <class F>
auto keyed(const gguf_file& f, std::string_view key, F&& fn) -> decltype(fn(f.get(key))) {
  const gguf_value& v = f.get(key);
  try {
    return fn(v);
  } catch (const octo::error& e) {
    throw octo::error(f.path() + ": metadata " + quote_name(key) + ": " + e.what());
  }
}

template <class T>
T narrow_int(const gguf_value& v) {
  if constexpr (std::is_signed_v<T>) {
    const auto x = v.as_i64();
    if (x < std::numeric_limits<T>::min() || x > std::numeric_limits<T>::max())
      throw octo::error("value " + std::to_string(x) + " is out of range");
    return T(x);
  } else {
    const auto x = v.as_u64();
    if (x > std::numeric_limits<T>::max()) throw octo::error("value " + std::to_string(x) + " is out of range");
    return T(x);
  }
}
}  // namespace

const std::string& gguf_file::get_string(std::string_view key) const {
  return keyed(*this, key, [](const gguf_value& v) -> const std::string& { return v.as_string(); });
}
std::uint32_t gguf_file::get_u32(std::string_view key) const {
  return keyed(*this, key, [](const gguf_value& v) { return narrow_int<std::uint32_t>(v); });
}
std::uint64_t gguf_file::get_u64(std::string_view key) const {
  return keyed(*this, key, [](const gguf_value& v) { return v.as_u64(); });
}
std::int32_t gguf_file::get_i32(std::string_view key) const {
  return keyed(*this, key, [](const gguf_value& v) { return narrow_int<std::int32_t>(v); });
}
std::int64_t gguf_file::get_i64(std::string_view key) const {
  return keyed(*this, key, [](const gguf_value& v) { return v.as_i64(); });
}
float gguf_file::get_f32(std::string_view key) const {
  return keyed(*this, key, [](const gguf_value& v) { return float(v.as_f64()); });
}
double gguf_file::get_f64(std::string_view key) const {
  return keyed(*this, key, [](const gguf_value& v) { return v.as_f64(); });
}
bool gguf_file::get_bool(std::string_view key) const {
  return keyed(*this, key, [](const gguf_value& v) { return v.as_bool(); });
}
gguf_array_ref gguf_file::get_array(std::string_view key) const {
  return keyed(*this, key, [](const gguf_value& v) { return v.as_array(); });
}

std::vector<std::string_view> gguf_file::get_string_array(std::string_view key) const {
  return keyed(*this, key, [](const gguf_value& v) {
    std::vector<std::string_view> out;
    if (v.size() > 0 && v.element_type() != gguf_type::string) v.string_item(0);  // the type error
    out.reserve(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) out.push_back(v.string_item(i));
    return out;
  });
}
std::vector<float> gguf_file::get_f32_array(std::string_view key) const {
  return keyed(*this, key, [](const gguf_value& v) {
    std::vector<float> out;
    out.reserve(v.as_array().size());
    for (const auto& x : v.as_array()) out.push_back(float(x.as_f64()));
    return out;
  });
}
std::vector<std::int32_t> gguf_file::get_i32_array(std::string_view key) const {
  return keyed(*this, key, [](const gguf_value& v) {
    std::vector<std::int32_t> out;
    out.reserve(v.as_array().size());
    for (const auto& x : v.as_array()) out.push_back(narrow_int<std::int32_t>(x));
    return out;
  });
}

std::uint32_t gguf_file::get_u32_or(std::string_view key, std::uint32_t fallback) const {
  return contains(key) ? get_u32(key) : fallback;
}
float gguf_file::get_f32_or(std::string_view key, float fallback) const {
  return contains(key) ? get_f32(key) : fallback;
}
bool gguf_file::get_bool_or(std::string_view key, bool fallback) const {
  return contains(key) ? get_bool(key) : fallback;
}
std::string gguf_file::get_string_or(std::string_view key, std::string fallback) const {
  return contains(key) ? get_string(key) : fallback;
}

const gguf_tensor_info* gguf_file::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

gguf_tensor gguf_file::make_tensor(const gguf_tensor_info& t) const {
  const auto dt = to_dtype(t.ggml_type);
  if (!dt) {
    const auto n = ggml_type_name(t.ggml_type);
    fail("tensor " + quote_name(t.name) + " has GGML type " + std::string(n.empty() ? "?" : n) + " (" +
         std::to_string(t.ggml_type) + "), which octo does not support");
  }
  gguf_tensor out;
  out.name = t.name;
  out.type = *dt;
  out.dims = t.dims;
  out.data = std::span<const std::byte>(base_ + data_offset_ + t.offset, std::size_t(t.size));
  return out;
}

std::vector<float> to_f32(const gguf_tensor& t, std::int64_t max_elements) {
  const std::int64_t n = t.elements();
  if (n > max_elements)
    throw octo::error("tensor '" + std::string(t.name) + "' has " + std::to_string(n) +
                      " elements, more than the " + std::to_string(max_elements) + " allowed here");
  if (ir::nbytes(t.type, n) != std::int64_t(t.data.size()))
    throw octo::error("tensor '" + std::string(t.name) + "': " + std::to_string(t.data.size()) +
                      " bytes do not hold " + std::to_string(n) + " elements of " + std::string(ir::name(t.type)));
  std::vector<float> out(static_cast<std::size_t>(n));
  detail::dequantize_row(t.type, reinterpret_cast<const std::uint8_t*>(t.data.data()), out.data(), n);
  return out;
}

gguf_tensor gguf_file::tensor(std::string_view name) const {
  const auto* t = find_tensor(name);
  if (!t) fail("tensor " + quote_name(name) + " is missing");
  return make_tensor(*t);
}

gguf_tensor gguf_file::tensor(std::size_t index) const {
  if (index >= tensors_.size())
    fail("tensor index " + std::to_string(index) + " is out of range (" + std::to_string(tensors_.size()) +
         " tensors)");
  return make_tensor(tensors_[index]);
}

}  // namespace octo::model_file
