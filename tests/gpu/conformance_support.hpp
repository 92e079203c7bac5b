// The conformance tests' shared pieces (tests/gpu/conformance*.cpp, docs/gpu-conformance.md): the VM under
// test, the seed, one-program cases and run_case, which runs a case on the Vulkan VM and on the CPU reference
// VM (the oracle) and compares every buffer a task writes. The cases are split over three executables so
// ctest runs them side by side (on lavapipe each compiles its pipelines cold: CI's long pole).
#pragma once
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "octo/detail/element_convert.hpp"
#include "octo/detail/quant_blocks.hpp"
#include "octo/error.hpp"
#include "octo/ir/program.hpp"
#include "octo/vm/reference_vm.hpp"
#include "octo/vm/vulkan_vm.hpp"
#include "gpu_support.hpp"
#include "../support/test_data.hpp"

namespace {

using octo::ir::buffer_kind;
using octo::ir::dtype;
using octo::ir::opcode;
using octo::ir::param_key;

inline octo::vm::vulkan_vm& gpu() {
  static std::unique_ptr<octo::vm::vulkan_vm> vm = [] {
    auto o = octo_test::small_options();
    // f32 arithmetic on every device: the bounds below are the accurate path's (the default `fast`
    // precision's GEMMs have their own cases in gemm_tiles.cpp, docs/precision.md).
    o.precision = octo::vm::matmul_precision::accurate;
    auto v = std::make_unique<octo::vm::vulkan_vm>(o);
    const auto d = v->device();
    MESSAGE("conformance on: " << d.name << " (subgroup size " << d.subgroup_size << ", subgroup arithmetic "
                               << std::string(d.subgroup_arithmetic ? "yes" : "no") << ")");
    return v;
  }();
  return *vm;
}
/// The default (`fast`) precision: the tensor-core kernels where the device has cooperative matrices
/// (prefill GEMMs and prefill attention with f16 factors, docs/precision.md), their own bounds.
inline octo::vm::vulkan_vm& gpu_fast() {
  static octo::vm::vulkan_vm vm(octo_test::small_options());
  return vm;
}

inline std::uint64_t seed() {
  static const std::uint64_t s = [] {
    if (const char* e = std::getenv("OCTO_CONFORMANCE_SEED")) return static_cast<std::uint64_t>(std::strtoull(e, nullptr, 10));
    return static_cast<std::uint64_t>(std::random_device{}());
  }();
  return s;
}

struct tolerance {
  double atol = 1e-5;
  double rtol = 1e-5;
};

/// One program of one or a few tasks, with the inputs it needs.
struct case_builder {
  octo::ir::program p;
  std::map<std::int32_t, std::vector<std::byte>> init;  // fixed bytes for some inputs (ids, positions)
  std::map<std::int32_t, std::pair<float, float>> range;  // value range of random float inputs

  std::int32_t buf(const std::string& name, buffer_kind k, dtype t, std::vector<std::int64_t> shape) {
    return p.add_buffer(octo::ir::text(name), k, t, std::move(shape));
  }
  /// Adds a task; returns its counter (so later tasks can wait on it).
  std::int32_t task(opcode op, std::vector<std::int32_t> in, std::vector<std::int32_t> out,
                    octo::ir::param_list params, std::vector<octo::ir::wait> waits = {}) {
    octo::ir::task t;
    t.op = op;
    t.inputs = std::move(in);
    t.outputs = std::move(out);
    t.params = std::move(params);
    t.waits = std::move(waits);
    const auto counter = p.add_counter();
    t.out_counter = counter;
    p.add_task(std::move(t));
    return counter;
  }
  void ints(std::int32_t id, const std::vector<std::int32_t>& v) {
    std::vector<std::byte> b(v.size() * 4);
    std::memcpy(b.data(), v.data(), b.size());
    init[id] = std::move(b);
  }
};

inline octo::ir::param_list params(std::initializer_list<std::pair<param_key, double>> kv) {
  octo::ir::param_list l;
  for (auto [k, v] : kv) {
    if (octo::ir::param_fields[static_cast<std::size_t>(k)].type == octo::ir::param_type::real)
      l.set_real(k, v);
    else
      l.set(k, static_cast<std::int64_t>(v));
  }
  return l;
}

inline std::vector<std::byte> random_bytes(const octo::ir::buffer& b, std::mt19937_64& rng, float lo, float hi) {
  std::vector<std::byte> out(static_cast<std::size_t>(b.nbytes()));
  const auto n = b.numel();
  if (b.dtype == dtype::i8 || b.dtype == dtype::i4 || b.dtype == dtype::u8) {
    for (auto& x : out) x = static_cast<std::byte>(rng() & 0xff);
    return out;
  }
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = u(rng);
  if (octo::ir::is_block_quantized(b.dtype)) {
    const std::int64_t row = b.shape.back();
    for (std::int64_t r = 0; r < n / row; ++r)
      octo::detail::quantize_row(b.dtype, v.data() + r * row,
                                 reinterpret_cast<std::uint8_t*>(out.data()) + octo::ir::nbytes(b.dtype, r * row), row);
  } else {
    octo::detail::from_f32(b.dtype, v, out);
  }
  return out;
}

inline bool written_by_a_task(const octo::ir::program& p, std::int32_t id) {
  for (const auto& t : p.tasks)
    for (auto o : t.outputs)
      if (o == id) return true;
  return false;
}

/// Loads the case on both VMs, fills inputs with the same random bytes, poisons outputs, runs both and
/// compares every buffer a task writes.
/// `position`: the VM's globals.pos for this pass; the reference gets the same pass by adding it to
/// every task's pos / q_pos / kv_len params (docs/opcodes.md, "Per-token values").
/// `vm`: the VM under test (gpu(), the accurate precision, unless a case says otherwise).
inline void run_case(case_builder& c, tolerance tol, std::uint32_t position = 0, octo::vm::vulkan_vm* on = nullptr) {
  std::mt19937_64 rng(seed() ^ (0x9e3779b97f4a7c15ull * (c.p.tasks.size() + 31 * c.p.buffers.size())));
  INFO("seed " << seed() << " (OCTO_CONFORMANCE_SEED replays it)");
  octo::vm::reference_vm ref(c.p);
  auto& vm = on ? *on : gpu();
  vm.load(c.p);
  for (const auto& b : c.p.buffers) {
    std::vector<std::byte> bytes;
    const bool out = written_by_a_task(c.p, b.id) && b.kind != buffer_kind::kv_cache;
    if (out) {
      bytes.assign(static_cast<std::size_t>(b.nbytes()), std::byte{0xff});  // poison
    } else if (auto it = c.init.find(b.id); it != c.init.end()) {
      bytes = it->second;
    } else {
      auto r = c.range.count(b.id) ? c.range[b.id] : std::pair<float, float>{-1.0f, 1.0f};
      bytes = random_bytes(b, rng, r.first, r.second);
    }
    ref.write_bytes(b.id, bytes);
    vm.write_bytes(std::string_view(b.name), bytes);
  }
  for (const auto& t : c.p.tasks)
    for (param_key k : {param_key::pos, param_key::q_pos, param_key::kv_len})
      if (t.params.has(k) && position != 0) ref.set_param(t.id, k, t.params.get(k) + position);
  vm.set_position(position);
  ref.run();
  vm.execute();
  vm.set_position(0);
  octo_test::check_clean(vm);  // with OCTO_VALIDATION=1 the layers must stay silent
  for (const auto& b : c.p.buffers) {
    if (!written_by_a_task(c.p, b.id)) continue;
    const auto got_bytes = vm.read_bytes(std::string_view(b.name));
    const auto want_bytes = ref.bytes(b.id);
    REQUIRE(got_bytes.size() == want_bytes.size());
    if (b.dtype == dtype::i32) {
      std::vector<std::int32_t> g(static_cast<std::size_t>(b.numel())), w(g.size());
      std::memcpy(g.data(), got_bytes.data(), g.size() * 4);
      std::memcpy(w.data(), want_bytes.data(), w.size() * 4);
      for (std::size_t i = 0; i < g.size(); ++i) {
        INFO(b.name.view() << "[" << i << "]");
        CHECK(g[i] == w[i]);
      }
      continue;
    }
    std::vector<float> g(static_cast<std::size_t>(b.numel())), w(g.size());
    if (octo::ir::is_block_quantized(b.dtype)) {  // a Q8_0 KV cache: compare the values its blocks decode to
      octo::detail::dequantize_row(b.dtype, reinterpret_cast<const std::uint8_t*>(got_bytes.data()), g.data(), b.numel());
      octo::detail::dequantize_row(b.dtype, reinterpret_cast<const std::uint8_t*>(want_bytes.data()), w.data(), b.numel());
    } else {
      octo::detail::to_f32(b.dtype, got_bytes, g);
      octo::detail::to_f32(b.dtype, want_bytes, w);
    }
    int bad = 0;
    double worst = 0;
    std::size_t worst_i = 0;
    for (std::size_t i = 0; i < g.size(); ++i) {
      const bool same_special = (std::isnan(g[i]) && std::isnan(w[i])) || (std::isinf(w[i]) && g[i] == w[i]);
      if (same_special) continue;
      const double err = std::abs(double(g[i]) - double(w[i]));
      const bool ok = std::isfinite(g[i]) && std::isfinite(w[i]) && err <= tol.atol + tol.rtol * std::abs(double(w[i]));
      if (!ok) {
        if (++bad <= 5) {
          INFO(b.name.view() << "[" << i << "]: gpu " << g[i] << ", reference " << w[i]);
          CHECK(ok);
        }
      }
      if (std::isfinite(err) && err > worst) {
        worst = err;
        worst_i = i;
      }
    }
    INFO(b.name.view() << ": " << bad << " of " << g.size() << " elements out of tolerance; worst |err| " << worst
                       << " at " << worst_i);
    CHECK(bad == 0);
  }
}

// The shared-memory reduction (devices without subgroup arithmetic, OCTO_KERNELS_NO_SUBGROUP) is the same
// code after every format's loop: the matrix cases run it on one format of each loop family (16-bit
// float units, 32-element blocks, 256-element K-quants, the IQ4 lookup) and every format with subgroups.
// Each (format, mode, rows) is a pipeline compiled cold on lavapipe, seconds each: CI's long pole.
constexpr dtype reduction_formats[] = {dtype::f16, dtype::q5_1, dtype::q4_k, dtype::iq4_xs};
inline bool reduction_sample(dtype wd) {
  return std::find(std::begin(reduction_formats), std::end(reduction_formats), wd) != std::end(reduction_formats);
}

/// The weight formats a matrix case loops over (`for (dtype wd : weight_dtypes)`): every one, or in a
/// sampled run (OCTO_TEST_SAMPLE=1: the validation twins and the sanitizer build, test::sampled_run())
/// reduction_sample()'s four, one of each loop family. What those runs check (octo's Vulkan usage, the
/// host code) is one code path for every format of a family; the formats' arithmetic is the plain
/// release run's, which takes all of them.
inline constexpr struct weight_formats {
  static constexpr dtype all[] = {dtype::f32,  dtype::f16,  dtype::bf16, dtype::q8_0, dtype::q4_0,
                                  dtype::q4_1, dtype::q5_0, dtype::q5_1, dtype::q2_k, dtype::q3_k,
                                  dtype::q4_k, dtype::q5_k, dtype::q6_k, dtype::iq4_nl, dtype::iq4_xs};
  const dtype* begin() const {
    if (octo::test::sampled_out("weight formats other than F16, Q5_1, Q4_K and IQ4_XS (one of each loop family)"))
      return std::begin(reduction_formats);
    return std::begin(all);
  }
  const dtype* end() const { return octo::test::sampled_run() ? std::end(reduction_formats) : std::end(all); }
} weight_dtypes{};

}  // namespace
