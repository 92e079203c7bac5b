// The graph's node store: one plain, heap-free descriptor per node in a std::vector (never a type per
// node), appended in creation order, which is therefore a topological order. Lowering walks it once.
// Heap-free matters: in constant evaluation every std::vector / text element costs ~100 g++ operations,
// a fixed array copy costs one (docs/compile-time.md).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "octo/graph/extents.hpp"
#include "octo/ir/enums.hpp"
#include "octo/ir/param_fields.hpp"
#include "octo/ir/version.hpp"

namespace octo::detail {

/// A name of at most 79 chars, built by appending pieces and numbers without touching the heap.
struct name_buf {
  static constexpr std::size_t capacity = 79;
  std::array<char, capacity + 1> chars{};
  std::uint8_t len = 0;

  constexpr name_buf() = default;
  constexpr name_buf(std::string_view s) { append(s); }  // NOLINT: implicit, a name is a name

  constexpr std::string_view view() const { return {chars.data(), len}; }
  constexpr bool empty() const { return len == 0; }
  constexpr name_buf& append(std::string_view s) {
    if (s.size() > capacity - len) graph_error("octo::graph: a name is longer than 79 characters");
    char* d = chars.data() + len;
    for (const char* p = s.data(), *e = s.data() + s.size(); p != e; ++p, ++d) *d = *p;
    len = static_cast<std::uint8_t>(len + s.size());
    return *this;
  }
  constexpr name_buf& append(std::int64_t v) {
    char digits[24]{};
    int n = 0;
    const bool neg = v < 0;
    std::uint64_t u = neg ? std::uint64_t(0) - std::uint64_t(v) : std::uint64_t(v);
    do {
      digits[n++] = static_cast<char>('0' + static_cast<int>(u % 10));
      u /= 10;
    } while (u != 0);
    if (neg) digits[n++] = '-';
    char rev[24]{};
    for (int i = 0; i < n; ++i) rev[i] = digits[n - 1 - i];
    return append(std::string_view(rev, static_cast<std::size_t>(n)));
  }
  template <class... P>
  constexpr name_buf& append(const P&... pieces) requires(sizeof...(P) > 1) {
    (append(pieces), ...);
    return *this;
  }
};

/// An op's scalar params, heap-free (lowering turns them into an ir::param_list).
struct op_params {
  struct item {
    ir::param_key key = ir::param_key::unknown;
    bool is_real = false;
    std::int64_t i = 0;
    double f = 0.0;
  };
  std::array<item, 13> items{};
  std::int32_t n = 0;

  constexpr op_params& set(ir::param_key k, std::int64_t v) {
    item& it = slot(k);
    it.is_real = false;
    it.i = v;
    return *this;
  }
  constexpr op_params& set_real(ir::param_key k, double v) {
    item& it = slot(k);
    it.is_real = true;
    it.f = v;
    return *this;
  }
  constexpr std::int64_t get(ir::param_key k, std::int64_t fallback = 0) const {
    for (std::int32_t j = 0; j < n; ++j)
      if (items[static_cast<std::size_t>(j)].key == k) return items[static_cast<std::size_t>(j)].i;
    return fallback;
  }
  constexpr double get_real(ir::param_key k, double fallback = 0.0) const {
    for (std::int32_t j = 0; j < n; ++j)
      if (items[static_cast<std::size_t>(j)].key == k) return items[static_cast<std::size_t>(j)].f;
    return fallback;
  }

 private:
  constexpr item& slot(ir::param_key k) {
    for (std::int32_t j = 0; j < n; ++j)
      if (items[static_cast<std::size_t>(j)].key == k) return items[static_cast<std::size_t>(j)];
    if (n == static_cast<std::int32_t>(items.size())) graph_error("octo::graph: too many params on one op");
    items[static_cast<std::size_t>(n)].key = k;
    return items[static_cast<std::size_t>(n++)];
  }
};

enum class node_kind : std::uint8_t { input, weight, kv_cache, op };

struct node {
  node_kind kind = node_kind::op;
  ir::opcode op = ir::opcode::nop;
  std::array<std::int32_t, ir::abi_max_inputs> in{};
  std::int32_t n_in = 0;
  ir::dtype dtype = ir::dtype::f32;
  std::array<std::int64_t, ir::abi_max_rank> shape{};
  std::int32_t rank = 0;
  op_params params;
  name_buf name;                 // buffer name (weights: the GGUF key); empty: lowering names it OP#index
  std::int32_t layer = -1;       // model layer, carried to tasks as the `layer` param
  std::int32_t in_place = -1;    // input slot whose buffer this op writes (KV_APPEND writes its cache)
  bool is_output = false;
  bool fused_away = false;       // part of a chain lowering fused into a later node (lower.hpp)
  /// A value another node's fused task writes beside its own (its index; lower.hpp): this node keeps
  /// its buffer (and in-place slot) but gets no task of its own.
  std::int32_t written_by = -1;
  /// The values this node's task writes beside its own, in output order (RMSNORM_GEMV_QKV: the k and v
  /// caches' KV_APPEND nodes); -1 for none.
  std::array<std::int32_t, 2> also_writes{-1, -1};

  /// Rows of a row-major activation: the product of all extents but the last.
  constexpr std::int64_t numel_rows() const {
    std::int64_t r = 1;
    for (std::int32_t i = 0; i + 1 < rank; ++i) r *= shape[static_cast<std::size_t>(i)];
    return r;
  }
};

}  // namespace octo::detail
