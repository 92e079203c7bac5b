// A tiny llama-style decoder layer written as a 20-task program (embed, norm, q/k/v, RoPE, KV append,
// GQA attention, o-proj, residual, SwiGLU MLP, lm head, argmax), run for several decode steps on the
// reference VM with set_position, against the same network written plainly in float64.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include <octo/ir/validate.hpp>
#include <octo/vm/reference_vm.hpp>

#include "../support/single_task.hpp"

using namespace octo;
using ir::buffer_kind;
using ir::dtype;
using ir::opcode;
using ir::param_key;

namespace {

constexpr std::int64_t V = 11, H = 16, nh = 4, nkv = 2, hd = 4, F = 24, S = 6;
constexpr double eps = 1e-5, theta = 10000.0;

struct builder {
  ir::program p;
  std::int32_t task(opcode op, std::vector<std::int32_t> in, std::int32_t out, std::vector<std::int32_t> after,
                    ir::param_list params = {}) {
    ir::task t;
    t.op = op;
    t.inputs = std::move(in);
    t.outputs = {out};
    t.out_counter = p.add_counter();
    for (auto c : after) t.waits.push_back({c, 1});
    t.params = std::move(params);
    p.add_task(t);
    return t.out_counter;
  }
  std::int32_t act(const char* name, std::vector<std::int64_t> shape) {
    return p.add_buffer(name, buffer_kind::activation, dtype::f32, std::move(shape));
  }
  std::int32_t weight(const char* name, std::vector<std::int64_t> shape, dtype dt = dtype::f32) {
    return p.add_buffer(name, buffer_kind::weight, dt, std::move(shape), name);
  }
};

ir::param_list gemv(std::int64_t K, std::int64_t N) {
  return ir::param_list{}.set(param_key::K, K).set(param_key::N_tile, N).set(param_key::n_off, 0);
}

// float64 helpers for the oracle
using vec = std::vector<double>;
vec matvec(const std::vector<float>& w, const vec& x, std::int64_t n, std::int64_t k) {
  vec y(std::size_t(n), 0.0);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < k; ++j) y[std::size_t(i)] += double(w[std::size_t(i * k + j)]) * x[std::size_t(j)];
  return y;
}
vec rmsnorm(const vec& x, const std::vector<float>& w) {
  double ss = 0;
  for (double v : x) ss += v * v;
  const double inv = 1.0 / std::sqrt(ss / double(x.size()) + eps);
  vec y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = x[i] * inv * w[i];
  return y;
}
void rope(vec& x, std::int64_t heads, std::int64_t pos) {  // rotate-half
  for (std::int64_t h = 0; h < heads; ++h)
    for (std::int64_t i = 0; i < hd / 2; ++i) {
      const double ang = double(pos) * std::pow(theta, -2.0 * double(i) / double(hd));
      double& a = x[std::size_t(h * hd + i)];
      double& b = x[std::size_t(h * hd + i + hd / 2)];
      const double a0 = a, b0 = b;
      a = a0 * std::cos(ang) - b0 * std::sin(ang);
      b = a0 * std::sin(ang) + b0 * std::cos(ang);
    }
}

}  // namespace

TEST_CASE("a tiny decoder layer over several decode steps matches float64") {
  builder b;
  const auto ids = b.p.add_buffer("ids", buffer_kind::io_input, dtype::i32, {1});
  const auto pos = b.p.add_buffer("pos", buffer_kind::io_input, dtype::i32, {1});
  const auto emb = b.weight("emb", {V, H}, dtype::bf16);
  const auto n1w = b.weight("n1", {H}), n2w = b.weight("n2", {H});
  const auto wq = b.weight("wq", {nh * hd, H}, dtype::f16), wk = b.weight("wk", {nkv * hd, H}, dtype::f16);
  const auto wv = b.weight("wv", {nkv * hd, H}, dtype::f16), wo = b.weight("wo", {H, nh * hd});
  const auto wg = b.weight("wg", {F, H}), wu = b.weight("wu", {F, H}), wd = b.weight("wd", {H, F});
  const auto lm = b.weight("lm", {V, H});
  const auto kc = b.p.add_buffer("k_cache", buffer_kind::kv_cache, dtype::f16, {S, nkv * hd});
  const auto vc = b.p.add_buffer("v_cache", buffer_kind::kv_cache, dtype::f16, {S, nkv * hd});
  const auto x = b.act("x", {1, H}), xn = b.act("xn", {1, H}), q = b.act("q", {1, nh * hd});
  const auto k = b.act("k", {1, nkv * hd}), v = b.act("v", {1, nkv * hd}), qr = b.act("qr", {1, nh * hd});
  const auto kr = b.act("kr", {1, nkv * hd}), att = b.act("att", {1, nh * hd}), ao = b.act("ao", {1, H});
  const auto x2 = b.act("x2", {1, H}), xn2 = b.act("xn2", {1, H}), g = b.act("g", {1, F}), u = b.act("u", {1, F});
  const auto su = b.act("su", {1, F}), d = b.act("d", {1, H}), x3 = b.act("x3", {1, H});
  const auto logits = b.p.add_buffer("logits", buffer_kind::io_output, dtype::f32, {1, V});
  const auto next = b.p.add_buffer("next", buffer_kind::io_output, dtype::i32, {1});

  auto norm = [](std::int64_t hidden) {
    return ir::param_list{}.set_real(param_key::eps, eps).set(param_key::hidden, hidden);
  };
  auto rope_p = ir::param_list{}.set(param_key::head_dim, hd).set_real(param_key::theta, theta);
  const auto c_x = b.task(opcode::embed, {ids, emb}, x, {}, ir::param_list{}.set(param_key::hidden, H));
  const auto c_xn = b.task(opcode::rmsnorm, {x, n1w}, xn, {c_x}, norm(H));
  const auto c_q = b.task(opcode::gemv_tile, {xn, wq}, q, {c_xn}, gemv(H, nh * hd));
  const auto c_k = b.task(opcode::gemv_tile, {xn, wk}, k, {c_xn}, gemv(H, nkv * hd));
  const auto c_v = b.task(opcode::gemv_tile, {xn, wv}, v, {c_xn}, gemv(H, nkv * hd));
  const auto c_qr = b.task(opcode::rope, {q, pos}, qr, {c_q}, rope_p);
  const auto c_kr = b.task(opcode::rope, {k, pos}, kr, {c_k}, rope_p);
  const auto c_ka = b.task(opcode::kv_append, {kr, kc}, kc, {c_kr}, ir::param_list{}.set(param_key::pos, 0));
  const auto c_va = b.task(opcode::kv_append, {v, vc}, vc, {c_v}, ir::param_list{}.set(param_key::pos, 0));
  const auto c_att = b.task(opcode::attention_tile, {qr, kc, vc}, att, {c_qr, c_ka, c_va},
                            ir::param_list{}.set(param_key::head_dim, hd).set(param_key::kv_start, 0)
                                .set(param_key::kv_len, 1).set_real(param_key::scale, 1.0 / std::sqrt(double(hd)))
                                .set(param_key::n_heads, nh).set(param_key::n_kv_heads, nkv)
                                .set(param_key::causal, 1).set(param_key::q_pos, 0));
  const auto c_ao = b.task(opcode::gemv_tile, {att, wo}, ao, {c_att}, gemv(nh * hd, H));
  const auto c_x2 = b.task(opcode::add, {x, ao}, x2, {c_ao});
  const auto c_xn2 = b.task(opcode::rmsnorm, {x2, n2w}, xn2, {c_x2}, norm(H));
  const auto c_g = b.task(opcode::gemv_tile, {xn2, wg}, g, {c_xn2}, gemv(H, F));
  const auto c_u = b.task(opcode::gemv_tile, {xn2, wu}, u, {c_xn2}, gemv(H, F));
  const auto c_su = b.task(opcode::silu_mul, {g, u}, su, {c_g, c_u});
  const auto c_d = b.task(opcode::gemv_tile, {su, wd}, d, {c_su}, gemv(F, H));
  const auto c_x3 = b.task(opcode::add, {x2, d}, x3, {c_d});
  const auto c_lm = b.task(opcode::gemv_tile, {x3, lm}, logits, {c_x3}, gemv(H, V));
  b.task(opcode::sample_argmax, {logits}, next, {c_lm});
  REQUIRE(b.p.tasks.size() == 20);
  const auto check = ir::validate(b.p);
  INFO(check.report().str());
  REQUIRE(check.ok);

  // Weights exactly representable in their dtypes (k/64, |k| <= 64), so the oracle uses them as is.
  std::mt19937 rng(2024);
  auto w = [&](std::int64_t n) {
    std::vector<float> r(static_cast<std::size_t>(n));
    for (auto& e : r) e = float(test::random_int(rng, -64, 64)) / 64.0f;
    return r;
  };
  const auto W_emb = w(V * H), W_n1 = w(H), W_n2 = w(H), W_q = w(nh * hd * H), W_k = w(nkv * hd * H);
  const auto W_v = w(nkv * hd * H), W_o = w(H * nh * hd), W_g = w(F * H), W_u = w(F * H), W_d = w(H * F), W_lm = w(V * H);
  vm::reference_vm vm(b.p);
  vm.write(emb, W_emb);
  vm.write(n1w, W_n1);
  vm.write(n2w, W_n2);
  vm.write(wq, W_q);
  vm.write(wk, W_k);
  vm.write(wv, W_v);
  vm.write(wo, W_o);
  vm.write(wg, W_g);
  vm.write(wu, W_u);
  vm.write(wd, W_d);
  vm.write(lm, W_lm);

  std::vector<vec> k_hist, v_hist;  // the oracle's KV cache (values as the f16 cache stores them)
  std::int32_t token = 3;
  int compared = 0;
  for (std::int64_t step = 0; step < S; ++step) {
    CAPTURE(step);
    vm.set_position(step);
    vm.write_i32(ids, std::vector<std::int32_t>{token});
    vm.write_i32(pos, std::vector<std::int32_t>{std::int32_t(step)});
    vm.run({step % 2 == 1, std::uint64_t(step)});

    // float64 oracle
    vec xv(W_emb.begin() + token * H, W_emb.begin() + (token + 1) * H);
    const vec xn_v = rmsnorm(xv, W_n1);
    vec qv = matvec(W_q, xn_v, nh * hd, H), kv = matvec(W_k, xn_v, nkv * hd, H), vv = matvec(W_v, xn_v, nkv * hd, H);
    rope(qv, nh, step);
    rope(kv, nkv, step);
    // The cache is F16: what attention reads back is the f16 rounding of k and v. Take it from the VM's
    // cache bytes' decoded values only where the oracle agrees to f16 precision.
    const auto kc_now = vm.read_f32(kc), vc_now = vm.read_f32(vc);
    for (std::int64_t i = 0; i < nkv * hd; ++i) {
      CHECK(kc_now[std::size_t(step * nkv * hd + i)] == doctest::Approx(kv[std::size_t(i)]).epsilon(2e-3).scale(1e-3));
      CHECK(vc_now[std::size_t(step * nkv * hd + i)] == doctest::Approx(vv[std::size_t(i)]).epsilon(2e-3).scale(1e-3));
      kv[std::size_t(i)] = kc_now[std::size_t(step * nkv * hd + i)];
      vv[std::size_t(i)] = vc_now[std::size_t(step * nkv * hd + i)];
    }
    k_hist.push_back(kv);
    v_hist.push_back(vv);
    vec attv(std::size_t(nh * hd), 0.0);
    for (std::int64_t h = 0; h < nh; ++h) {
      const std::int64_t kvh = h / (nh / nkv);
      std::vector<double> s;
      double m = -1e300;
      for (std::size_t j = 0; j < k_hist.size(); ++j) {
        double dot = 0;
        for (std::int64_t e = 0; e < hd; ++e) dot += qv[std::size_t(h * hd + e)] * k_hist[j][std::size_t(kvh * hd + e)];
        s.push_back(dot / std::sqrt(double(hd)));
        m = std::max(m, s.back());
      }
      double l = 0;
      for (std::size_t j = 0; j < s.size(); ++j) {
        const double p = std::exp(s[j] - m);
        l += p;
        for (std::int64_t e = 0; e < hd; ++e) attv[std::size_t(h * hd + e)] += p * v_hist[j][std::size_t(kvh * hd + e)];
      }
      for (std::int64_t e = 0; e < hd; ++e) attv[std::size_t(h * hd + e)] /= l;
    }
    const vec aov = matvec(W_o, attv, H, nh * hd);
    vec x2v(static_cast<std::size_t>(H));
    for (std::int64_t i = 0; i < H; ++i) x2v[std::size_t(i)] = xv[std::size_t(i)] + aov[std::size_t(i)];
    const vec xn2v = rmsnorm(x2v, W_n2);
    const vec gv = matvec(W_g, xn2v, F, H), uv = matvec(W_u, xn2v, F, H);
    vec suv(static_cast<std::size_t>(F));
    for (std::int64_t i = 0; i < F; ++i)
      suv[std::size_t(i)] = gv[std::size_t(i)] / (1.0 + std::exp(-gv[std::size_t(i)])) * uv[std::size_t(i)];
    const vec dv = matvec(W_d, suv, H, F);
    vec x3v(static_cast<std::size_t>(H));
    for (std::int64_t i = 0; i < H; ++i) x3v[std::size_t(i)] = x2v[std::size_t(i)] + dv[std::size_t(i)];
    const vec lv = matvec(W_lm, x3v, V, H);

    CHECK(test::closeness(vm.read_f32(logits), lv, 1e-3, 1e-3) <= 1.0);
    const auto got = vm.read_i32(next)[0];
    std::size_t best = 0;
    for (std::size_t i = 1; i < lv.size(); ++i)
      if (lv[i] > lv[best]) best = i;
    double runner_up = -1e300;
    for (std::size_t i = 0; i < lv.size(); ++i)
      if (i != best) runner_up = std::max(runner_up, lv[i]);
    if (lv[best] - runner_up > 1e-2) {  // only where the margin is clear
      CHECK(got == std::int32_t(best));
      ++compared;
    }
    token = got;
  }
  CHECK(compared >= S / 2);  // the greedy ids were really checked, not skipped
}
