// The CPU reference VM (include/octo/vm/reference_vm.hpp): storage, conversions, counter-driven firing,
// and the dispatch from a task to its opcode's reference function in include/octo/ops/.

#include "octo/vm/reference_vm.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <random>
#include <string>
#include <utility>

#include "octo/detail/element_convert.hpp"
#include "octo/detail/quant_blocks.hpp"
#include "octo/error.hpp"
#include "octo/ir/validate.hpp"
#include "octo/ops/add.hpp"
#include "octo/ops/allreduce_shard.hpp"
#include "octo/ops/attention_combine.hpp"
#include "octo/ops/attention_tile.hpp"
#include "octo/ops/copy.hpp"
#include "octo/ops/dequant.hpp"
#include "octo/ops/embed.hpp"
#include "octo/ops/fused.hpp"
#include "octo/ops/gelu.hpp"
#include "octo/ops/gemm_tile.hpp"
#include "octo/ops/gemv_tile.hpp"
#include "octo/ops/kv_append.hpp"
#include "octo/ops/layernorm.hpp"
#include "octo/ops/mul.hpp"
#include "octo/ops/nop.hpp"
#include "octo/ops/rmsnorm.hpp"
#include "octo/ops/rope.hpp"
#include "octo/ops/sample_argmax.hpp"
#include "octo/ops/silu_mul.hpp"
#include "octo/ops/softmax.hpp"

namespace octo::vm {
namespace {

namespace ref = octo::ops::reference;
using ir::param_key;

std::string task_name(const ir::task& t) {
  std::string s = std::string(ir::name(t.op)) + "#" + std::to_string(t.id);
  if (!t.label.empty()) s += " '" + t.label.str() + "'";
  return s;
}

bool cacheable(ir::buffer_kind k) { return k == ir::buffer_kind::weight || k == ir::buffer_kind::constant; }

/// Dequantizes a whole GGUF block-quantized buffer (rows never split a block, so the buffer is one
/// long row as far as the block format is concerned).
void block_to_f32(const ir::buffer& b, std::span<const std::byte> src, std::span<float> dst) {
  try {
    detail::dequantize_row(b.dtype, reinterpret_cast<const std::uint8_t*>(src.data()), dst.data(),
                           static_cast<std::int64_t>(dst.size()));
  } catch (const octo::error& e) {
    throw octo::error("buffer '" + b.name.str() + "': " + e.what());
  }
}

}  // namespace

reference_vm::reference_vm(ir::program program, std::uint64_t memory_budget) : program_(std::move(program)) {
  const auto result = ir::validate(program_);
  if (!result.ok)
    throw octo::error("reference_vm: the program is rejected by validate(): " +
                      (result.errors.empty() ? std::string("(no message)") : result.errors.front().str()));
  if (memory_budget == 0) {
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    memory_budget = pages > 0 && page > 0 ? std::uint64_t(pages) / 4 * 3 * std::uint64_t(page) : std::uint64_t(1) << 34;
  }
  std::uint64_t total = 0, largest = 0;
  std::size_t largest_at = 0;
  for (std::size_t i = 0; i < program_.buffers.size(); ++i) {
    const auto n = program_.buffers[i].nbytes();
    // 256 TiB is beyond any host; refusing it up front also keeps sanitizers' allocators from aborting.
    constexpr std::int64_t max_buffer_bytes = std::int64_t(1) << 48;
    if (n < 0 || n > max_buffer_bytes)
      throw octo::error("reference_vm: buffer '" + program_.buffers[i].name.str() + "' has an impossible size of " +
                        std::to_string(n) + " bytes");
    total += std::uint64_t(n);
    if (std::uint64_t(n) > largest) largest = std::uint64_t(n), largest_at = i;
  }
  if (total > memory_budget) {
    const auto mib = [](std::uint64_t b) { return std::to_string(b >> 20) + " MiB"; };
    throw octo::error("reference_vm: the program's buffers need " + mib(total) + " (the largest, '" +
                      program_.buffers[largest_at].name.str() + "', " + mib(largest) + "), more than the memory budget of " +
                      mib(memory_budget) + " (a smaller context length needs less)");
  }
  storage_.resize(program_.buffers.size());
  for (std::size_t i = 0; i < program_.buffers.size(); ++i) {
    const auto n = program_.buffers[i].nbytes();
    try {
      storage_[i].assign(static_cast<std::size_t>(n), std::byte{0});
    } catch (const std::exception&) {  // bad_alloc / length_error: a size no host can hold
      throw octo::error("reference_vm: cannot allocate " + std::to_string(n) + " bytes for buffer '" +
                        program_.buffers[i].name.str() + "'");
    }
  }
  weight_cache_.resize(program_.buffers.size());
  weight_cached_.assign(program_.buffers.size(), false);
  counters_.assign(program_.counters.size(), 0);
  for (const auto& t : program_.tasks) base_params_.push_back(t.params);
}

const ir::buffer& reference_vm::buf(std::int32_t id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= program_.buffers.size())
    throw octo::error("reference_vm: no buffer with id " + std::to_string(id));
  return program_.buffers[static_cast<std::size_t>(id)];
}

std::int32_t reference_vm::buffer_id(std::string_view name) const {
  for (const auto& b : program_.buffers)
    if (b.name == name) return b.id;
  throw octo::error("reference_vm: no buffer named '" + std::string(name) + "'");
}

// ---- storage ------------------------------------------------------------------------------------

void reference_vm::store_f32(std::int32_t id, std::span<const float> values) {
  const auto& b = buf(id);
  if (static_cast<std::int64_t>(values.size()) != b.numel())
    throw octo::error("reference_vm: buffer '" + b.name.str() + "' holds " + std::to_string(b.numel()) +
                      " elements, got " + std::to_string(values.size()));
  if (ir::is_block_quantized(b.dtype))
    throw octo::error("reference_vm: buffer '" + b.name.str() + "' is block-quantized (" +
                      std::string(ir::name(b.dtype)) + "); write its raw blocks with write_bytes");
  auto& s = storage_[static_cast<std::size_t>(id)];
  detail::from_f32(b.dtype, values, s);
  weight_cached_[static_cast<std::size_t>(id)] = false;
}

void reference_vm::store_i32(std::int32_t id, std::span<const std::int32_t> values) {
  const auto& b = buf(id);
  if (static_cast<std::int64_t>(values.size()) != b.numel())
    throw octo::error("reference_vm: buffer '" + b.name.str() + "' holds " + std::to_string(b.numel()) +
                      " elements, got " + std::to_string(values.size()));
  if (b.dtype == ir::dtype::i32) {
    auto& s = storage_[static_cast<std::size_t>(id)];
    for (std::size_t i = 0; i < values.size(); ++i) {
      const auto u = static_cast<std::uint32_t>(values[i]);
      for (int k = 0; k < 4; ++k) s[4 * i + static_cast<std::size_t>(k)] = static_cast<std::byte>((u >> (8 * k)) & 0xffu);
    }
    weight_cached_[static_cast<std::size_t>(id)] = false;
    return;
  }
  std::vector<float> f(values.begin(), values.end());
  store_f32(id, f);
}

void reference_vm::write(std::int32_t id, std::span<const float> values) { store_f32(id, values); }
void reference_vm::write_i32(std::int32_t id, std::span<const std::int32_t> values) { store_i32(id, values); }

void reference_vm::write_bytes(std::int32_t id, std::span<const std::byte> bytes) {
  const auto& b = buf(id);
  if (static_cast<std::int64_t>(bytes.size()) != b.nbytes())
    throw octo::error("reference_vm: buffer '" + b.name.str() + "' holds " + std::to_string(b.nbytes()) +
                      " bytes, got " + std::to_string(bytes.size()));
  storage_[static_cast<std::size_t>(id)].assign(bytes.begin(), bytes.end());
  weight_cached_[static_cast<std::size_t>(id)] = false;
}

std::span<const float> reference_vm::view_f32(std::int32_t id, std::vector<float>& scratch) const {
  const auto& b = buf(id);
  const auto i = static_cast<std::size_t>(id);
  const bool cache = cacheable(b.kind);
  if (cache && weight_cached_[i]) return weight_cache_[i];
  auto& dst = cache ? weight_cache_[i] : scratch;
  dst.assign(static_cast<std::size_t>(b.numel()), 0.0f);
  if (ir::is_block_quantized(b.dtype))
    block_to_f32(b, storage_[i], dst);
  else
    detail::to_f32(b.dtype, storage_[i], dst);
  if (cache) weight_cached_[i] = true;
  return dst;
}

std::vector<float> reference_vm::read_f32(std::int32_t id) const {
  std::vector<float> scratch;
  auto v = view_f32(id, scratch);
  return {v.begin(), v.end()};
}

std::vector<std::int32_t> reference_vm::read_i32(std::int32_t id) const {
  const auto& b = buf(id);
  const auto& s = storage_[static_cast<std::size_t>(id)];
  std::vector<std::int32_t> out(static_cast<std::size_t>(b.numel()));
  if (b.dtype == ir::dtype::i32) {
    for (std::size_t i = 0; i < out.size(); ++i) {
      std::uint32_t u = 0;
      for (int k = 0; k < 4; ++k) u |= static_cast<std::uint32_t>(s[4 * i + static_cast<std::size_t>(k)]) << (8 * k);
      out[i] = static_cast<std::int32_t>(u);
    }
    return out;
  }
  const auto f = read_f32(id);
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<std::int32_t>(detail::to_integer(f[i], std::numeric_limits<std::int32_t>::min(),
                                                          std::numeric_limits<std::int32_t>::max()));
  return out;
}

std::span<const std::byte> reference_vm::bytes(std::int32_t id) const {
  buf(id);
  return storage_[static_cast<std::size_t>(id)];
}

// ---- params -------------------------------------------------------------------------------------

void reference_vm::set_param(std::int32_t task, ir::param_key key, std::int64_t value) {
  if (task < 0 || static_cast<std::size_t>(task) >= program_.tasks.size())
    throw octo::error("reference_vm::set_param: no task with id " + std::to_string(task));
  if (static_cast<int>(key) >= ir::param_key_count ||
      ir::param_fields[static_cast<std::size_t>(key)].type != ir::param_type::i32)
    throw octo::error("reference_vm::set_param: '" + std::string(ir::name(key)) + "' is not an integer param");
  if (value < std::numeric_limits<std::int32_t>::min() || value > std::numeric_limits<std::int32_t>::max())
    throw octo::error("reference_vm::set_param: " + std::to_string(value) + " does not fit int32");
  program_.tasks[static_cast<std::size_t>(task)].params.set(key, value);
}

void reference_vm::set_param_real(std::int32_t task, ir::param_key key, double value) {
  if (task < 0 || static_cast<std::size_t>(task) >= program_.tasks.size())
    throw octo::error("reference_vm::set_param_real: no task with id " + std::to_string(task));
  if (static_cast<int>(key) >= ir::param_key_count ||
      ir::param_fields[static_cast<std::size_t>(key)].type != ir::param_type::real)
    throw octo::error("reference_vm::set_param_real: '" + std::string(ir::name(key)) + "' is not a real param");
  program_.tasks[static_cast<std::size_t>(task)].params.set_real(key, value);
}

int reference_vm::set_param_all(ir::param_key key, std::int64_t value) {
  int n = 0;
  for (const auto& t : program_.tasks)
    if (t.params.has(key)) {
      set_param(t.id, key, value);
      ++n;
    }
  return n;
}

void reference_vm::set_position(std::int64_t position) {
  for (const auto& t : program_.tasks)
    for (auto key : {param_key::pos, param_key::q_pos, param_key::kv_len}) {
      const auto& base = base_params_[static_cast<std::size_t>(t.id)];
      if (base.has(key)) set_param(t.id, key, base.get(key) + position);
    }
}

// ---- firing -------------------------------------------------------------------------------------

void reference_vm::run(const run_options& options) {
  const auto n = program_.tasks.size();
  for (std::size_t c = 0; c < counters_.size(); ++c) counters_[c] = program_.counters[c].init;
  order_.clear();
  std::vector<bool> fired(n, false);
  auto ready = [&](const ir::task& t) {
    return std::all_of(t.waits.begin(), t.waits.end(), [&](const ir::wait& w) {
      return counters_[static_cast<std::size_t>(w.counter)] >= w.threshold;
    });
  };
  auto fire = [&](const ir::task& t) {
    try {
      execute(t);
    } catch (const octo::error& e) {
      throw octo::error("reference_vm: " + task_name(t) + ": " + e.what());
    }
    fired[static_cast<std::size_t>(t.id)] = true;
    order_.push_back(t.id);
    ++counters_[static_cast<std::size_t>(t.out_counter)];  // exactly one increment, after all writes
  };
  std::mt19937_64 rng(options.seed);
  std::vector<std::int32_t> wave;
  for (;;) {
    wave.clear();
    for (const auto& t : program_.tasks)
      if (!fired[static_cast<std::size_t>(t.id)] && ready(t)) wave.push_back(t.id);
    if (wave.empty()) break;
    if (options.shuffle) {
      // One random ready task, then look again: covers interleavings a wave order never produces.
      std::uniform_int_distribution<std::size_t> pick(0, wave.size() - 1);
      fire(program_.tasks[static_cast<std::size_t>(wave[pick(rng)])]);
    } else {
      for (auto id : wave) fire(program_.tasks[static_cast<std::size_t>(id)]);
    }
  }
  if (order_.size() != n) {
    for (const auto& t : program_.tasks) {
      if (fired[static_cast<std::size_t>(t.id)]) continue;
      for (const auto& w : t.waits) {
        const auto v = counters_[static_cast<std::size_t>(w.counter)];
        if (v < w.threshold)
          throw octo::error("reference_vm: stuck: " + task_name(t) + " waits for counter " + std::to_string(w.counter) +
                            " >= " + std::to_string(w.threshold) + ", which stays at " + std::to_string(v) + " (" +
                            std::to_string(n - order_.size()) + " tasks never fired)");
      }
    }
    throw octo::error("reference_vm: stuck with " + std::to_string(n - order_.size()) + " tasks unfired");
  }
  ++runs_;
}

// ---- one task -----------------------------------------------------------------------------------

void reference_vm::execute(const ir::task& t) {
  const auto& P = t.params;
  std::vector<std::vector<float>> scratch(t.inputs.size());
  auto in = [&](std::size_t k) -> std::span<const float> {
    if (k >= t.inputs.size()) return {};
    return view_f32(t.inputs[k], scratch[k]);
  };
  auto in_buf = [&](std::size_t k) -> const ir::buffer& { return buf(t.inputs.at(k)); };
  // Outputs start from the buffer's current contents: tiles and KV_APPEND write only part of them.
  std::vector<float> out_scratch;
  std::vector<float> out;
  if (!t.outputs.empty()) {
    auto v = view_f32(t.outputs[0], out_scratch);
    out.assign(v.begin(), v.end());
  }
  auto commit = [&] { store_f32(t.outputs.at(0), out); };
  auto last_extent = [](const ir::buffer& b) -> std::int64_t { return b.shape.empty() ? b.numel() : b.shape.back(); };

  switch (t.op) {
    case ir::opcode::nop: ref::nop(); return;
    case ir::opcode::copy: ref::copy(in(0), out); break;
    case ir::opcode::embed: {
      const auto ids = read_i32(t.inputs.at(0));
      ref::embed(ids, in(1), out, P.get(param_key::hidden));
      break;
    }
    case ir::opcode::rmsnorm:
      ref::rmsnorm(in(0), in(1), out, P.get(param_key::hidden), static_cast<float>(P.get_real(param_key::eps)),
                   P.get(param_key::m_off, 0));
      break;
    case ir::opcode::layernorm:
      ref::layernorm(in(0), in(1), in(2), out, P.get(param_key::hidden), static_cast<float>(P.get_real(param_key::eps)));
      break;
    case ir::opcode::gemv_tile:
      ref::gemv_tile(in(0), in(1), in(2), out, P.get(param_key::K), P.get(param_key::N_tile), P.get(param_key::n_off));
      break;
    case ir::opcode::gemm_tile:
      ref::gemm_tile(in(0), in(1), in(2), out, P.get(param_key::M_tile), P.get(param_key::K), P.get(param_key::N_tile),
                     P.get(param_key::n_off), P.get(param_key::m_off, 0));
      break;
    case ir::opcode::attention_tile: {
      ref::attention_params ap;
      ap.head_dim = P.get(param_key::head_dim);
      ap.kv_start = P.get(param_key::kv_start);
      ap.kv_len = P.get(param_key::kv_len);
      ap.scale = static_cast<float>(P.get_real(param_key::scale));
      ap.n_heads = P.get(param_key::n_heads);
      ap.n_kv_heads = P.get(param_key::n_kv_heads);
      ap.causal = P.get(param_key::causal, 0) != 0;
      ap.q_pos = P.get(param_key::q_pos, 0);
      ap.partial = P.get(param_key::partial, 0) != 0;
      ref::attention_tile(in(0), in(1), in(2), out, ap);
      break;
    }
    case ir::opcode::rope: {
      const auto pos = read_i32(t.inputs.at(1));
      const auto hd = P.get(param_key::head_dim);
      ref::rope(in(0), pos, out, hd, static_cast<float>(P.get_real(param_key::theta)), P.get(param_key::rope_style, 0),
                P.get(param_key::n_rot, hd));
      break;
    }
    case ir::opcode::silu_mul: ref::silu_mul(in(0), in(1), out); break;
    case ir::opcode::gelu: ref::gelu(in(0), out); break;
    case ir::opcode::add: ref::add(in(0), in(1), out); break;
    case ir::opcode::mul:
      if (t.inputs.size() == 1) {
        ref::mul(in(0), out, static_cast<float>(P.get_real(param_key::alpha, 1.0)));
      } else {
        if (P.has(param_key::alpha) && P.get_real(param_key::alpha) != 1.0)
          throw octo::error("MUL: alpha applies to the one-input form only (docs/opcodes.md)");
        ref::mul(in(0), in(1), out);
      }
      break;
    case ir::opcode::dequant: {
      const auto& q = in_buf(0);
      const auto qdtype = static_cast<ir::dtype>(P.get(param_key::qdtype));
      if (P.get(param_key::qdtype) != static_cast<std::int64_t>(q.dtype))
        throw octo::error("DEQUANT: qdtype " + std::to_string(P.get(param_key::qdtype)) + " does not match input '" +
                          q.name.str() + "' of dtype " + std::string(ir::name(q.dtype)));
      if (q.numel() != static_cast<std::int64_t>(out.size()))
        throw octo::error("DEQUANT: input and output element counts differ");
      ref::dequant(storage_[static_cast<std::size_t>(q.id)], qdtype, in(1), in(2), out, P.get(param_key::group));
      break;
    }
    case ir::opcode::softmax:
      ref::softmax(in(0), out, P.get(param_key::dim, last_extent(in_buf(0))));
      break;
    case ir::opcode::allreduce_shard: {
      std::vector<std::span<const float>> shards;
      for (std::size_t k = 0; k < t.inputs.size(); ++k) shards.push_back(in(k));
      ref::allreduce_shard(shards, out);
      break;
    }
    case ir::opcode::kv_append: {
      const auto& cache = buf(t.outputs.at(0));
      if (t.inputs.at(1) != t.outputs.at(0))
        throw octo::error("KV_APPEND: the output must be the cache buffer given as the second input");
      const std::int64_t S = cache.shape.empty() ? 0 : cache.shape.front();
      if (S <= 0) throw octo::error("KV_APPEND: cache '" + cache.name.str() + "' has no positions");
      ref::kv_append(in(0), out, cache.numel() / S, P.get(param_key::pos));
      break;
    }
    case ir::opcode::sample_argmax: {
      std::vector<std::int32_t> ids(out.size());
      ref::sample_argmax(in(0), ids, last_extent(in_buf(0)));
      store_i32(t.outputs.at(0), ids);
      return;
    }
    case ir::opcode::attention_combine: {
      const auto& p0 = in_buf(0);
      if (p0.shape.size() != 3 || p0.shape[2] < 3)
        throw octo::error("ATTENTION_COMBINE: partial '" + p0.name.str() +
                          "' must have shape [T, n_heads, head_dim+2]");
      std::vector<std::span<const float>> parts;
      for (std::size_t k = 0; k < t.inputs.size(); ++k) {
        if (in_buf(k).shape != p0.shape)
          throw octo::error("ATTENTION_COMBINE: partial '" + in_buf(k).name.str() + "' differs in shape from '" +
                            p0.name.str() + "'");
        parts.push_back(in(k));
      }
      ref::attention_combine(parts, out, p0.shape[0], p0.shape[1], p0.shape[2] - 2);
      break;
    }
    case ir::opcode::rmsnorm_gemv:
      ref::rmsnorm_gemv(in(0), in(1), in(2), in(3), out, P.get(param_key::hidden),
                        static_cast<float>(P.get_real(param_key::eps)), P.get(param_key::K), P.get(param_key::N_tile),
                        P.get(param_key::n_off));
      break;
    case ir::opcode::gemv_add:
      ref::gemv_add(in(0), in(1), in(2), out, P.get(param_key::K), P.get(param_key::N_tile), P.get(param_key::n_off));
      break;
    case ir::opcode::rmsnorm_swiglu:
      ref::rmsnorm_swiglu(in(0), in(1), in(2), in(3), out, P.get(param_key::hidden),
                          static_cast<float>(P.get_real(param_key::eps)), P.get(param_key::K), P.get(param_key::N_tile),
                          P.get(param_key::n_off));
      break;
    case ir::opcode::rmsnorm_gemv_rope:
    case ir::opcode::rmsnorm_gemv_kv: {
      // Slots: ROPE [x, norm_w, W, pos(, b)]; KV [x, norm_w, W, cache(, pos when n_rot > 0)(, b)].
      const bool kv = t.op == ir::opcode::rmsnorm_gemv_kv;
      const ref::fused_rope r{P.get(param_key::head_dim), static_cast<float>(P.get_real(param_key::theta)),
                              P.get(param_key::rope_style, 0), P.get(param_key::n_rot)};
      const std::size_t pos_slot = kv ? 4 : 3;
      const bool rotates = !kv || r.n_rot > 0;
      const std::size_t bias_slot = rotates ? pos_slot + 1 : pos_slot;
      const auto positions = rotates ? read_i32(t.inputs.at(pos_slot)) : std::vector<std::int32_t>{};
      const float eps = static_cast<float>(P.get_real(param_key::eps));
      if (!kv) {
        ref::rmsnorm_gemv_rope(in(0), in(1), in(2), in(bias_slot), positions, out, P.get(param_key::hidden), eps,
                               P.get(param_key::K), r);
        break;
      }
      const auto& cache = buf(t.outputs.at(0));
      if (t.inputs.at(3) != t.outputs.at(0))
        throw octo::error("RMSNORM_GEMV_KV: the output must be the cache buffer given as input 3");
      const std::int64_t S = cache.shape.empty() ? 0 : cache.shape.front();
      if (S <= 0) throw octo::error("RMSNORM_GEMV_KV: cache '" + cache.name.str() + "' has no positions");
      ref::rmsnorm_gemv_kv(in(0), in(1), in(2), in(bias_slot), positions, out, cache.numel() / S,
                           P.get(param_key::hidden), eps, P.get(param_key::K), r, P.get(param_key::pos));
      break;
    }
    case ir::opcode::rmsnorm_rope:
    case ir::opcode::rmsnorm_rope_kv: {
      const bool kv = t.op == ir::opcode::rmsnorm_rope_kv;
      const ref::fused_rope r{P.get(param_key::head_dim), static_cast<float>(P.get_real(param_key::theta)),
                              P.get(param_key::rope_style, 0), P.get(param_key::n_rot)};
      const auto positions = read_i32(t.inputs.at(kv ? 3 : 2));
      const float eps = static_cast<float>(P.get_real(param_key::eps));
      if (!kv) {
        ref::rmsnorm_rope(in(0), in(1), positions, out, P.get(param_key::hidden), eps, r);
        break;
      }
      const auto& cache = buf(t.outputs.at(0));
      if (t.inputs.at(2) != t.outputs.at(0))
        throw octo::error("RMSNORM_ROPE_KV: the output must be the cache buffer given as input 2");
      const std::int64_t S = cache.shape.empty() ? 0 : cache.shape.front();
      if (S <= 0) throw octo::error("RMSNORM_ROPE_KV: cache '" + cache.name.str() + "' has no positions");
      ref::rmsnorm_rope_kv(in(0), in(1), positions, out, cache.numel() / S, P.get(param_key::hidden), eps, r,
                           P.get(param_key::pos));
      break;
    }
    default:
      throw octo::error("unknown opcode " + std::to_string(static_cast<int>(t.op)));
  }
  commit();
}

}  // namespace octo::vm
