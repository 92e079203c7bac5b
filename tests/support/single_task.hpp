// Test helper: a program of one task over fresh IO buffers, so each opcode's reference numerics are
// checked through reference_vm (validate + firing + conversion) rather than by calling the op directly.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "octo/ir/program.hpp"

namespace octo::test {

struct tensor_spec {
  std::string name;
  std::vector<std::int64_t> shape;
  ir::dtype dtype = ir::dtype::f32;
  ir::buffer_kind kind = ir::buffer_kind::io_input;
};

/// inputs -> op -> output, one counter. Buffer ids are the inputs' positions, then the output's.
inline ir::program single_task(ir::opcode op, const std::vector<tensor_spec>& inputs, const tensor_spec& output,
                               ir::param_list params) {
  ir::program p;
  ir::task t;
  t.op = op;
  for (const auto& in : inputs) t.inputs.push_back(p.add_buffer(in.name, in.kind, in.dtype, in.shape));
  t.outputs.push_back(p.add_buffer(output.name, output.kind == ir::buffer_kind::io_input ? ir::buffer_kind::io_output
                                                                                           : output.kind,
                                   output.dtype, output.shape));
  t.out_counter = p.add_counter("done");
  t.params = std::move(params);
  t.label = std::string(ir::name(op));
  p.add_task(std::move(t));
  return p;
}

/// One RMSNORM_GEMV_QKV task: [x [1,K], norm_w [K], w_q [nq,K], w_k [nkv,K], w_v [nkv,K], pos [1](, b_qkv
/// [nq + 2 nkv])] -> q [1,nq], k_cache, v_cache [slots, nkv] of `cache` dtype (written, not read).
inline ir::program qkv_task(ir::dtype w, ir::dtype cache, bool bias, std::int64_t K, std::int64_t nq, std::int64_t nkv,
                            std::int64_t slots, ir::param_list params) {
  std::vector<tensor_spec> in{{"x", {1, K}},
                              {"norm_w", {K}, ir::dtype::f32, ir::buffer_kind::weight},
                              {"w_q", {nq, K}, w, ir::buffer_kind::weight},
                              {"w_k", {nkv, K}, w, ir::buffer_kind::weight},
                              {"w_v", {nkv, K}, w, ir::buffer_kind::weight},
                              {"pos", {1}, ir::dtype::i32}};
  if (bias) in.push_back({"b_qkv", {nq + 2 * nkv}, ir::dtype::f32, ir::buffer_kind::weight});
  auto p = single_task(ir::opcode::rmsnorm_gemv_qkv, in, {"q", {1, nq}}, std::move(params));
  auto& t = p.tasks[0];
  t.outputs.push_back(p.add_buffer("k_cache", ir::buffer_kind::kv_cache, cache, {slots, nkv}));
  t.outputs.push_back(p.add_buffer("v_cache", ir::buffer_kind::kv_cache, cache, {slots, nkv}));
  return p;
}

/// Uniform random floats in [lo, hi).
inline std::vector<float> random_floats(std::mt19937& rng, std::size_t n, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

inline std::int64_t random_int(std::mt19937& rng, std::int64_t lo, std::int64_t hi) {
  return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
}

/// max |a - b| / (atol + rtol |b|) over the elements: <= 1 means close.
inline double closeness(const std::vector<float>& a, const std::vector<double>& b, double atol, double rtol) {
  if (a.size() != b.size()) return 1e30;
  double worst = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double diff = std::fabs(static_cast<double>(a[i]) - b[i]);
    const double e = diff == 0.0 ? 0.0 : diff / (atol + rtol * std::fabs(b[i]));
    if (!(e <= worst)) worst = e;  // NaN propagates as failure
  }
  return worst;
}

}  // namespace octo::test
