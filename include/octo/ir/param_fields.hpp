// PARAM_FIELDS: every scalar parameter a task may carry, with its marshalled type ('i' int32 or 'f'
// real), and the per-task parameter list. Keys outside this table are kept (for round trips) but warn,
// because they cannot marshal into the on-device params record.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "octo/ir/small_vector.hpp"
#include "octo/ir/text.hpp"

namespace octo::ir {

/// Known parameter keys. The numeric value is the key's canonical slot (docs/ir.md §7 PARAM_FIELDS); append
/// only.
enum class param_key : std::uint8_t {
  K = 0, N_tile, n_off, M_tile, m_off, eps, hidden, head_dim, kv_start, kv_len, scale, n_heads,
  n_kv_heads, theta, pos, qdtype, group, rope_style, causal, q_pos, n_rot, alpha, partial, dim,
  layer, kv_block, rope_low_scale, rope_ramp_slope, rope_ramp_offset,
  unknown = 255,
};
inline constexpr int param_key_count = 29;

enum class param_type : std::uint8_t { i32, real };

struct param_field {
  std::string_view name;
  param_type type;
};

/// The table (docs/ir.md §7 "PARAM_FIELDS"); indexed by param_key.
inline constexpr std::array<param_field, param_key_count> param_fields{{
    {"K", param_type::i32},          // reduction length of a GEMV/GEMM
    {"N_tile", param_type::i32},     // output columns this tile writes
    {"n_off", param_type::i32},      // first output column of the tile
    {"M_tile", param_type::i32},     // rows (tokens) a GEMM tile processes
    {"m_off", param_type::i32},      // first row of a GEMM tile (default 0)
    {"eps", param_type::real},       // norm epsilon
    {"hidden", param_type::i32},     // row length for EMBED / norms
    {"head_dim", param_type::i32},
    {"kv_start", param_type::i32},   // first KV position an attention tile reads
    {"kv_len", param_type::i32},     // number of KV positions it reads
    {"scale", param_type::real},     // attention logit scale, 1/sqrt(head_dim) for GQA
    {"n_heads", param_type::i32},
    {"n_kv_heads", param_type::i32},
    {"theta", param_type::real},     // RoPE base
    {"pos", param_type::i32},        // position of the first token this pass (KV_APPEND)
    {"qdtype", param_type::i32},     // DEQUANT source dtype code (I8 or I4)
    {"group", param_type::i32},      // DEQUANT elements per scale
    {"rope_style", param_type::i32}, // 0 = rotate-half (NeoX; Qwen2/Qwen3), 1 = interleaved (GGUF llama)
    {"causal", param_type::i32},     // attention: 1 masks keys after each query's position
    {"q_pos", param_type::i32},      // attention: position of the first query row (causal mask)
    {"n_rot", param_type::i32},      // RoPE: rotated dims per head (default head_dim)
    {"alpha", param_type::real},     // MUL with one input: scalar factor
    {"partial", param_type::i32},    // attention: 1 writes (o, m, l) flash partials for ATTENTION_COMBINE
    {"dim", param_type::i32},        // SOFTMAX: length of the normalised (last) axis
    {"layer", param_type::i32},      // the model layer a task belongs to (metrics, streaming)
    {"kv_block", param_type::i32},   // attention: KV positions per split (split-K decode)
    // RoPE frequency scaling (Llama 3's; semantics::rope_ramp): inv_freq_i is multiplied by
    // low_scale + s_i (1 - low_scale), s_i = clamp(slope * inv_freq_i + offset, 0, 1). Absent: no scaling.
    {"rope_low_scale", param_type::real},    // the lowest frequencies' multiplier (1 / factor)
    {"rope_ramp_slope", param_type::real},   // per unit of inv_freq
    {"rope_ramp_offset", param_type::real},
}};

constexpr std::optional<param_key> parse_param_key(std::string_view s) {
  for (int i = 0; i < param_key_count; ++i)
    if (param_fields[static_cast<std::size_t>(i)].name == s) return static_cast<param_key>(i);
  return std::nullopt;
}

constexpr std::string_view name(param_key k) {
  auto i = static_cast<std::size_t>(k);
  return i < param_fields.size() ? param_fields[i].name : std::string_view{"?"};
}

/// One parameter value. JSON integers arrive as `integer`, other numbers as `real`; validate()
/// checks the value against the field's type.
struct param {
  param_key key = param_key::unknown;
  bool is_real = false;
  std::int64_t i = 0;
  double f = 0.0;
  text unknown_name;  // the key's text when key == unknown

  constexpr std::string_view key_name() const {
    return key == param_key::unknown ? std::string_view(unknown_name) : name(key);
  }
  constexpr double as_real() const { return is_real ? f : static_cast<double>(i); }
  friend constexpr bool operator==(const param&, const param&) = default;
};

/// Params a task keeps inline (a tiled attention task carries about ten); more spill to the heap.
inline constexpr std::size_t param_list_inline = 12;

/// A task's parameters, in insertion order (so JSON round trips keep their order).
struct param_list {
  small_vector<param, param_list_inline> items;

  constexpr param_list() = default;

  constexpr param_list& set(param_key k, std::int64_t v) {
    auto& p = slot(k);
    p.is_real = false;
    p.i = v;
    p.f = 0.0;
    return *this;
  }
  constexpr param_list& set_real(param_key k, double v) {
    auto& p = slot(k);
    p.is_real = true;
    p.f = v;
    p.i = 0;
    return *this;
  }
  constexpr const param* find(param_key k) const {
    for (const auto& p : items)
      if (p.key == k) return &p;
    return nullptr;
  }
  constexpr bool has(param_key k) const { return find(k) != nullptr; }
  /// Integer value of `k`, or `fallback` when absent.
  constexpr std::int64_t get(param_key k, std::int64_t fallback = 0) const {
    const param* p = find(k);
    return p ? (p->is_real ? static_cast<std::int64_t>(p->f) : p->i) : fallback;
  }
  constexpr double get_real(param_key k, double fallback = 0.0) const {
    const param* p = find(k);
    return p ? p->as_real() : fallback;
  }
  constexpr std::size_t size() const { return items.size(); }
  friend constexpr bool operator==(const param_list&, const param_list&) = default;

 private:
  constexpr param& slot(param_key k) {
    for (auto& p : items)
      if (p.key == k) return p;
    items.push_back(param{k, false, 0, 0.0, {}});
    return items.back();
  }
};

}  // namespace octo::ir
