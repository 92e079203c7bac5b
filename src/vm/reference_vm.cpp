// The CPU reference VM (include/octo/vm/reference_vm.hpp): storage, conversions, counter-driven firing,
// and the dispatch from a task to its opcode's reference function in include/octo/semantics/.

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
#include "octo/ir/op_registry.hpp"
#include "octo/ir/validate.hpp"
#include "octo/semantics/add.hpp"
#include "octo/semantics/allreduce_shard.hpp"
#include "octo/semantics/attention_combine.hpp"
#include "octo/semantics/attention_tile.hpp"
#include "octo/semantics/copy.hpp"
#include "octo/semantics/dequant.hpp"
#include "octo/semantics/embed.hpp"
#include "octo/semantics/fused.hpp"
#include "octo/semantics/gelu.hpp"
#include "octo/semantics/gemm_tile.hpp"
#include "octo/semantics/gemv_tile.hpp"
#include "octo/semantics/kv_append.hpp"
#include "octo/semantics/layernorm.hpp"
#include "octo/semantics/mul.hpp"
#include "octo/semantics/nop.hpp"
#include "octo/semantics/rmsnorm.hpp"
#include "octo/semantics/rope.hpp"
#include "octo/semantics/sample_argmax.hpp"
#include "octo/semantics/silu_mul.hpp"
#include "octo/semantics/softmax.hpp"

namespace octo::vm {
namespace {

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

void reference_vm::set_layer_skipped(std::int32_t layer, bool skipped) {
  if (layers_.empty()) layers_ = ir::layer_spans(program_);
  std::size_t k = 0;
  while (k < layers_.size() && layers_[k].layer != layer) ++k;
  if (k == layers_.size()) throw octo::error("reference_vm: the program has no layer " + std::to_string(layer));
  const auto& span = layers_[k];
  if (span.input < 0)
    throw octo::error("reference_vm: layer " + std::to_string(layer) +
                      " cannot be skipped: its first task does not read an activation of its output's size");
  if (skip_.empty()) skip_.assign(program_.tasks.size(), -1);
  for (const auto id : span.tasks) skip_[static_cast<std::size_t>(id)] = skipped ? static_cast<std::int32_t>(k) : -1;
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
      const auto skipped = skip_.empty() ? -1 : skip_[static_cast<std::size_t>(t.id)];
      if (skipped < 0) {
        execute(t);
      } else if (const auto& span = layers_[static_cast<std::size_t>(skipped)]; span.tasks.back() == t.id) {
        std::vector<float> scratch;
        const auto in = view_f32(span.input, scratch);
        store_f32(span.output, std::vector<float>(in.begin(), in.end()));
      }
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

/// Inputs are converted to f32 when first read; the output starts from the buffer's current contents
/// (tiles write only part of it) and is stored back after the op, unless the op stored it itself
/// (SAMPLE_ARGMAX's I32 ids; KV_APPEND, which encodes its rows into the stored bytes in place).
struct reference_vm::task_io {
  task_io(reference_vm& vm_, const ir::task& t_) : vm(vm_), t(t_), P(t_.params), scratch(t_.inputs.size()) {
    // Cache writers encode into the stored bytes themselves (out_bytes): an F16 or Q8_0 cache has no f32 view.
    if (t.outputs.empty() || t.op == ir::opcode::kv_append || t.op == ir::opcode::rmsnorm_gemv_kv ||
        t.op == ir::opcode::rmsnorm_rope_kv || t.op == ir::opcode::rmsnorm_gemv_norm_kv)
      return;
    std::vector<float> out_scratch;
    auto v = vm.view_f32(t.outputs[0], out_scratch);
    out.assign(v.begin(), v.end());
  }

  reference_vm& vm;
  const ir::task& t;
  const ir::param_list& P;
  std::vector<std::vector<float>> scratch;
  std::vector<float> out;
  bool stored = false;  // the op stored its output itself (SAMPLE_ARGMAX's I32 ids, KV_APPEND's rows)

  std::span<const float> in(std::size_t k) {
    if (k >= t.inputs.size()) return {};
    return vm.view_f32(t.inputs[k], scratch[k]);
  }
  const ir::buffer& in_buf(std::size_t k) const { return vm.buf(t.inputs.at(k)); }
  std::vector<std::int32_t> in_i32(std::size_t k) const { return vm.read_i32(t.inputs.at(k)); }
  std::span<const std::byte> in_bytes(std::size_t k) const { return vm.storage_[static_cast<std::size_t>(in_buf(k).id)]; }
  const ir::buffer& out_buf() const { return vm.buf(t.outputs.at(0)); }
  /// The output's stored bytes, for an op that writes them in place.
  std::span<std::byte> out_bytes() {
    stored = true;
    return vm.storage_[static_cast<std::size_t>(out_buf().id)];
  }
  /// Output k's buffer and stored bytes (RMSNORM_GEMV_QKV writes its caches, outputs 1 and 2, in place).
  const ir::buffer& out_buf_at(std::size_t k) const { return vm.buf(t.outputs.at(k)); }
  std::span<std::byte> out_bytes_at(std::size_t k) { return vm.storage_[static_cast<std::size_t>(out_buf_at(k).id)]; }
  void store_i32(std::span<const std::int32_t> ids) {
    vm.store_i32(t.outputs.at(0), ids);
    stored = true;
  }
  static std::int64_t last_extent(const ir::buffer& b) { return b.shape.empty() ? b.numel() : b.shape.back(); }
  std::vector<std::span<const float>> all_inputs() {
    std::vector<std::span<const float>> v;
    for (std::size_t k = 0; k < t.inputs.size(); ++k) v.push_back(in(k));
    return v;
  }
};

namespace {

using task_io = reference_vm::task_io;

/// The reference VM's column of the opcode table: each opcode's reference function (include/octo/semantics/).
struct reference_row {
  ir::opcode op;
  void (*run)(task_io&);
};

// The fused ops' shared params (docs/opcodes.md "Fused ops").
float fused_eps(const task_io& io) { return static_cast<float>(io.P.get_real(param_key::eps)); }
semantics::fused_rope fused_rope_of(const task_io& io) {
  return {io.P.get(param_key::head_dim), static_cast<float>(io.P.get_real(param_key::theta)),
          io.P.get(param_key::rope_style, 0), io.P.get(param_key::n_rot), semantics::rope_ramp_of(io.P)};
}
/// The row length of the KV cache a fused op writes in place (its input `slot`).
std::int64_t fused_cache_row(const task_io& io, std::size_t slot) {
  const auto& cache = io.out_buf();
  if (io.t.inputs.at(slot) != io.t.outputs.at(0))
    throw octo::error(std::string(ir::name(io.t.op)) + ": the output must be the cache buffer given as input " +
                      std::to_string(slot));
  const std::int64_t S = cache.shape.empty() ? 0 : cache.shape.front();
  if (S <= 0) throw octo::error(std::string(ir::name(io.t.op)) + ": cache '" + cache.name.str() + "' has no positions");
  return cache.numel() / S;
}

constexpr reference_row reference_rows[] = {
    {ir::opcode::nop, [](task_io&) { semantics::nop(); }},
    {ir::opcode::copy, [](task_io& io) { semantics::copy(io.in(0), io.out); }},
    {ir::opcode::embed,
     [](task_io& io) { semantics::embed(io.in_i32(0), io.in(1), io.out, io.P.get(param_key::hidden)); }},
    {ir::opcode::rmsnorm,
     [](task_io& io) {
       semantics::rmsnorm(io.in(0), io.in(1), io.out, io.P.get(param_key::hidden),
                          static_cast<float>(io.P.get_real(param_key::eps)), io.P.get(param_key::m_off, 0));
     }},
    {ir::opcode::layernorm,
     [](task_io& io) {
       semantics::layernorm(io.in(0), io.in(1), io.in(2), io.out, io.P.get(param_key::hidden),
                            static_cast<float>(io.P.get_real(param_key::eps)));
     }},
    {ir::opcode::gemv_tile,
     [](task_io& io) {
       semantics::gemv_tile(io.in(0), io.in(1), io.in(2), io.out, io.P.get(param_key::K), io.P.get(param_key::N_tile),
                            io.P.get(param_key::n_off));
     }},
    {ir::opcode::gemm_tile,
     [](task_io& io) {
       semantics::gemm_tile(io.in(0), io.in(1), io.in(2), io.out, io.P.get(param_key::M_tile), io.P.get(param_key::K),
                            io.P.get(param_key::N_tile), io.P.get(param_key::n_off), io.P.get(param_key::m_off, 0));
     }},
    {ir::opcode::attention_tile,
     [](task_io& io) {
       const auto& P = io.P;
       semantics::attention_params ap;
       ap.head_dim = P.get(param_key::head_dim);
       ap.kv_start = P.get(param_key::kv_start);
       ap.kv_len = P.get(param_key::kv_len);
       ap.scale = static_cast<float>(P.get_real(param_key::scale));
       ap.n_heads = P.get(param_key::n_heads);
       ap.n_kv_heads = P.get(param_key::n_kv_heads);
       ap.causal = P.get(param_key::causal, 0) != 0;
       ap.q_pos = P.get(param_key::q_pos, 0);
       ap.partial = P.get(param_key::partial, 0) != 0;
       semantics::attention_tile(io.in(0), io.in(1), io.in(2), io.out, ap);
     }},
    {ir::opcode::rope,
     [](task_io& io) {
       const auto hd = io.P.get(param_key::head_dim);
       semantics::rope(io.in(0), io.in_i32(1), io.out, hd, static_cast<float>(io.P.get_real(param_key::theta)),
                       io.P.get(param_key::rope_style, 0), io.P.get(param_key::n_rot, hd), semantics::rope_ramp_of(io.P));
     }},
    {ir::opcode::silu_mul, [](task_io& io) { semantics::silu_mul(io.in(0), io.in(1), io.out); }},
    {ir::opcode::gelu, [](task_io& io) { semantics::gelu(io.in(0), io.out); }},
    {ir::opcode::add, [](task_io& io) { semantics::add(io.in(0), io.in(1), io.out); }},
    {ir::opcode::mul,
     [](task_io& io) {
       if (io.t.inputs.size() == 1) return semantics::mul(io.in(0), io.out, static_cast<float>(io.P.get_real(param_key::alpha, 1.0)));
       if (io.P.has(param_key::alpha) && io.P.get_real(param_key::alpha) != 1.0)
         throw octo::error("MUL: alpha applies to the one-input form only (docs/opcodes.md)");
       semantics::mul(io.in(0), io.in(1), io.out);
     }},
    {ir::opcode::dequant,
     [](task_io& io) {
       const auto& q = io.in_buf(0);
       const auto qdtype = io.P.get(param_key::qdtype);
       if (qdtype != static_cast<std::int64_t>(q.dtype))
         throw octo::error("DEQUANT: qdtype " + std::to_string(qdtype) + " does not match input '" + q.name.str() +
                           "' of dtype " + std::string(ir::name(q.dtype)));
       if (q.numel() != static_cast<std::int64_t>(io.out.size()))
         throw octo::error("DEQUANT: input and output element counts differ");
       semantics::dequant(io.in_bytes(0), q.dtype, io.in(1), io.in(2), io.out, io.P.get(param_key::group));
     }},
    {ir::opcode::softmax,
     [](task_io& io) { semantics::softmax(io.in(0), io.out, io.P.get(param_key::dim, task_io::last_extent(io.in_buf(0)))); }},
    {ir::opcode::allreduce_shard, [](task_io& io) { semantics::allreduce_shard(io.all_inputs(), io.out); }},
    {ir::opcode::kv_append,
     [](task_io& io) {
       const auto& cache = io.out_buf();
       if (io.t.inputs.at(1) != io.t.outputs.at(0))
         throw octo::error("KV_APPEND: the output must be the cache buffer given as the second input");
       const std::int64_t S = cache.shape.empty() ? 0 : cache.shape.front();
       if (S <= 0) throw octo::error("KV_APPEND: cache '" + cache.name.str() + "' has no positions");
       // In place on the stored bytes: only the appended rows are encoded (a Q8_0 cache is never
       // re-quantised as a whole).
       semantics::kv_append(io.in(0), io.out_bytes(), cache.dtype, cache.numel() / S, io.P.get(param_key::pos));
     }},
    {ir::opcode::sample_argmax,
     [](task_io& io) {
       std::vector<std::int32_t> ids(io.out.size());
       semantics::sample_argmax(io.in(0), ids, task_io::last_extent(io.in_buf(0)));
       io.store_i32(ids);
     }},
    {ir::opcode::attention_combine,
     [](task_io& io) {
       const auto& p0 = io.in_buf(0);
       if (p0.shape.size() != 3 || p0.shape[2] < 3)
         throw octo::error("ATTENTION_COMBINE: partial '" + p0.name.str() + "' must have shape [T, n_heads, head_dim+2]");
       for (std::size_t k = 0; k < io.t.inputs.size(); ++k)
         if (io.in_buf(k).shape != p0.shape)
           throw octo::error("ATTENTION_COMBINE: partial '" + io.in_buf(k).name.str() + "' differs in shape from '" +
                             p0.name.str() + "'");
       semantics::attention_combine(io.all_inputs(), io.out, p0.shape[0], p0.shape[1], p0.shape[2] - 2);
     }},
    // The fused ops: compositions of the rows above (include/octo/semantics/fused.hpp).
    {ir::opcode::rmsnorm_gemv,
     [](task_io& io) {
       semantics::rmsnorm_gemv(io.in(0), io.in(1), io.in(2), io.in(3), io.out, io.P.get(param_key::hidden), fused_eps(io),
                               io.P.get(param_key::K), io.P.get(param_key::N_tile), io.P.get(param_key::n_off));
     }},
    {ir::opcode::gemv_add,
     [](task_io& io) {
       semantics::gemv_add(io.in(0), io.in(1), io.in(2), io.out, io.P.get(param_key::K), io.P.get(param_key::N_tile),
                           io.P.get(param_key::n_off));
     }},
    {ir::opcode::rmsnorm_swiglu,
     [](task_io& io) {
       semantics::rmsnorm_swiglu(io.in(0), io.in(1), io.in(2), io.in(3), io.out, io.P.get(param_key::hidden),
                                 fused_eps(io), io.P.get(param_key::K), io.P.get(param_key::N_tile),
                                 io.P.get(param_key::n_off));
     }},
    {ir::opcode::rmsnorm_gemv_rope,
     [](task_io& io) {  // [x, norm_w, W, pos(, b)]
       semantics::rmsnorm_gemv_rope(io.in(0), io.in(1), io.in(2), io.in(4), io.in_i32(3), io.out,
                                    io.P.get(param_key::hidden), fused_eps(io), io.P.get(param_key::K), fused_rope_of(io));
     }},
    {ir::opcode::rmsnorm_gemv_kv,
     [](task_io& io) {  // [x, norm_w, W, cache(, pos when n_rot > 0)(, b)]
       const auto r = fused_rope_of(io);
       const bool rotates = r.n_rot > 0;
       const auto positions = rotates ? io.in_i32(4) : std::vector<std::int32_t>{};
       semantics::rmsnorm_gemv_kv(io.in(0), io.in(1), io.in(2), io.in(rotates ? 5 : 4), positions, io.out_bytes(),
                                  io.out_buf().dtype, fused_cache_row(io, 3), io.P.get(param_key::hidden), fused_eps(io),
                                  io.P.get(param_key::K), r, io.P.get(param_key::pos));
     }},
    {ir::opcode::rmsnorm_rope,
     [](task_io& io) {  // [x, norm_w, pos]
       semantics::rmsnorm_rope(io.in(0), io.in(1), io.in_i32(2), io.out, io.P.get(param_key::hidden), fused_eps(io),
                               fused_rope_of(io));
     }},
    {ir::opcode::rmsnorm_rope_kv,
     [](task_io& io) {  // [x, norm_w, cache, pos]
       semantics::rmsnorm_rope_kv(io.in(0), io.in(1), io.in_i32(3), io.out_bytes(), io.out_buf().dtype,
                                  fused_cache_row(io, 2),
                                  io.P.get(param_key::hidden), fused_eps(io), fused_rope_of(io), io.P.get(param_key::pos));
     }},
    {ir::opcode::rmsnorm_gemv_norm_rope,
     [](task_io& io) {  // [x, norm_w, W, head_norm_w, pos]
       semantics::rmsnorm_gemv_norm_rope(io.in(0), io.in(1), io.in(2), io.in(3), io.in_i32(4), io.out,
                                         io.P.get(param_key::hidden), fused_eps(io), io.P.get(param_key::K),
                                         fused_rope_of(io));
     }},
    {ir::opcode::rmsnorm_gemv_norm_kv,
     [](task_io& io) {  // [x, norm_w, W, head_norm_w, cache, pos]
       semantics::rmsnorm_gemv_norm_kv(io.in(0), io.in(1), io.in(2), io.in(3), io.in_i32(5), io.out_bytes(),
                                       io.out_buf().dtype, fused_cache_row(io, 4), io.P.get(param_key::hidden),
                                       fused_eps(io), io.P.get(param_key::K), fused_rope_of(io), io.P.get(param_key::pos));
     }},
    {ir::opcode::rmsnorm_gemv_qkv,
     [](task_io& io) {  // [x, norm_w, W_q, W_k, W_v, pos(, b_qkv)] -> q, k_cache, v_cache
       const auto& kc = io.out_buf_at(1);
       const auto& vc = io.out_buf_at(2);
       const std::int64_t S = kc.shape.empty() ? 0 : kc.shape.front();
       if (S <= 0 || kc.shape != vc.shape)
         throw octo::error("RMSNORM_GEMV_QKV: the k and v caches must have one shape with positions");
       semantics::rmsnorm_gemv_qkv(io.in(0), io.in(1), io.in(2), io.in(3), io.in(4), io.in(6), io.in_i32(5), io.out,
                                   io.out_bytes_at(1), kc.dtype, io.out_bytes_at(2), vc.dtype, kc.numel() / S,
                                   io.P.get(param_key::hidden), fused_eps(io), io.P.get(param_key::K), fused_rope_of(io),
                                   io.P.get(param_key::pos));
     }},
    {ir::opcode::rmsnorm_gemv_norm_qkv,
     [](task_io& io) {  // [x, norm_w, W_q, W_k, W_v, pos, hn_qk] -> q, k_cache, v_cache
       const auto& kc = io.out_buf_at(1);
       const auto& vc = io.out_buf_at(2);
       const std::int64_t S = kc.shape.empty() ? 0 : kc.shape.front();
       if (S <= 0 || kc.shape != vc.shape)
         throw octo::error("RMSNORM_GEMV_NORM_QKV: the k and v caches must have one shape with positions");
       semantics::rmsnorm_gemv_norm_qkv(io.in(0), io.in(1), io.in(2), io.in(3), io.in(4), io.in(6), io.in_i32(5),
                                        io.out, io.out_bytes_at(1), kc.dtype, io.out_bytes_at(2), vc.dtype,
                                        kc.numel() / S, io.P.get(param_key::hidden), fused_eps(io),
                                        io.P.get(param_key::K), fused_rope_of(io), io.P.get(param_key::pos));
     }},
};

constexpr auto reference_table = ir::by_opcode<reference_rows>();

}  // namespace

void reference_vm::execute(const ir::task& t) {
  if (static_cast<std::size_t>(t.op) >= reference_table.size())
    throw octo::error("unknown opcode " + std::to_string(static_cast<int>(t.op)));
  task_io io(*this, t);
  reference_table[static_cast<std::size_t>(t.op)].run(io);
  if (!t.outputs.empty() && !io.stored) store_f32(t.outputs[0], io.out);
}

}  // namespace octo::vm
