// Each opcode's reference numerics, run as a one-task program through reference_vm, against a
// float64 computation written here on fresh random inputs and shapes.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <random>
#include <tuple>
#include <vector>

#include <octo/error.hpp>
#include <octo/semantics/rope.hpp>
#include <octo/vm/reference_vm.hpp>

#include "../support/single_task.hpp"

using namespace octo;
using ir::buffer_kind;
using ir::dtype;
using ir::opcode;
using ir::param_key;
using octo::test::closeness;
using octo::test::random_floats;
using octo::test::random_int;
using octo::test::single_task;
using octo::test::tensor_spec;
using vm::reference_vm;

namespace {

std::vector<double> widen(const std::vector<float>& v) { return {v.begin(), v.end()}; }

ir::param_list params() { return {}; }

// Fills an output with NaN before the run, so an element the op never writes cannot pass by accident.
void poison(reference_vm& vm, const char* name) {
  const auto id = vm.buffer_id(name);
  vm.write(id, std::vector<float>(std::size_t(vm.program().buffers[std::size_t(id)].numel()),
                                  std::numeric_limits<float>::quiet_NaN()));
}

// Plain float64 attention for one (row, head): returns (o[hd], m, l) over the visible keys.
struct att_ref {
  std::vector<double> o;
  double m = -std::numeric_limits<double>::infinity();
  double l = 0.0;
};
att_ref attention_row(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                      std::int64_t t, std::int64_t h, std::int64_t nh, std::int64_t nkv, std::int64_t hd,
                      std::int64_t kv_start, std::int64_t kv_len, bool causal, std::int64_t q_pos, double scale) {
  att_ref r;
  r.o.assign(static_cast<std::size_t>(hd), 0.0);
  const std::int64_t kvh = h / (nh / nkv);  // repeat_interleave
  std::vector<std::pair<std::int64_t, double>> s;
  for (std::int64_t j = kv_start; j < kv_start + kv_len; ++j) {
    if (causal && j > q_pos + t) continue;
    double dot = 0.0;
    for (std::int64_t d = 0; d < hd; ++d)
      dot += double(q[std::size_t((t * nh + h) * hd + d)]) * double(k[std::size_t((j * nkv + kvh) * hd + d)]);
    s.emplace_back(j, scale * dot);
    r.m = std::max(r.m, scale * dot);
  }
  for (auto [j, sj] : s) {
    const double e = std::exp(sj - r.m);
    r.l += e;
    for (std::int64_t d = 0; d < hd; ++d) r.o[std::size_t(d)] += e * double(v[std::size_t((j * nkv + kvh) * hd + d)]);
  }
  for (auto& x : r.o) x = r.l > 0 ? x / r.l : 0.0;
  return r;
}

}  // namespace

TEST_CASE("EMBED gathers rows by id") {
  std::mt19937 rng(101);
  for (int iter = 0; iter < 5; ++iter) {
    const auto V = random_int(rng, 2, 40), H = random_int(rng, 1, 33), T = random_int(rng, 1, 6);
    reference_vm vm(single_task(opcode::embed, {{"ids", {T}, dtype::i32}, {"table", {V, H}, dtype::f32, buffer_kind::weight}},
                                {"y", {T, H}}, params().set(param_key::hidden, H)));
    std::vector<std::int32_t> ids(static_cast<std::size_t>(T));
    for (auto& i : ids) i = static_cast<std::int32_t>(random_int(rng, 0, V - 1));
    const auto table = random_floats(rng, std::size_t(V * H));
    vm.write_i32("ids", ids);
    vm.write("table", table);
    poison(vm, "y");  // an element the op fails to write stays NaN
    vm.run();
    const auto y = vm.read_f32("y");
    std::vector<double> want;
    for (auto id : ids)
      for (std::int64_t h = 0; h < H; ++h) want.push_back(table[std::size_t(id * H + h)]);
    CHECK(closeness(y, want, 0, 0) == 0);  // a gather is exact
  }
}

TEST_CASE("RMSNORM matches float64") {
  std::mt19937 rng(102);
  for (int iter = 0; iter < 6; ++iter) {
    const auto R = random_int(rng, 1, 5), H = random_int(rng, 1, 300);
    const double eps = 1e-6;
    reference_vm vm(single_task(opcode::rmsnorm, {{"x", {R, H}}, {"w", {H}, dtype::f32, buffer_kind::weight}}, {"y", {R, H}},
                                params().set(param_key::hidden, H).set_real(param_key::eps, eps)));
    const auto x = random_floats(rng, std::size_t(R * H), -3, 3), w = random_floats(rng, std::size_t(H), 0.5, 1.5);
    vm.write("x", x);
    vm.write("w", w);
    poison(vm, "y");  // an element the op fails to write stays NaN
    vm.run();
    std::vector<double> want;
    for (std::int64_t r = 0; r < R; ++r) {
      double ss = 0;
      for (std::int64_t h = 0; h < H; ++h) ss += double(x[std::size_t(r * H + h)]) * x[std::size_t(r * H + h)];
      const double inv = 1.0 / std::sqrt(ss / double(H) + eps);
      for (std::int64_t h = 0; h < H; ++h) want.push_back(x[std::size_t(r * H + h)] * inv * w[std::size_t(h)]);
    }
    CHECK(closeness(vm.read_f32("y"), want, 1e-6, 1e-5) <= 1.0);
  }
}

TEST_CASE("LAYERNORM with and without bias matches float64") {
  std::mt19937 rng(103);
  for (int with_bias = 0; with_bias < 2; ++with_bias) {
    const auto R = random_int(rng, 1, 4), H = random_int(rng, 2, 200);
    const double eps = 1e-5;
    std::vector<tensor_spec> ins{{"x", {R, H}}, {"w", {H}, dtype::f32, buffer_kind::weight}};
    if (with_bias) ins.push_back({"b", {H}, dtype::f32, buffer_kind::weight});
    reference_vm vm(single_task(opcode::layernorm, ins, {"y", {R, H}},
                                params().set(param_key::hidden, H).set_real(param_key::eps, eps)));
    const auto x = random_floats(rng, std::size_t(R * H), 1, 3), w = random_floats(rng, std::size_t(H));
    const auto b = random_floats(rng, std::size_t(H));
    vm.write("x", x);
    vm.write("w", w);
    if (with_bias) vm.write("b", b);
    poison(vm, "y");  // an element the op fails to write stays NaN
    vm.run();
    std::vector<double> want;
    for (std::int64_t r = 0; r < R; ++r) {
      double mean = 0, var = 0;
      for (std::int64_t h = 0; h < H; ++h) mean += x[std::size_t(r * H + h)];
      mean /= double(H);
      for (std::int64_t h = 0; h < H; ++h) var += (x[std::size_t(r * H + h)] - mean) * (x[std::size_t(r * H + h)] - mean);
      var /= double(H);
      for (std::int64_t h = 0; h < H; ++h)
        want.push_back((x[std::size_t(r * H + h)] - mean) / std::sqrt(var + eps) * w[std::size_t(h)] +
                       (with_bias ? b[std::size_t(h)] : 0.0));
    }
    CHECK(closeness(vm.read_f32("y"), want, 1e-5, 1e-4) <= 1.0);
  }
}

namespace {
// y[r, n] = x[r] . W[n] (+ bias[n]) in float64.
std::vector<double> matmul64(const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>* bias,
                             std::int64_t R, std::int64_t K, std::int64_t N) {
  std::vector<double> y(std::size_t(R * N));
  for (std::int64_t r = 0; r < R; ++r)
    for (std::int64_t n = 0; n < N; ++n) {
      double acc = bias ? (*bias)[std::size_t(n)] : 0.0;
      for (std::int64_t k = 0; k < K; ++k) acc += double(x[std::size_t(r * K + k)]) * w[std::size_t(n * K + k)];
      y[std::size_t(r * N + n)] = acc;
    }
  return y;
}
}  // namespace

TEST_CASE("GEMV_TILE writes its column tile and leaves the others untouched") {
  std::mt19937 rng(104);
  for (int iter = 0; iter < 6; ++iter) {
    const auto R = random_int(rng, 1, 3), K = random_int(rng, 1, 130), N = random_int(rng, 2, 40);
    const auto n_off = random_int(rng, 0, N - 1), N_tile = random_int(rng, 1, N - n_off);
    const bool with_bias = iter % 2 == 1;
    std::vector<tensor_spec> ins{{"x", {R, K}}, {"W", {N, K}, dtype::f32, buffer_kind::weight}};
    if (with_bias) ins.push_back({"bias", {N}, dtype::f32, buffer_kind::weight});
    reference_vm vm(single_task(opcode::gemv_tile, ins, {"y", {R, N}},
                                params().set(param_key::K, K).set(param_key::N_tile, N_tile).set(param_key::n_off, n_off)));
    const auto x = random_floats(rng, std::size_t(R * K)), w = random_floats(rng, std::size_t(N * K));
    const auto bias = random_floats(rng, std::size_t(N));
    vm.write("x", x);
    vm.write("W", w);
    if (with_bias) vm.write("bias", bias);
    vm.write("y", std::vector<float>(std::size_t(R * N), 7.0f));  // sentinel for untouched columns
    vm.run();
    auto want = matmul64(x, w, with_bias ? &bias : nullptr, R, K, N);
    for (std::int64_t r = 0; r < R; ++r)
      for (std::int64_t n = 0; n < N; ++n)
        if (n < n_off || n >= n_off + N_tile) want[std::size_t(r * N + n)] = 7.0;
    CHECK(closeness(vm.read_f32("y"), want, 1e-5, 1e-4) <= 1.0);
  }
}

TEST_CASE("GEMV_TILE reads F16 and BF16 weights") {
  std::mt19937 rng(105);
  for (dtype wt : {dtype::f16, dtype::bf16}) {
    CAPTURE(ir::name(wt));
    const auto K = random_int(rng, 1, 90), N = random_int(rng, 1, 20);
    reference_vm vm(single_task(opcode::gemv_tile, {{"x", {1, K}}, {"W", {N, K}, wt, buffer_kind::weight}}, {"y", {1, N}},
                                params().set(param_key::K, K).set(param_key::N_tile, N).set(param_key::n_off, 0)));
    // k/128 with |k| <= 256 is exact in both f16 and bf16, so the oracle needs no rounding of its own.
    std::vector<float> w(std::size_t(N * K));
    for (auto& v : w) v = float(random_int(rng, -256, 256)) / 128.0f;
    const auto x = random_floats(rng, std::size_t(K));
    vm.write("x", x);
    vm.write("W", w);
    CHECK(vm.bytes(vm.buffer_id("W")).size() == std::size_t(N * K * 2));
    CHECK(vm.read_f32("W") == w);
    vm.run();
    CHECK(closeness(vm.read_f32("y"), matmul64(x, w, nullptr, 1, K, N), 1e-5, 1e-4) <= 1.0);
  }
  SUBCASE("raw f16 bytes") {
    reference_vm vm(single_task(opcode::gemv_tile, {{"x", {1, 3}}, {"W", {2, 3}, dtype::f16, buffer_kind::weight}}, {"y", {1, 2}},
                                params().set(param_key::K, 3).set(param_key::N_tile, 2).set(param_key::n_off, 0)));
    // W = [[1, -2, 0.5], [65504, 2^-24, -0]] as IEEE half bit patterns, little-endian.
    const std::uint16_t bits[6] = {0x3c00, 0xc000, 0x3800, 0x7bff, 0x0001, 0x8000};
    std::vector<std::byte> raw;
    for (auto b : bits) {
      raw.push_back(std::byte(b & 0xff));
      raw.push_back(std::byte(b >> 8));
    }
    vm.write_bytes("W", raw);
    vm.write("x", std::vector<float>{1.0f, 1.0f, 4.0f});
    vm.run();
    const auto y = vm.read_f32("y");
    CHECK(y[0] == 1.0f - 2.0f + 2.0f);
    CHECK(y[1] == doctest::Approx(65504.0 + std::ldexp(1.0, -24)).epsilon(1e-7));
  }
}

TEST_CASE("GEMM_TILE writes its row and column tile") {
  std::mt19937 rng(106);
  for (int iter = 0; iter < 5; ++iter) {
    const auto M = random_int(rng, 1, 9), K = random_int(rng, 1, 70), N = random_int(rng, 1, 20);
    const auto m_off = random_int(rng, 0, M - 1), M_tile = random_int(rng, 1, M - m_off);
    const auto n_off = random_int(rng, 0, N - 1), N_tile = random_int(rng, 1, N - n_off);
    reference_vm vm(single_task(opcode::gemm_tile, {{"x", {M, K}}, {"W", {N, K}, dtype::f32, buffer_kind::weight}}, {"y", {M, N}},
                                params().set(param_key::M_tile, M_tile).set(param_key::K, K).set(param_key::N_tile, N_tile)
                                    .set(param_key::n_off, n_off).set(param_key::m_off, m_off)));
    const auto x = random_floats(rng, std::size_t(M * K)), w = random_floats(rng, std::size_t(N * K));
    vm.write("x", x);
    vm.write("W", w);
    vm.write("y", std::vector<float>(std::size_t(M * N), -3.0f));
    vm.run();
    auto want = matmul64(x, w, nullptr, M, K, N);
    for (std::int64_t r = 0; r < M; ++r)
      for (std::int64_t n = 0; n < N; ++n)
        if (r < m_off || r >= m_off + M_tile || n < n_off || n >= n_off + N_tile) want[std::size_t(r * N + n)] = -3.0;
    CHECK(closeness(vm.read_f32("y"), want, 1e-5, 1e-4) <= 1.0);
  }
}

TEST_CASE("ATTENTION_TILE: GQA, KV window, causal mask, full and partial outputs") {
  std::mt19937 rng(107);
  for (int iter = 0; iter < 12; ++iter) {
    const auto nkv = random_int(rng, 1, 3), group = random_int(rng, 1, 4), nh = nkv * group;
    const auto hd = random_int(rng, 1, 24), T = random_int(rng, 1, 4), S = random_int(rng, 1, 30);
    const auto kv_start = random_int(rng, 0, S - 1), kv_len = random_int(rng, 0, S - kv_start);
    const bool causal = iter % 2 == 0, partial = iter % 3 == 0;
    const auto q_pos = random_int(rng, 0, S);
    const double scale = 1.0 / std::sqrt(double(hd));
    CAPTURE(nh);
    CAPTURE(nkv);
    CAPTURE(causal);
    CAPTURE(partial);
    auto pl = params().set(param_key::head_dim, hd).set(param_key::kv_start, kv_start).set(param_key::kv_len, kv_len)
                  .set_real(param_key::scale, scale).set(param_key::n_heads, nh).set(param_key::n_kv_heads, nkv)
                  .set(param_key::causal, causal).set(param_key::q_pos, q_pos).set(param_key::partial, partial);
    const tensor_spec out = partial ? tensor_spec{"o", {T, nh, hd + 2}} : tensor_spec{"o", {T, nh * hd}};
    reference_vm vm(single_task(opcode::attention_tile,
                                {{"q", {T, nh * hd}}, {"k", {S, nkv * hd}, dtype::f32, buffer_kind::kv_cache},
                                 {"v", {S, nkv * hd}, dtype::f32, buffer_kind::kv_cache}},
                                out, pl));
    const auto q = random_floats(rng, std::size_t(T * nh * hd), -2, 2);
    const auto k = random_floats(rng, std::size_t(S * nkv * hd), -2, 2), v = random_floats(rng, std::size_t(S * nkv * hd));
    vm.write("q", q);
    vm.write("k", k);
    vm.write("v", v);
    poison(vm, "o");  // an element the op fails to write stays NaN
    vm.run();
    auto o = vm.read_f32("o");
    std::vector<double> want;
    for (std::int64_t t = 0; t < T; ++t)
      for (std::int64_t h = 0; h < nh; ++h) {
        auto r = attention_row(q, k, v, t, h, nh, nkv, hd, kv_start, kv_len, causal, q_pos, scale);
        want.insert(want.end(), r.o.begin(), r.o.end());
        if (partial) {
          want.push_back(r.m);
          want.push_back(r.l);
        }
      }
    REQUIRE(o.size() == want.size());
    if (partial) {  // m = -inf must be matched exactly; compare the rest numerically
      for (std::size_t i = 0; i < o.size(); ++i)
        if (std::isinf(want[i])) {
          CHECK(o[i] == -std::numeric_limits<float>::infinity());
          want[i] = 0;
          o[i] = 0;
        }
    }
    CHECK(closeness(o, want, 1e-5, 1e-4) <= 1.0);
  }
}

TEST_CASE("ATTENTION_TILE: a causal row with no visible key outputs zeros") {
  // kv window [4, 8), q_pos = 1: row 0 sees keys <= 1 (none), row 3 sees key 4.
  reference_vm vm(single_task(opcode::attention_tile,
                              {{"q", {4, 2}}, {"k", {8, 2}, dtype::f32, buffer_kind::kv_cache},
                               {"v", {8, 2}, dtype::f32, buffer_kind::kv_cache}},
                              {"o", {4, 2}},
                              params().set(param_key::head_dim, 2).set(param_key::kv_start, 4).set(param_key::kv_len, 4)
                                  .set_real(param_key::scale, 0.5).set(param_key::n_heads, 1).set(param_key::n_kv_heads, 1)
                                  .set(param_key::causal, 1).set(param_key::q_pos, 1)));
  vm.write("q", std::vector<float>(8, 1.0f));
  vm.write("k", std::vector<float>(16, 1.0f));
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i) v[std::size_t(i)] = float(i);
  vm.write("v", v);
  vm.run();
  const auto o = vm.read_f32("o");
  CHECK(o == std::vector<float>{0, 0, 0, 0, 0, 0, 8, 9});  // row 3 sees only key 4 -> v[4] = (8, 9)
}

TEST_CASE("ATTENTION_TILE partials + ATTENTION_COMBINE equal the unsplit attention") {
  std::mt19937 rng(108);
  for (int iter = 0; iter < 8; ++iter) {
    const auto nkv = random_int(rng, 1, 2), group = random_int(rng, 1, 3), nh = nkv * group;
    const auto hd = random_int(rng, 1, 16), T = random_int(rng, 1, 3), S = random_int(rng, 4, 40);
    const auto n_split = random_int(rng, 2, 4);
    const bool causal = iter % 2 == 1;
    const auto q_pos = S - T;  // prefill of the last T positions
    const double scale = 1.0 / std::sqrt(double(hd));
    ir::program p;
    const auto q = p.add_buffer("q", buffer_kind::io_input, dtype::f32, {T, nh * hd});
    const auto k = p.add_buffer("k", buffer_kind::kv_cache, dtype::f32, {S, nkv * hd});
    const auto v = p.add_buffer("v", buffer_kind::kv_cache, dtype::f32, {S, nkv * hd});
    const auto o = p.add_buffer("o", buffer_kind::io_output, dtype::f32, {T, nh * hd});
    const auto c_parts = p.add_counter("partials");
    std::vector<std::int32_t> parts;
    // Split [0, S) into n_split blocks (the last may be empty when S is small).
    const auto block = (S + n_split - 1) / n_split;
    for (std::int64_t b = 0; b < n_split; ++b) {
      const auto start = std::min(S, b * block), len = std::min(S, (b + 1) * block) - start;
      const auto part = p.add_buffer(std::string("part").append(std::to_string(b)), buffer_kind::activation, dtype::f32, {T, nh, hd + 2});
      parts.push_back(part);
      ir::task t;
      t.op = opcode::attention_tile;
      t.inputs = {q, k, v};
      t.outputs = {part};
      t.out_counter = c_parts;
      t.params.set(param_key::head_dim, hd).set(param_key::kv_start, start).set(param_key::kv_len, len)
          .set_real(param_key::scale, scale).set(param_key::n_heads, nh).set(param_key::n_kv_heads, nkv)
          .set(param_key::causal, causal).set(param_key::q_pos, q_pos).set(param_key::partial, 1);
      p.add_task(t);
    }
    ir::task comb;
    comb.op = opcode::attention_combine;
    comb.inputs = parts;
    comb.outputs = {o};
    comb.out_counter = p.add_counter("combined");
    comb.waits = {{c_parts, static_cast<std::int32_t>(n_split)}};
    p.add_task(comb);
    reference_vm vm(p);
    const auto qv = random_floats(rng, std::size_t(T * nh * hd), -2, 2);
    const auto kv = random_floats(rng, std::size_t(S * nkv * hd), -2, 2), vv = random_floats(rng, std::size_t(S * nkv * hd));
    vm.write(q, qv);
    vm.write(k, kv);
    vm.write(v, vv);
    vm.run({true, std::uint64_t(iter)});
    std::vector<double> want;
    for (std::int64_t t = 0; t < T; ++t)
      for (std::int64_t h = 0; h < nh; ++h) {
        auto r = attention_row(qv, kv, vv, t, h, nh, nkv, hd, 0, S, causal, q_pos, scale);
        want.insert(want.end(), r.o.begin(), r.o.end());
      }
    CHECK(closeness(vm.read_f32(o), want, 1e-5, 1e-4) <= 1.0);
  }
}

TEST_CASE("ATTENTION_COMBINE of partials that saw no keys is zero") {
  reference_vm vm(single_task(opcode::attention_combine, {{"a", {1, 1, 3}}, {"b", {1, 1, 3}}}, {"o", {1, 1}}, params()));
  const float ninf = -std::numeric_limits<float>::infinity();
  vm.write("a", std::vector<float>{0.0f, ninf, 0.0f});
  vm.write("b", std::vector<float>{0.0f, ninf, 0.0f});
  vm.write("o", std::vector<float>{5.0f});
  vm.run();
  CHECK(vm.read_f32("o") == std::vector<float>{0.0f});
}

TEST_CASE("ROPE: rotate-half and interleaved against the float64 formula") {
  std::mt19937 rng(109);
  for (int iter = 0; iter < 8; ++iter) {
    const std::int64_t style = iter % 2;
    const auto hd = 2 * random_int(rng, 1, 32), n = random_int(rng, 1, 4), T = random_int(rng, 1, 5);
    const auto n_rot = iter < 4 ? hd : 2 * random_int(rng, 1, hd / 2);
    const double theta = iter % 3 == 0 ? 1000000.0 : 10000.0;
    CAPTURE(style);
    CAPTURE(n_rot);
    reference_vm vm(single_task(opcode::rope, {{"x", {T, n * hd}}, {"pos", {T}, dtype::i32}}, {"y", {T, n * hd}},
                                params().set(param_key::head_dim, hd).set_real(param_key::theta, theta)
                                    .set(param_key::rope_style, style).set(param_key::n_rot, n_rot)));
    const auto x = random_floats(rng, std::size_t(T * n * hd));
    std::vector<std::int32_t> pos(static_cast<std::size_t>(T));
    for (auto& p : pos) p = std::int32_t(random_int(rng, 0, 1000));
    vm.write("x", x);
    vm.write_i32("pos", pos);
    poison(vm, "y");  // an element the op fails to write stays NaN
    vm.run();
    std::vector<double> want(x.begin(), x.end());
    for (std::int64_t t = 0; t < T; ++t)
      for (std::int64_t h = 0; h < n; ++h)
        for (std::int64_t i = 0; i < n_rot / 2; ++i) {
          const double ang = pos[std::size_t(t)] * std::pow(theta, -2.0 * double(i) / double(n_rot));
          const std::int64_t a = style == 0 ? i : 2 * i, b = style == 0 ? i + n_rot / 2 : 2 * i + 1;
          const std::size_t base = std::size_t(t * n * hd + h * hd);
          const double xa = x[base + std::size_t(a)], xb = x[base + std::size_t(b)];
          want[base + std::size_t(a)] = xa * std::cos(ang) - xb * std::sin(ang);
          want[base + std::size_t(b)] = xa * std::sin(ang) + xb * std::cos(ang);
        }
    // fp32 angles (as HF computes them) drift by ~pos * 2^-24 rad.
    CHECK(closeness(vm.read_f32("y"), want, 5e-4, 0) <= 1.0);
  }
}

namespace {
// Llama 3's scaled frequency i of n_rot, as Hugging Face's _compute_llama3_parameters computes it (float64
// here): the test's oracle, written from the published formula rather than from semantics::rope_ramp.
struct llama3_scaling {
  double factor, low, high, original;
};
double llama3_inv_freq(double theta, std::int64_t i, std::int64_t n_rot, const llama3_scaling& s) {
  const double inv = std::pow(theta, -2.0 * double(i) / double(n_rot)), wavelen = 2 * std::acos(-1.0) / inv;
  if (wavelen < s.original / s.high) return inv;
  if (wavelen > s.original / s.low) return inv / s.factor;
  const double smooth = (s.original / wavelen - s.low) / (s.high - s.low);
  return (1 - smooth) * inv / s.factor + smooth * inv;
}
octo::semantics::rope_ramp ramp_of(const llama3_scaling& s) {
  return {float(1 / s.factor), float(s.original / (2 * std::acos(-1.0) * (s.high - s.low))), float(-s.low / (s.high - s.low))};
}
}  // namespace

TEST_CASE("ROPE with Llama 3's frequency scaling (the ramp params) against Hugging Face's formula in float64") {
  std::mt19937 rng(110);
  // Llama 3.1 8B's and 3.2 1B's scalings, and a small one whose ramp holds three of eight frequencies.
  const std::vector<std::tuple<std::int64_t, double, llama3_scaling>> cases{
      {128, 500000.0, {8, 1, 4, 8192}}, {64, 500000.0, {32, 1, 4, 8192}}, {16, 10000.0, {8, 1, 16, 256}}};
  for (const auto& [hd, theta, sc] : cases) {
    for (std::int64_t style : {0, 1}) {
      CAPTURE(hd);
      CAPTURE(style);
      const std::int64_t T = 3, n = 2;
      const auto r = ramp_of(sc);
      auto p = params().set(param_key::head_dim, hd).set_real(param_key::theta, theta).set(param_key::rope_style, style);
      octo::semantics::set_rope_ramp(p, r);
      CHECK(p.has(param_key::rope_low_scale));
      reference_vm vm(single_task(opcode::rope, {{"x", {T, n * hd}}, {"pos", {T}, dtype::i32}}, {"y", {T, n * hd}}, p));
      const auto x = random_floats(rng, std::size_t(T * n * hd));
      const std::vector<std::int32_t> pos{5, 1000, 30000};
      vm.write("x", x);
      vm.write_i32("pos", pos);
      poison(vm, "y");
      vm.run();
      std::vector<double> want(x.begin(), x.end()), plain(x.begin(), x.end());
      for (std::int64_t t = 0; t < T; ++t)
        for (std::int64_t h = 0; h < n; ++h)
          for (std::int64_t i = 0; i < hd / 2; ++i) {
            const std::int64_t a = style == 0 ? i : 2 * i, b = style == 0 ? i + hd / 2 : 2 * i + 1;
            const std::size_t base = std::size_t(t * n * hd + h * hd);
            const double xa = x[base + std::size_t(a)], xb = x[base + std::size_t(b)];
            for (auto* w : {&want, &plain}) {
              const double ang = pos[std::size_t(t)] *
                                 (w == &want ? llama3_inv_freq(theta, i, hd, sc) : std::pow(theta, -2.0 * double(i) / double(hd)));
              (*w)[base + std::size_t(a)] = xa * std::cos(ang) - xb * std::sin(ang);
              (*w)[base + std::size_t(b)] = xa * std::sin(ang) + xb * std::cos(ang);
            }
          }
      // fp32 angles drift by ~pos * 2^-24 rad (up to 30000 here).
      const auto y = vm.read_f32("y");
      CHECK(closeness(y, want, 5e-3, 0) <= 1.0);
      CHECK(closeness(y, plain, 5e-3, 0) > 1.0);  // the scaling is not a no-op at these positions
    }
  }
}

TEST_CASE("ROPE with the linear scaling (a ramp at its low scale everywhere): positions divided by the factor") {
  std::mt19937 rng(111);
  const std::int64_t T = 3, hd = 32;
  auto p = params().set(param_key::head_dim, hd).set_real(param_key::theta, 10000.0);
  octo::semantics::set_rope_ramp(p, {0.25f, 0.0f, 0.0f});
  reference_vm vm(single_task(opcode::rope, {{"x", {T, hd}}, {"pos", {T}, dtype::i32}}, {"y", {T, hd}}, p));
  const auto x = random_floats(rng, std::size_t(T * hd));
  const std::vector<std::int32_t> pos{4, 400, 4000};
  vm.write("x", x);
  vm.write_i32("pos", pos);
  poison(vm, "y");
  vm.run();
  std::vector<double> want(x.begin(), x.end());
  for (std::int64_t t = 0; t < T; ++t)
    for (std::int64_t i = 0; i < hd / 2; ++i) {
      const double ang = pos[std::size_t(t)] / 4.0 * std::pow(10000.0, -2.0 * double(i) / double(hd));
      const std::size_t a = std::size_t(t * hd + i), b = a + std::size_t(hd / 2);
      want[a] = x[a] * std::cos(ang) - x[b] * std::sin(ang);
      want[b] = x[a] * std::sin(ang) + x[b] * std::cos(ang);
    }
  CHECK(closeness(vm.read_f32("y"), want, 1e-3, 0) <= 1.0);
}

TEST_CASE("rope_ramp_fit: llama.cpp's rope_freqs tables become the ramp; other tables are refused") {
  using octo::semantics::rope_ramp_fit;
  const std::vector<std::tuple<std::int64_t, double, llama3_scaling>> cases{
      {128, 500000.0, {8, 1, 4, 8192}}, {64, 500000.0, {32, 1, 4, 8192}}, {16, 10000.0, {8, 1, 16, 256}},
      {128, 500000.0, {16, 1, 4, 8192}}};
  for (const auto& [hd, theta, sc] : cases) {
    CAPTURE(hd);
    // The divisors as llama.cpp's converter writes rope_freqs.weight: inv_freq / scaled inv_freq, in f32.
    std::vector<float> table(static_cast<std::size_t>(hd / 2));
    for (std::int64_t i = 0; i < hd / 2; ++i)
      table[std::size_t(i)] = float(std::pow(theta, -2.0 * double(i) / double(hd)) / llama3_inv_freq(theta, i, hd, sc));
    const auto r = rope_ramp_fit(table, theta, hd);
    REQUIRE(r);
    const auto want = ramp_of(sc);
    CHECK(r->low_scale == doctest::Approx(want.low_scale).epsilon(1e-6));
    CHECK(r->slope == doctest::Approx(want.slope).epsilon(1e-4));
    CHECK(r->offset == doctest::Approx(want.offset).epsilon(1e-4));
    for (std::int64_t i = 0; i < hd / 2; ++i) {
      const double inv = std::pow(theta, -2.0 * double(i) / double(hd));
      CHECK(inv * r->multiplier(float(inv)) == doctest::Approx(llama3_inv_freq(theta, i, hd, sc)).epsilon(1e-5));
    }
  }
  // A table of ones is no scaling; a step (no frequency on the ramp) and a one-point ramp still fit.
  CHECK(!rope_ramp_fit(std::vector<float>(8, 1.0f), 10000.0, 16)->on());
  const std::vector<float> step{1, 1, 1, 4, 4, 4, 4, 4};
  const auto rs = rope_ramp_fit(step, 10000.0, 16);
  REQUIRE(rs);
  CHECK(rs->low_scale == 0.25f);
  const std::vector<float> one{1, 1, 2, 4, 4, 4, 4, 4};
  const auto ro = rope_ramp_fit(one, 10000.0, 16);
  REQUIRE(ro);
  CHECK(ro->multiplier(float(std::pow(10000.0, -4.0 / 16))) == doctest::Approx(0.5).epsilon(1e-5));
  // Not a ramp: non-monotone, divisors under 1, the wrong length, not finite.
  CHECK(!rope_ramp_fit(std::vector<float>{1, 4, 1, 4, 4, 4, 4, 4}, 10000.0, 16));
  CHECK(!rope_ramp_fit(std::vector<float>{1, 1, 0.5f, 1, 1, 1, 1, 1}, 10000.0, 16));
  CHECK(!rope_ramp_fit(std::vector<float>{1, 1, 1, 4, 4, 4, 4}, 10000.0, 16));
  CHECK(!rope_ramp_fit(std::vector<float>{1, 1, 1, 4, 4, 4, 4, std::numeric_limits<float>::infinity()}, 10000.0, 16));
  CHECK(!rope_ramp_fit(std::vector<float>{1, 1, 2, 3, 4, 5, 6, 7}, 10000.0, 16));  // no common low frequency scale
}

TEST_CASE("ROPE conventions differ exactly as documented on a hand-checked case") {
  // head_dim 4, pos 1, theta 10000: angles 1 and 0.01. x = (1, 2, 3, 4).
  for (std::int64_t style : {0, 1}) {
    reference_vm vm(single_task(opcode::rope, {{"x", {1, 4}}, {"pos", {1}, dtype::i32}}, {"y", {1, 4}},
                                params().set(param_key::head_dim, 4).set_real(param_key::theta, 10000.0)
                                    .set(param_key::rope_style, style)));
    vm.write("x", std::vector<float>{1, 2, 3, 4});
    vm.write_i32("pos", std::vector<std::int32_t>{1});
    poison(vm, "y");  // an element the op fails to write stays NaN
    vm.run();
    const auto y = vm.read_f32("y");
    const double c1 = std::cos(1.0), s1 = std::sin(1.0), c2 = std::cos(0.01), s2 = std::sin(0.01);
    // rotate-half pairs (0,2) at angle 1 and (1,3) at 0.01; interleaved pairs (0,1) at 1 and (2,3) at 0.01.
    const std::vector<double> want = style == 0
        ? std::vector<double>{1 * c1 - 3 * s1, 2 * c2 - 4 * s2, 1 * s1 + 3 * c1, 2 * s2 + 4 * c2}
        : std::vector<double>{1 * c1 - 2 * s1, 1 * s1 + 2 * c1, 3 * c2 - 4 * s2, 3 * s2 + 4 * c2};
    CHECK(closeness(y, want, 1e-6, 1e-6) <= 1.0);
  }
}

TEST_CASE("elementwise ops: SILU_MUL, GELU, ADD, MUL, COPY") {
  std::mt19937 rng(110);
  const auto R = random_int(rng, 1, 5), H = random_int(rng, 1, 50);
  const auto n = std::size_t(R * H);
  const auto a = random_floats(rng, n, -4, 4), b = random_floats(rng, n, -4, 4), row = random_floats(rng, std::size_t(H));
  auto run2 = [&](opcode op, std::vector<tensor_spec> ins, const std::vector<std::vector<float>>& data, ir::param_list pl) {
    reference_vm vm(single_task(op, ins, {"y", {R, H}}, std::move(pl)));
    for (std::size_t i = 0; i < ins.size(); ++i) vm.write(ins[i].name, data[i]);
    poison(vm, "y");  // an element the op fails to write stays NaN
    vm.run();
    return vm.read_f32("y");
  };
  std::vector<double> want(n);
  for (std::size_t i = 0; i < n; ++i) want[i] = a[i] / (1.0 + std::exp(-double(a[i]))) * b[i];
  CHECK(closeness(run2(opcode::silu_mul, {{"g", {R, H}}, {"u", {R, H}}}, {a, b}, params()), want, 1e-6, 1e-5) <= 1.0);
  for (std::size_t i = 0; i < n; ++i) want[i] = 0.5 * a[i] * (1.0 + std::erf(a[i] / std::sqrt(2.0)));
  CHECK(closeness(run2(opcode::gelu, {{"x", {R, H}}}, {a}, params()), want, 1e-6, 1e-5) <= 1.0);
  for (std::size_t i = 0; i < n; ++i) want[i] = double(a[i]) + b[i];
  CHECK(closeness(run2(opcode::add, {{"a", {R, H}}, {"b", {R, H}}}, {a, b}, params()), want, 1e-6, 1e-6) <= 1.0);
  for (std::size_t i = 0; i < n; ++i) want[i] = double(a[i]) + row[i % std::size_t(H)];
  CHECK(closeness(run2(opcode::add, {{"a", {R, H}}, {"b", {H}}}, {a, row}, params()), want, 1e-6, 1e-6) <= 1.0);
  for (std::size_t i = 0; i < n; ++i) want[i] = double(a[i]) * row[i % std::size_t(H)];
  CHECK(closeness(run2(opcode::mul, {{"a", {R, H}}, {"b", {H}}}, {a, row}, params()), want, 1e-6, 1e-6) <= 1.0);
  for (std::size_t i = 0; i < n; ++i) want[i] = -0.375 * a[i];
  CHECK(closeness(run2(opcode::mul, {{"a", {R, H}}}, {a}, params().set_real(param_key::alpha, -0.375)), want, 1e-7, 1e-6) <= 1.0);
  CHECK(closeness(run2(opcode::copy, {{"a", {R, H}}}, {a}, params()), widen(a), 0, 0) == 0);
}

TEST_CASE("COPY converts dtype on the way") {
  reference_vm vm(single_task(opcode::copy, {{"x", {4}}}, {"y", {4}, dtype::f16}, params()));
  vm.write("x", std::vector<float>{1.0f, 1.0f / 3.0f, 70000.0f, -0.0f});
  vm.run();
  const auto y = vm.read_f32("y");
  CHECK(y[0] == 1.0f);
  CHECK(y[1] == 0.333251953125f);  // 1/3 to the nearest half: 0x3555
  CHECK(std::isinf(y[2]));         // beyond 65520 overflows to inf
  CHECK(std::signbit(y[3]));
}

TEST_CASE("DEQUANT of I8 and packed I4 groups, with and without zero points") {
  std::mt19937 rng(111);
  for (dtype qt : {dtype::i8, dtype::i4})
    for (int with_zero = 0; with_zero < 2; ++with_zero) {
      CAPTURE(ir::name(qt));
      const auto group = random_int(rng, 1, 8), n_groups = random_int(rng, 1, 6);
      auto numel = group * n_groups;
      if (qt == dtype::i4 && numel % 2 == 1 && with_zero) numel -= 1;  // also covers a partial last group
      const auto ng = (numel + group - 1) / group;
      if (numel == 0) continue;
      std::vector<tensor_spec> ins{{"q", {numel}, qt, buffer_kind::weight}, {"s", {ng}, dtype::f32, buffer_kind::weight}};
      if (with_zero) ins.push_back({"z", {ng}, dtype::f32, buffer_kind::weight});
      reference_vm vm(single_task(opcode::dequant, ins, {"y", {numel}},
                                  params().set(param_key::qdtype, static_cast<int>(qt)).set(param_key::group, group)));
      const int lo = qt == dtype::i8 ? -128 : -8, hi = qt == dtype::i8 ? 127 : 7;
      std::vector<int> q(static_cast<std::size_t>(numel));
      for (auto& v : q) v = int(random_int(rng, lo, hi));
      // Pack by hand: one signed byte each, or two nibbles per byte with element 2k low.
      std::vector<std::byte> raw;
      if (qt == dtype::i8) {
        for (int v : q) raw.push_back(std::byte(static_cast<std::uint8_t>(v)));
      } else {
        for (std::size_t i = 0; i < q.size(); i += 2) {
          const unsigned lo_n = unsigned(q[i]) & 0xf, hi_n = i + 1 < q.size() ? unsigned(q[i + 1]) & 0xf : 0;
          raw.push_back(std::byte(lo_n | (hi_n << 4)));
        }
      }
      const auto s = random_floats(rng, std::size_t(ng), 0.01f, 0.2f), z = random_floats(rng, std::size_t(ng), -3, 3);
      vm.write_bytes("q", raw);
      vm.write("s", s);
      if (with_zero) vm.write("z", z);
      poison(vm, "y");  // an element the op fails to write stays NaN
      vm.run();
      std::vector<double> want;
      for (std::int64_t i = 0; i < numel; ++i)
        want.push_back((q[std::size_t(i)] - (with_zero ? double(z[std::size_t(i / group)]) : 0.0)) * s[std::size_t(i / group)]);
      CHECK(closeness(vm.read_f32("y"), want, 1e-6, 1e-6) <= 1.0);
      CHECK(vm.read_f32("q") == std::vector<float>(q.begin(), q.end()));
    }
}

TEST_CASE("SOFTMAX over the last axis and over an explicit dim") {
  std::mt19937 rng(112);
  for (int explicit_dim = 0; explicit_dim < 2; ++explicit_dim) {
    const auto R = random_int(rng, 1, 6), D = random_int(rng, 1, 64);
    auto pl = params();
    if (explicit_dim) pl.set(param_key::dim, D);
    // With an explicit dim the buffer is flat, so only the param says where rows end.
    const std::vector<std::int64_t> shape = explicit_dim ? std::vector<std::int64_t>{R * D} : std::vector<std::int64_t>{R, D};
    reference_vm vm(single_task(opcode::softmax, {{"x", shape}}, {"y", shape}, pl));
    const auto x = random_floats(rng, std::size_t(R * D), -30, 30);
    vm.write("x", x);
    poison(vm, "y");  // an element the op fails to write stays NaN
    vm.run();
    std::vector<double> want;
    for (std::int64_t r = 0; r < R; ++r) {
      double m = -1e300, sum = 0;
      for (std::int64_t d = 0; d < D; ++d) m = std::max(m, double(x[std::size_t(r * D + d)]));
      for (std::int64_t d = 0; d < D; ++d) sum += std::exp(x[std::size_t(r * D + d)] - m);
      for (std::int64_t d = 0; d < D; ++d) want.push_back(std::exp(x[std::size_t(r * D + d)] - m) / sum);
    }
    CHECK(closeness(vm.read_f32("y"), want, 1e-7, 1e-5) <= 1.0);
  }
}

TEST_CASE("ALLREDUCE_SHARD sums its shards") {
  std::mt19937 rng(113);
  const auto n = random_int(rng, 1, 100), k = random_int(rng, 1, 8);
  std::vector<tensor_spec> ins;
  std::vector<std::vector<float>> data;
  for (std::int64_t s = 0; s < k; ++s) {
    ins.push_back({std::string("s").append(std::to_string(s)), {n}});
    data.push_back(random_floats(rng, std::size_t(n)));
  }
  reference_vm vm(single_task(opcode::allreduce_shard, ins, {"y", {n}}, params()));
  for (std::int64_t s = 0; s < k; ++s) vm.write(ins[std::size_t(s)].name, data[std::size_t(s)]);
  poison(vm, "y");  // an element the op fails to write stays NaN
  vm.run();
  std::vector<double> want(std::size_t(n), 0.0);
  for (const auto& d : data)
    for (std::size_t i = 0; i < want.size(); ++i) want[i] += d[i];
  CHECK(closeness(vm.read_f32("y"), want, 1e-6, 1e-6) <= 1.0);
}

TEST_CASE("KV_APPEND writes rows at pos and keeps the rest of the cache") {
  std::mt19937 rng(114);
  const auto S = random_int(rng, 2, 20), row = random_int(rng, 1, 16), T = random_int(rng, 1, S);
  const auto pos = random_int(rng, 0, S - T);
  ir::program p;
  const auto kv_new = p.add_buffer("k_new", buffer_kind::io_input, dtype::f32, {T, row});
  const auto cache = p.add_buffer("k_cache", buffer_kind::kv_cache, dtype::f32, {S, row});
  ir::task t;
  t.op = opcode::kv_append;
  t.inputs = {kv_new, cache};
  t.outputs = {cache};
  t.out_counter = p.add_counter();
  t.params.set(param_key::pos, pos);
  p.add_task(t);
  reference_vm vm(p);
  const auto before = random_floats(rng, std::size_t(S * row)), fresh = random_floats(rng, std::size_t(T * row));
  vm.write(cache, before);
  vm.write(kv_new, fresh);
  vm.run();
  std::vector<double> want(before.begin(), before.end());
  for (std::size_t i = 0; i < fresh.size(); ++i) want[std::size_t(pos * row) + i] = fresh[i];
  CHECK(closeness(vm.read_f32(cache), want, 0, 0) == 0);
}

TEST_CASE("SAMPLE_ARGMAX picks the row maximum, lowest index on ties") {
  std::mt19937 rng(115);
  const auto R = random_int(rng, 1, 5), V = random_int(rng, 2, 300);
  reference_vm vm(single_task(opcode::sample_argmax, {{"logits", {R, V}}}, {"ids", {R}, dtype::i32}, params()));
  auto logits = random_floats(rng, std::size_t(R * V), -5, 5);
  // Row 0: a tie between two maxima, the later one first in the random data.
  const auto j1 = random_int(rng, 0, V - 2), j2 = random_int(rng, j1 + 1, V - 1);
  logits[std::size_t(j1)] = logits[std::size_t(j2)] = 9.0f;
  vm.write("logits", logits);
  vm.run();
  const auto ids = vm.read_i32("ids");
  for (std::int64_t r = 0; r < R; ++r) {
    std::int64_t best = 0;
    for (std::int64_t v = 1; v < V; ++v)
      if (double(logits[std::size_t(r * V + v)]) > double(logits[std::size_t(r * V + best)])) best = v;
    CHECK(ids[std::size_t(r)] == best);
  }
  CHECK(ids[0] == j1);
}

TEST_CASE("GEMV_TILE and EMBED read GGUF block-quantized weights (hand-packed Q8_0 and Q4_0)") {
  std::mt19937 rng(116);
  const std::int64_t K = 64, N = 3;  // two 32-element blocks per row
  // Scales are powers of two so d * q is exact; the oracle is d * q computed here.
  const std::uint16_t d_bits[2] = {0x3800, 0x3400};  // f16 0.5 and 0.25
  const double d_val[2] = {0.5, 0.25};
  for (dtype qt : {dtype::q8_0, dtype::q4_0}) {
    CAPTURE(ir::name(qt));
    std::vector<std::byte> raw;
    std::vector<float> w;
    for (std::int64_t blk = 0; blk < N * K / 32; ++blk) {
      const int which = int(blk % 2);
      raw.push_back(std::byte(d_bits[which] & 0xff));
      raw.push_back(std::byte(d_bits[which] >> 8));
      std::vector<int> q(32);
      for (auto& v : q) v = qt == dtype::q8_0 ? int(random_int(rng, -128, 127)) : int(random_int(rng, 0, 15));
      if (qt == dtype::q8_0) {
        for (int v : q) raw.push_back(std::byte(static_cast<std::uint8_t>(v)));
        for (int v : q) w.push_back(float(v * d_val[which]));
      } else {
        // ggml Q4_0: byte j holds element j (low nibble) and element j+16 (high nibble), value (nib-8)*d.
        for (int j = 0; j < 16; ++j) raw.push_back(std::byte(unsigned(q[std::size_t(j)]) | (unsigned(q[std::size_t(j + 16)]) << 4)));
        for (int v : q) w.push_back(float((v - 8) * d_val[which]));
      }
    }
    reference_vm vm(single_task(opcode::gemv_tile, {{"x", {1, K}}, {"W", {N, K}, qt, buffer_kind::weight}}, {"y", {1, N}},
                                params().set(param_key::K, K).set(param_key::N_tile, N).set(param_key::n_off, 0)));
    const auto x = random_floats(rng, std::size_t(K));
    vm.write("x", x);
    vm.write_bytes("W", raw);
    CHECK(vm.read_f32("W") == w);
    poison(vm, "y");  // an element the op fails to write stays NaN
    vm.run();
    CHECK(closeness(vm.read_f32("y"), matmul64(x, w, nullptr, 1, K, N), 1e-5, 1e-4) <= 1.0);
    CHECK_THROWS_AS(vm.write("W", w), octo::error);  // block buffers take raw bytes only

    reference_vm emb(single_task(opcode::embed, {{"ids", {2}, dtype::i32}, {"table", {N, K}, qt, buffer_kind::weight}},
                                 {"y", {2, K}}, params().set(param_key::hidden, K)));
    emb.write_bytes("table", raw);
    emb.write_i32("ids", std::vector<std::int32_t>{2, 0});
    emb.run();
    std::vector<double> want(w.begin() + 2 * K, w.end());
    want.insert(want.end(), w.begin(), w.begin() + K);
    CHECK(closeness(emb.read_f32("y"), want, 0, 0) == 0);
  }
}
