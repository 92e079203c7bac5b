// gguf_file: a read-only, memory-mapped GGUF v2/v3 model file: typed metadata and tensors whose bytes
// stay in the mapping. Every count, offset and size is checked against the file before use.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "octo/ir/enums.hpp"

namespace octo::model_file {

/// GGUF metadata value types, numbered as the format stores them.
enum class gguf_type : std::uint32_t {
  u8 = 0, i8 = 1, u16 = 2, i16 = 3, u32 = 4, i32 = 5, f32 = 6, boolean = 7, string = 8, array = 9,
  u64 = 10, i64 = 11, f64 = 12,
};
std::string_view name(gguf_type t);

class gguf_array_ref;

/// One metadata value: a scalar, a string or an array (of scalars, strings or arrays). Values own their
/// data, so they outlive the file they were read from and can be built by hand for gguf_writer. Arrays
/// are stored packed (scalars at their width, strings back to back with their ends), so a value takes
/// about the bytes it took in the file: a file cannot make its metadata balloon in memory.
/// @code
///   auto v = gguf_value::of_u32(4096);
///   auto names = gguf_value::array_of(gguf_type::string, {gguf_value::of_string("a")});
/// @endcode
class gguf_value {
 public:
  using array = std::vector<gguf_value>;

  gguf_value() = default;  // u8 0

  static gguf_value of_u8(std::uint8_t v) { return gguf_value(gguf_type::u8, v); }
  static gguf_value of_i8(std::int8_t v) { return gguf_value(gguf_type::i8, std::uint64_t(std::int64_t(v))); }
  static gguf_value of_u16(std::uint16_t v) { return gguf_value(gguf_type::u16, v); }
  static gguf_value of_i16(std::int16_t v) { return gguf_value(gguf_type::i16, std::uint64_t(std::int64_t(v))); }
  static gguf_value of_u32(std::uint32_t v) { return gguf_value(gguf_type::u32, v); }
  static gguf_value of_i32(std::int32_t v) { return gguf_value(gguf_type::i32, std::uint64_t(std::int64_t(v))); }
  static gguf_value of_u64(std::uint64_t v) { return gguf_value(gguf_type::u64, v); }
  static gguf_value of_i64(std::int64_t v) { return gguf_value(gguf_type::i64, std::uint64_t(v)); }
  static gguf_value of_f32(float v) { return gguf_value(gguf_type::f32, std::bit_cast<std::uint64_t>(double(v))); }
  static gguf_value of_f64(double v) { return gguf_value(gguf_type::f64, std::bit_cast<std::uint64_t>(v)); }
  static gguf_value of_bool(bool v) { return gguf_value(gguf_type::boolean, v ? 1u : 0u); }
  static gguf_value of_string(std::string v) {
    gguf_value out(gguf_type::string, 0);
    out.s_ = std::move(v);
    return out;
  }
  /// An array whose items all have type `element` (throws octo::error otherwise).
  static gguf_value array_of(gguf_type element, array items);
  /// Arrays from plain vectors: strings, or one of the numeric types (float -> f32, int32 -> i32 ...).
  static gguf_value array_of_strings(const std::vector<std::string>& items);
  static gguf_value array_of_f32(const std::vector<float>& items);
  static gguf_value array_of_i32(const std::vector<std::int32_t>& items);

  gguf_type type() const { return type_; }
  /// Item type of an array (meaningful only when type() == array).
  gguf_type element_type() const { return element_; }
  bool is_integer() const;
  bool is_float() const { return type_ == gguf_type::f32 || type_ == gguf_type::f64; }

  // Typed access; each throws octo::error on a type mismatch or a value out of the target's range.
  // Integer getters accept any integer type whose value fits; as_f64 accepts f32, f64 and integers.
  std::uint64_t as_u64() const;
  std::int64_t as_i64() const;
  double as_f64() const;
  bool as_bool() const;
  const std::string& as_string() const;
  /// The items of an array, read on demand (see gguf_array_ref).
  gguf_array_ref as_array() const;

  // Arrays, item by item (octo::error when not an array or `i` is out of range).
  std::size_t size() const;
  gguf_value item(std::size_t i) const;
  /// Item `i` of an array of strings, viewed in place (valid while this value lives).
  std::string_view string_item(std::size_t i) const;

  bool operator==(const gguf_value&) const = default;

 private:
  gguf_value(gguf_type t, std::uint64_t bits) : type_(t), bits_(bits) {}
  bool is_signed() const;
  void check_item(std::size_t i) const;
  friend class gguf_parser;

  // Plain members rather than a std::variant: g++ 12 reports false maybe-uninitialized warnings for a
  // variant holding a vector of its own type.
  gguf_type type_ = gguf_type::u8;
  gguf_type element_ = gguf_type::u8;
  std::uint64_t bits_ = 0;  // integers (signed as two's complement), f32/f64 as a double's bits, bool;
                            // an array's item count
  std::string s_;           // a string; an array of scalars: items little-endian at their width; an array
                            // of strings: the items' bytes back to back
  std::vector<std::uint64_t> ends_;  // an array of strings: where each item ends in s_
  std::vector<gguf_value> a_;        // an array of arrays
};

/// A view of an array value's items (each returned by value); valid while the value lives.
/// @code
///   for (const auto& item : f.get_array("tokenizer.ggml.scores")) sum += item.as_f64();
/// @endcode
class gguf_array_ref {
 public:
  explicit gguf_array_ref(const gguf_value& v) : v_(&v) {}
  std::size_t size() const { return v_->size(); }
  bool empty() const { return size() == 0; }
  gguf_type element_type() const { return v_->element_type(); }
  gguf_value operator[](std::size_t i) const { return v_->item(i); }

  class iterator {
   public:
    iterator(const gguf_value* v, std::size_t i) : v_(v), i_(i) {}
    gguf_value operator*() const { return v_->item(i_); }
    iterator& operator++() {
      ++i_;
      return *this;
    }
    bool operator==(const iterator& o) const { return i_ == o.i_; }
    bool operator!=(const iterator& o) const { return i_ != o.i_; }

   private:
    const gguf_value* v_;
    std::size_t i_;
  };
  iterator begin() const { return {v_, 0}; }
  iterator end() const { return {v_, size()}; }

 private:
  const gguf_value* v_;
};

struct gguf_kv {
  std::string key;
  gguf_value value;
};

/// GGML tensor types as GGUF stores them. octo supports those with an ir::dtype (see to_dtype); the rest
/// are known so that files holding them still open and name them when used.
std::string_view ggml_type_name(std::uint32_t ggml_type);  // "Q4_K", or "" when unknown
std::optional<ir::dtype> to_dtype(std::uint32_t ggml_type);
std::uint32_t to_ggml_type(ir::dtype t);  // throws octo::error for dtypes GGUF cannot store

/// A tensor's directory entry, valid even for types octo cannot compute with.
struct gguf_tensor_info {
  std::string name;
  std::uint32_t ggml_type = 0;
  std::vector<std::int64_t> dims;  // GGUF order: dims[0] (ne0) varies fastest
  std::uint64_t offset = 0;        // from the start of the data section
  std::uint64_t size = 0;          // bytes
  std::int64_t elements() const;
};

/// A tensor octo can use: its dtype, shape and bytes inside the file's mapping.
struct gguf_tensor {
  std::string_view name;
  ir::dtype type = ir::dtype::f32;
  std::span<const std::int64_t> dims;  // GGUF order, ne0 fastest
  std::span<const std::byte> data;
  std::int64_t elements() const;
};

/// The tensor's values as float (dequantized on the CPU), ne0 fastest; for the reference VM and tests.
/// Throws octo::error if the tensor holds more than `max_elements` values.
std::vector<float> to_f32(const gguf_tensor& t, std::int64_t max_elements = std::int64_t(1) << 31);

/// An open GGUF file. Move-only; tensors' data spans stay valid while it lives.
/// @code
///   auto f = octo::model_file::gguf_file::open("model.gguf");
///   std::string arch = f.get_string("general.architecture");
///   auto emb = f.tensor("token_embd.weight");  // emb.type, emb.dims, emb.data
/// @endcode
class gguf_file {
 public:
  /// Maps and parses `path`; any problem throws octo::error naming the file and the problem.
  static gguf_file open(const std::filesystem::path& path);
  /// Parses a copy of `bytes`; `name` stands for the file name in messages (used by tests and fuzzing).
  static gguf_file from_bytes(std::span<const std::byte> bytes, std::string name = "<memory>");

  gguf_file(gguf_file&& o) noexcept;
  gguf_file& operator=(gguf_file&& o) noexcept;
  gguf_file(const gguf_file&) = delete;
  gguf_file& operator=(const gguf_file&) = delete;
  ~gguf_file();

  const std::string& path() const { return path_; }
  std::uint32_t version() const { return version_; }
  std::uint32_t alignment() const { return alignment_; }
  std::uint64_t data_offset() const { return data_offset_; }  // start of the tensor data section
  std::uint64_t file_size() const { return size_; }

  // ---- metadata -----------------------------------------------------------------------------------
  std::span<const gguf_kv> metadata() const { return kvs_; }
  const gguf_value* find(std::string_view key) const;  // nullptr when absent
  bool contains(std::string_view key) const { return find(key) != nullptr; }
  /// The value of `key`; throws octo::error naming the file and key when absent.
  const gguf_value& get(std::string_view key) const;

  // Typed getters: throw octo::error when the key is absent or holds another type / out-of-range value.
  const std::string& get_string(std::string_view key) const;
  std::uint32_t get_u32(std::string_view key) const;
  std::uint64_t get_u64(std::string_view key) const;
  std::int32_t get_i32(std::string_view key) const;
  std::int64_t get_i64(std::string_view key) const;
  float get_f32(std::string_view key) const;
  double get_f64(std::string_view key) const;
  bool get_bool(std::string_view key) const;
  gguf_array_ref get_array(std::string_view key) const;
  // Convenience conversions of whole arrays (items converted as the scalar getters do).
  std::vector<std::string_view> get_string_array(std::string_view key) const;
  std::vector<float> get_f32_array(std::string_view key) const;
  std::vector<std::int32_t> get_i32_array(std::string_view key) const;
  // With a default for absent keys (present with a wrong type still throws).
  std::uint32_t get_u32_or(std::string_view key, std::uint32_t fallback) const;
  float get_f32_or(std::string_view key, float fallback) const;
  bool get_bool_or(std::string_view key, bool fallback) const;
  std::string get_string_or(std::string_view key, std::string fallback) const;

  // ---- tensors ------------------------------------------------------------------------------------
  std::span<const gguf_tensor_info> tensors() const { return tensors_; }
  const gguf_tensor_info* find_tensor(std::string_view name) const;
  /// The tensor `name` with its bytes; throws octo::error when absent or of a type octo does not support.
  gguf_tensor tensor(std::string_view name) const;
  gguf_tensor tensor(std::size_t index) const;
  /// Copies tensor `t`'s bytes (dst.size() == t.size) with pread rather than through the mapping: a
  /// file cut short while in use is an octo::error naming it, where touching the mapping past its new
  /// end would kill the process with SIGBUS. Loaders use this; tensor()'s spans are for small files.
  void read_tensor(const gguf_tensor_info& t, std::span<std::byte> dst) const;

 private:
  gguf_file() = default;
  void parse();
  void release() noexcept;
  [[noreturn]] void fail(const std::string& problem) const;
  gguf_tensor make_tensor(const gguf_tensor_info& t) const;

  std::string path_;
  const std::byte* base_ = nullptr;
  std::uint64_t size_ = 0;
  void* map_ = nullptr;              // mmap base when memory mapped
  int fd_ = -1;                      // the open file when memory mapped (read_tensor)
  std::vector<std::byte> owned_;     // from_bytes copy
  std::uint32_t version_ = 0;
  std::uint32_t alignment_ = 32;
  std::uint64_t data_offset_ = 0;
  std::vector<gguf_kv> kvs_;
  std::unordered_map<std::string_view, std::size_t> kv_index_;  // views into kvs_[i].key
  std::vector<gguf_tensor_info> tensors_;
  std::unordered_map<std::string_view, std::size_t> tensor_index_;

  friend class gguf_parser;
};

}  // namespace octo::model_file
