// Conformance of GEMV_TILE (tests/gpu/conformance.cpp says how cases run): every weight format, both
// reductions, decode shapes, the scalar path, the opt-in x-through-shared-tiles mode.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "conformance_support.hpp"

TEST_CASE("conformance: GEMV_TILE, every weight dtype, two tiles and an untouched column range") {
  // Both reductions: subgroupAdd (where the device has it) and the shared-memory fallback.
  for (bool fallback : {false, true}) {
  if (fallback) ::setenv("OCTO_KERNELS_NO_SUBGROUP", "1", 1);
  CAPTURE(fallback);
  for (dtype wd : weight_dtypes) {
    if (fallback && !reduction_sample(wd)) continue;
    for (std::int64_t R : {1, 3}) {
      for (bool bias : {false, true}) {
        CAPTURE(octo::ir::name(wd));
        CAPTURE(R);
        CAPTURE(bias);
        const std::int64_t K = 512, N = 40;
        case_builder c;
        auto x = c.buf("x", buffer_kind::io_input, dtype::f32, {R, K});
        auto w = c.buf("w", buffer_kind::weight, wd, {N, K});
        auto b = c.buf("b", buffer_kind::weight, dtype::f32, {N});
        auto y = c.buf("y", buffer_kind::io_output, dtype::f32, {R, N});
        std::vector<std::int32_t> in{x, w};
        if (bias) in.push_back(b);
        // Columns [0, 3) and [37, 40) stay poisoned: tiles write only their own columns.
        c.task(opcode::gemv_tile, in, {y}, params({{param_key::K, K}, {param_key::N_tile, 21}, {param_key::n_off, 3}}));
        c.task(opcode::gemv_tile, in, {y}, params({{param_key::K, K}, {param_key::N_tile, 13}, {param_key::n_off, 24}}));
        run_case(c, {1e-4, 1e-4});
      }
    }
  }
  ::unsetenv("OCTO_KERNELS_NO_SUBGROUP");
  }
}

TEST_CASE("conformance: GEMV_TILE with K not a multiple of 8 (scalar path)") {
  for (dtype wd : {dtype::f32, dtype::f16, dtype::bf16}) {
    CAPTURE(octo::ir::name(wd));
    const std::int64_t K = 100, N = 9, R = 2;
    case_builder c;
    auto x = c.buf("x", buffer_kind::io_input, dtype::f32, {R, K});
    auto w = c.buf("w", buffer_kind::weight, wd, {N, K});
    auto y = c.buf("y", buffer_kind::io_output, dtype::f32, {R, N});
    c.task(opcode::gemv_tile, {x, w}, {y}, params({{param_key::K, K}, {param_key::N_tile, N}, {param_key::n_off, 0}}));
    run_case(c, {1e-4, 1e-4});
  }
}

TEST_CASE("conformance: GEMV_TILE decode shapes: K from one block to thousands, 1-6 rows, odd tiles, bias") {
  // The per-format chunk loops (shaders/common/gemv_chunks.glsl) and the generic loop: K of one K-quant
  // block, K not a multiple of 256 for the 32-element formats, K in the thousands; 1 to 4 x rows in one
  // workgroup and 6 over two; N not a multiple of the rows per workgroup, a one-row tile, both reductions.
  struct shape {
    std::int64_t K, R;
    bool bias;
  };
  // Modes: subgroup reduction, shared-memory reduction, and x through shared-memory tiles (OCTO_GEMV_XS=1)
  // with 4 weight rows a workgroup (OCTO_GEMV_NR=4: the planner's choice for outputs wider than these
  // 37 columns; at this width it takes 2, and 4 only for the 32-element formats past K = 2048), so every
  // format's chunk loop runs at both.
  for (int mode : {0, 1, 2}) {
    if (mode == 1) ::setenv("OCTO_KERNELS_NO_SUBGROUP", "1", 1);
    if (mode == 2) {
      ::setenv("OCTO_GEMV_XS", "1", 1);
      ::setenv("OCTO_GEMV_NR", "4", 1);
    }
    CAPTURE(mode);
    for (dtype wd : weight_dtypes) {
      if (mode == 1 && !reduction_sample(wd)) continue;
      const std::int64_t blk = octo::ir::layout(wd).block_elems;
      const std::int64_t k_odd = blk == 256 ? 1280 : 1120;  // 1120 = 35 blocks of 32, not a multiple of 256
      for (shape s : {shape{256, 1, false}, shape{k_odd, 2, true}, shape{3584, 1, true}, shape{k_odd, 3, false},
                      shape{4096, 4, true}, shape{k_odd, 6, true}}) {
        // The opt-in XS mode: every format's x-tile reads, at one and at three rows a workgroup.
        if (mode == 2 && s.R != 1 && s.R != 3) continue;
        CAPTURE(octo::ir::name(wd));
        CAPTURE(s.K);
        CAPTURE(s.R);
        CAPTURE(s.bias);
        const std::int64_t N = 37;
        case_builder c;
        auto x = c.buf("x", buffer_kind::io_input, dtype::f32, {s.R, s.K});
        auto w = c.buf("w", buffer_kind::weight, wd, {N, s.K});
        auto b = c.buf("b", buffer_kind::weight, dtype::f16, {N});
        auto y = c.buf("y", buffer_kind::io_output, dtype::f32, {s.R, N});
        std::vector<std::int32_t> in{x, w};
        if (s.bias) in.push_back(b);
        // Columns 0, 1 and 36 stay poisoned.
        c.task(opcode::gemv_tile, in, {y}, params({{param_key::K, double(s.K)}, {param_key::N_tile, 33}, {param_key::n_off, 2}}));
        c.task(opcode::gemv_tile, in, {y}, params({{param_key::K, double(s.K)}, {param_key::N_tile, 1}, {param_key::n_off, 35}}));
        // Sums of K products of magnitude <= 1 in another order: the bound grows with K.
        run_case(c, {1e-4 * double(s.K) / 256.0, 1e-4});
      }
    }
    ::unsetenv("OCTO_KERNELS_NO_SUBGROUP");
    ::unsetenv("OCTO_GEMV_XS");
    ::unsetenv("OCTO_GEMV_NR");
  }
}

TEST_CASE("conformance: GEMV_TILE with more weight rows x x rows than invocations (OCTO_GEMV_NR=16, OCTO_GEMV_WG=32)") {
  // The planner's shapes give each invocation at most one output slot (NR x RB <= the workgroup); the
  // knobs may ask for more (16 rows x 4 x rows over 32 invocations): the epilogue then finishes several
  // slots an invocation. Before it did, the slots past the width were never written (wrong logits, no
  // error). Every weight format, 1, 3 and 4 x rows, an odd tile.
  ::setenv("OCTO_GEMV_NR", "16", 1);
  ::setenv("OCTO_GEMV_WG", "32", 1);
  for (dtype wd : weight_dtypes) {
    for (std::int64_t R : {1, 3, 4}) {
      CAPTURE(octo::ir::name(wd));
      CAPTURE(R);
      const std::int64_t K = 512, N = 45;
      case_builder c;
      auto x = c.buf("x", buffer_kind::io_input, dtype::f32, {R, K});
      auto w = c.buf("w", buffer_kind::weight, wd, {N, K});
      auto b = c.buf("b", buffer_kind::weight, dtype::f32, {N});
      auto y = c.buf("y", buffer_kind::io_output, dtype::f32, {R, N});
      // Columns 0 and 44 stay poisoned.
      c.task(opcode::gemv_tile, {x, w, b}, {y}, params({{param_key::K, K}, {param_key::N_tile, 43}, {param_key::n_off, 1}}));
      run_case(c, {1e-4 * double(K) / 256.0, 1e-4});
    }
  }
  ::unsetenv("OCTO_GEMV_NR");
  ::unsetenv("OCTO_GEMV_WG");
}

namespace {
// The contract of the `fast` precision's integer-dot decode GEMVs (docs/precision.md "Decode GEMVs on
// integer dot products"), computed here from its definition: v (x times the norm weight, in f32) rounded
// per aligned 16-element run to v^ = step * roundEven(v * 127 / max|v|), step = max|v| / 127, then W v^ in
// double over the weights as the reference dequantizes them. Returns y and a bound per row: f32 rounding
// (1e-5 of the sum of |products|) plus, for each element whose scaled value lies within 1e-3 of a
// rounding tie (the device's 127 / max|v| may differ from this one in its last bits), that element's
// whole step.
struct idot_expect {
  std::vector<double> y, bound;
};
idot_expect idot_contract(const std::vector<float>& v, const std::vector<float>& w, std::int64_t N, std::int64_t K) {
  std::vector<double> vr(static_cast<std::size_t>(K)), tie(static_cast<std::size_t>(K), 0.0);
  for (std::int64_t b = 0; b < K / 16; ++b) {
    float amax = 0.0f;
    for (std::int64_t k = 16 * b; k < 16 * b + 16; ++k) amax = std::max(amax, std::abs(v[static_cast<std::size_t>(k)]));
    const float step = amax / 127.0f, inv = amax >= 1e-30f ? 127.0f / amax : 0.0f;
    for (std::int64_t k = 16 * b; k < 16 * b + 16; ++k) {
      const float t = v[static_cast<std::size_t>(k)] * inv;
      vr[static_cast<std::size_t>(k)] = double(step) * std::nearbyint(double(t));  // round half to even
      if (std::abs(std::abs(double(t) - std::trunc(double(t))) - 0.5) < 1e-3) tie[static_cast<std::size_t>(k)] = step;
    }
  }
  idot_expect e{std::vector<double>(static_cast<std::size_t>(N)), std::vector<double>(static_cast<std::size_t>(N))};
  for (std::int64_t n = 0; n < N; ++n) {
    double s = 0.0, mag = 0.0, ties = 0.0;
    for (std::int64_t k = 0; k < K; ++k) {
      const double wv = w[static_cast<std::size_t>(n * K + k)];
      s += wv * vr[static_cast<std::size_t>(k)];
      mag += std::abs(wv * vr[static_cast<std::size_t>(k)]);
      ties += std::abs(wv) * tie[static_cast<std::size_t>(k)];
    }
    e.y[static_cast<std::size_t>(n)] = s;
    e.bound[static_cast<std::size_t>(n)] = 1e-5 * mag + 1e-6 + ties;
  }
  return e;
}

// The formats with an integer-dot chunk loop (shaders/common/gemv_idot.glsl).
constexpr dtype idot_dtypes[] = {dtype::q8_0, dtype::q4_0, dtype::q4_1, dtype::q5_0, dtype::q5_1,
                                 dtype::q2_k, dtype::q3_k, dtype::q4_k, dtype::q5_k, dtype::q6_k};

/// A rows x K weight of uniform(-1, 1) values quantized to `wd` row by row, and (dq) its dequantized
/// values, the contract's weights.
std::vector<std::byte> random_weight(std::mt19937_64& rng, dtype wd, std::int64_t rows, std::int64_t K,
                                     std::vector<float>* dq) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> wf(static_cast<std::size_t>(rows * K));
  for (auto& v : wf) v = u(rng);
  std::vector<std::byte> wb(static_cast<std::size_t>(octo::ir::nbytes(wd, rows * K)));
  auto* dst = reinterpret_cast<std::uint8_t*>(wb.data());
  for (std::int64_t n = 0; n < rows; ++n) octo::detail::quantize_row(wd, wf.data() + n * K, dst + octo::ir::nbytes(wd, n * K), K);
  if (dq) {
    dq->resize(wf.size());
    octo::detail::dequantize_row(wd, dst, dq->data(), rows * K);
  }
  return wb;
}

std::vector<std::byte> f32_bytes(const std::vector<float>& v) {
  std::vector<std::byte> o(v.size() * 4);
  std::memcpy(o.data(), v.data(), o.size());
  return o;
}
}  // namespace

TEST_CASE("conformance: integer-dot decode GEMV (fast precision) against its rounded-x contract") {
  // OCTO_GEMV_IDOT=1 takes the integer-dot loops wherever the device has the instruction (lavapipe has
  // it unaccelerated, so its default keeps the float loops): every format with such a loop, K of one
  // block group, K not a multiple of 256 for the 32-element formats, K in the thousands; plain (with a
  // bias), RMSNORM-fused (the norm weight enters before the rounding, the inverse RMS after), residual-
  // fused, and the SwiGLU gate|up GEMV (silu(g) u of the contract's g and u).
  ::setenv("OCTO_GEMV_IDOT", "1", 1);
  enum class fuse { none, norm, add, swiglu };
  std::mt19937_64 rng(seed() ^ 0x1d07ull);
  INFO("seed " << seed() << " (OCTO_CONFORMANCE_SEED replays it)");
  auto& vm = gpu_fast();
  REQUIRE(vm.device().int_dot);  // Vulkan 1.3 requires shaderIntegerDotProduct
  // Rows per workgroup: the planner's (2 at these narrow tiles), then 4 and 8 (the long and wide
  // outputs' counts, forced by OCTO_GEMV_NR) at K = 3584, plain and SwiGLU; x rounded by each workgroup,
  // and at 4 rows once ahead of the GEMV (OCTO_GEMV_X8=2; the next case checks that it rounds the same runs).
  const std::pair<const char*, const char*> modes[] = {{"", "0"}, {"4", "2"}, {"8", "0"}};
  for (const auto& [rows, x8] : modes) {
  if (*rows) ::setenv("OCTO_GEMV_NR", rows, 1);
  ::setenv("OCTO_GEMV_X8", x8, 1);
  CAPTURE(rows);
  CAPTURE(x8);
  for (dtype wd : idot_dtypes) {
    if (!reduction_sample(wd) && octo::test::sampled_out("integer-dot formats other than Q5_1 and Q4_K")) continue;
    const std::int64_t blk = octo::ir::layout(wd).block_elems;
    for (std::int64_t K : {blk == 256 ? std::int64_t{256} : std::int64_t{64}, blk == 256 ? std::int64_t{1280} : std::int64_t{1120},
                           std::int64_t{3584}}) {
      for (fuse f : {fuse::none, fuse::norm, fuse::add, fuse::swiglu}) {
        if (*rows && (K != 3584 || f == fuse::norm || f == fuse::add)) continue;
        CAPTURE(octo::ir::name(wd));
        CAPTURE(K);
        CAPTURE(static_cast<int>(f));
        const std::int64_t N = 37, n_off = 2, n_tile = 34;  // columns 0, 1 and 36 stay poisoned
        const bool bias = f == fuse::none || f == fuse::norm, norm = f == fuse::norm || f == fuse::swiglu;
        case_builder c;
        auto x = c.buf("x", buffer_kind::io_input, dtype::f32, {1, K});
        auto w = c.buf("w", buffer_kind::weight, wd, {N, K});
        auto w2 = c.buf("w2", buffer_kind::weight, wd, {N, K});
        auto nw = c.buf("nw", buffer_kind::weight, dtype::f32, {K});
        auto b = c.buf("b", buffer_kind::weight, dtype::f16, {N});
        auto r = c.buf("r", buffer_kind::io_input, dtype::f32, {1, N});
        auto y = c.buf("y", buffer_kind::io_output, dtype::f32, {1, N});
        const double eps = 1e-6;
        const auto plain = params({{param_key::K, double(K)}, {param_key::N_tile, double(n_tile)}, {param_key::n_off, double(n_off)}});
        const auto normed = params({{param_key::K, double(K)}, {param_key::N_tile, double(n_tile)}, {param_key::n_off, double(n_off)},
                                    {param_key::eps, eps}, {param_key::hidden, double(K)}});
        if (f == fuse::norm)
          c.task(opcode::rmsnorm_gemv, {x, nw, w, b}, {y}, normed);
        else if (f == fuse::swiglu)
          c.task(opcode::rmsnorm_swiglu, {x, nw, w, w2}, {y}, normed);
        else if (f == fuse::add)
          c.task(opcode::gemv_add, {x, w, r}, {y}, plain);
        else
          c.task(opcode::gemv_tile, {x, w, b}, {y}, plain);
        // x with a spread of magnitudes (a run's max sets its step), weights quantized from [-1, 1], a
        // norm weight in [0.5, 1.5].
        std::uniform_real_distribution<float> u(-1.0f, 1.0f), pos(0.5f, 1.5f);
        std::vector<float> xv(static_cast<std::size_t>(K)), nwv(static_cast<std::size_t>(K));
        for (std::int64_t k = 0; k < K; ++k) xv[static_cast<std::size_t>(k)] = u(rng) * (k % 97 == 0 ? 8.0f : 1.0f);
        for (auto& v : nwv) v = pos(rng);
        std::vector<std::vector<float>> wdq(2);  // the weights as the reference dequantizes them
        std::vector<std::vector<std::byte>> wbytes(2);
        for (int m = 0; m < 2; ++m) {
          std::vector<float> wf(static_cast<std::size_t>(N * K));
          for (auto& v : wf) v = u(rng);
          wbytes[m].resize(static_cast<std::size_t>(octo::ir::nbytes(wd, N * K)));
          auto* dst = reinterpret_cast<std::uint8_t*>(wbytes[m].data());
          for (std::int64_t n = 0; n < N; ++n) octo::detail::quantize_row(wd, wf.data() + n * K, dst + octo::ir::nbytes(wd, n * K), K);
          wdq[m].resize(wf.size());
          octo::detail::dequantize_row(wd, dst, wdq[m].data(), N * K);
        }
        std::vector<float> bv(static_cast<std::size_t>(N)), rv(static_cast<std::size_t>(N));
        std::vector<std::byte> bb(static_cast<std::size_t>(2 * N));
        for (auto& v : bv) v = u(rng);
        octo::detail::from_f32(dtype::f16, bv, bb);
        octo::detail::to_f32(dtype::f16, bb, bv);  // the bias as stored
        for (auto& v : rv) v = u(rng);
        vm.load(c.p);
        vm.write_bytes("x", f32_bytes(xv));
        vm.write_bytes("w", wbytes[0]);
        vm.write_bytes("w2", wbytes[1]);
        vm.write_bytes("nw", f32_bytes(nwv));
        vm.write_bytes("b", bb);
        vm.write_bytes("r", f32_bytes(rv));
        vm.write_bytes("y", std::vector<std::byte>(static_cast<std::size_t>(4 * N), std::byte{0xff}));
        vm.execute();
        octo_test::check_clean(vm);
        std::vector<float> got(static_cast<std::size_t>(N));
        const auto gb = vm.read_bytes("y");
        REQUIRE(gb.size() == got.size() * 4);
        std::memcpy(got.data(), gb.data(), gb.size());

        std::vector<float> v = xv;  // what is rounded: x times the norm weight (in f32, as the kernel does)
        double inv_rms = 1.0;
        if (norm) {
          double ss = 0.0;
          for (std::int64_t k = 0; k < K; ++k) {
            ss += double(xv[static_cast<std::size_t>(k)]) * xv[static_cast<std::size_t>(k)];
            v[static_cast<std::size_t>(k)] = xv[static_cast<std::size_t>(k)] * nwv[static_cast<std::size_t>(k)];
          }
          inv_rms = 1.0 / std::sqrt(ss / double(K) + eps);
        }
        const auto rows = [&](int m) {
          return idot_contract(v, std::vector<float>(wdq[m].begin() + n_off * K, wdq[m].begin() + (n_off + n_tile) * K), n_tile, K);
        };
        const idot_expect e = rows(0), e2 = f == fuse::swiglu ? rows(1) : idot_expect{};
        int bad = 0;
        for (std::int64_t n = 0; n < N; ++n) {
          const float g = got[static_cast<std::size_t>(n)];
          if (n < n_off || n >= n_off + n_tile) {  // untouched: still the poison's NaN bytes
            std::uint32_t bits = 0;
            std::memcpy(&bits, &g, 4);
            if (bits != 0xffffffffu && ++bad <= 5) CHECK_MESSAGE(false, "column " << n << " was written");
            continue;
          }
          const auto i = static_cast<std::size_t>(n - n_off);
          double want = e.y[i] * inv_rms, bound = e.bound[i] * inv_rms * (1.0 + 1e-5);
          if (f == fuse::swiglu) {
            // y = silu(g) u; |silu'| <= 1.1, so the bound propagates as 1.1 |u| bg + |silu(g)| bu.
            const double gate = want, up = e2.y[i] * inv_rms, bu = e2.bound[i] * inv_rms * (1.0 + 1e-5);
            const double silu = gate / (1.0 + std::exp(-gate));
            want = silu * up;
            bound = 1.1 * std::abs(up) * bound + std::abs(silu) * bu + bound * bu * 1.1;
          }
          if (bias) want += bv[static_cast<std::size_t>(n)];
          if (f == fuse::add) want += rv[static_cast<std::size_t>(n)];
          bound += 1e-6 * std::abs(want);
          if (!(std::abs(double(g) - want) <= bound) && ++bad <= 5)
            CHECK_MESSAGE(false, "column " << n << ": gpu " << g << ", contract " << want << ", bound " << bound);
        }
        CHECK(bad == 0);
      }
    }
  }
  ::unsetenv("OCTO_GEMV_NR");
  }
  ::unsetenv("OCTO_GEMV_X8");
  ::unsetenv("OCTO_GEMV_IDOT");
}

TEST_CASE("conformance: integer-dot decode GEMV, x rounded once ahead of it gives the runs it rounds itself") {
  // OCTO_GEMV_X8=2 rounds the x row once (gemv_quantize_x, a `before` launch) instead of in every
  // workgroup: the same runs, so the residual GEMV's outputs equal to the bit in every format. The
  // RMSNORM-fused ones sum x's squares in another order (per run, then the runs in the workgroup's chunk
  // order, against each invocation's own loads): their sums agree to about 1e-6 of the terms, which
  // silu(g) u can magnify where g is negative or a sum cancels. So within 1e-4 of the largest output.
  ::setenv("OCTO_GEMV_IDOT", "1", 1);
  std::mt19937_64 rng(seed() ^ 0x59a1ull);
  INFO("seed " << seed() << " (OCTO_CONFORMANCE_SEED replays it)");
  auto& vm = gpu_fast();
  // K: one block group (fewer runs than gemv_quantize_x has invocations), a K of 32-element blocks that
  // is no multiple of 256 (five K-quant blocks), and 2560 (several chunks per GEMV invocation).
  for (dtype wd : idot_dtypes) {
    if (!reduction_sample(wd) && octo::test::sampled_out("integer-dot formats other than Q5_1 and Q4_K")) continue;
    const std::int64_t blk = octo::ir::layout(wd).block_elems;
    for (std::int64_t K : {blk == 256 ? std::int64_t{256} : std::int64_t{64}, blk == 256 ? std::int64_t{1280} : std::int64_t{1120},
                           std::int64_t{2560}}) {
      CAPTURE(octo::ir::name(wd));
      CAPTURE(K);
      const std::int64_t N = 40;
      case_builder c;
      auto x = c.buf("x", buffer_kind::io_input, dtype::f32, {1, K});
      auto nw = c.buf("nw", buffer_kind::weight, dtype::f32, {K});
      auto w = c.buf("w", buffer_kind::weight, wd, {N, K});
      auto w2 = c.buf("w2", buffer_kind::weight, wd, {N, K});
      auto r = c.buf("r", buffer_kind::io_input, dtype::f32, {1, N});
      auto y1 = c.buf("y1", buffer_kind::io_output, dtype::f32, {1, N});
      auto y2 = c.buf("y2", buffer_kind::io_output, dtype::f32, {1, N});
      const auto plain = params({{param_key::K, double(K)}, {param_key::N_tile, double(N)}, {param_key::n_off, 0.0}});
      const auto normed = params({{param_key::K, double(K)}, {param_key::N_tile, double(N)}, {param_key::n_off, 0.0},
                                  {param_key::eps, 1e-6}, {param_key::hidden, double(K)}});
      c.task(opcode::rmsnorm_swiglu, {x, nw, w, w2}, {y1}, normed);
      c.task(opcode::gemv_add, {x, w, r}, {y2}, plain);
      std::uniform_real_distribution<float> u(-1.0f, 1.0f);
      std::vector<float> xv(static_cast<std::size_t>(K)), nwv(static_cast<std::size_t>(K)), rv(static_cast<std::size_t>(N));
      for (std::int64_t k = 0; k < K; ++k) xv[static_cast<std::size_t>(k)] = u(rng) * (k % 61 == 0 ? 16.0f : 1.0f);
      for (auto& v : nwv) v = 1.0f + 0.5f * u(rng);
      for (auto& v : rv) v = u(rng);
      std::vector<std::vector<std::byte>> wbytes(2);
      for (auto& wb : wbytes) {
        std::vector<float> wf(static_cast<std::size_t>(N * K));
        for (auto& v : wf) v = u(rng);
        wb.resize(static_cast<std::size_t>(octo::ir::nbytes(wd, N * K)));
        for (std::int64_t n = 0; n < N; ++n)
          octo::detail::quantize_row(wd, wf.data() + n * K, reinterpret_cast<std::uint8_t*>(wb.data()) + octo::ir::nbytes(wd, n * K), K);
      }
      std::vector<std::byte> outs[2][2];
      for (int x8 = 0; x8 < 2; ++x8) {
        ::setenv("OCTO_GEMV_X8", x8 ? "2" : "0", 1);
        vm.load(c.p);  // planned again under this setting
        vm.write_bytes("x", f32_bytes(xv));
        vm.write_bytes("nw", f32_bytes(nwv));
        vm.write_bytes("w", wbytes[0]);
        vm.write_bytes("w2", wbytes[1]);
        vm.write_bytes("r", f32_bytes(rv));
        vm.execute();
        octo_test::check_clean(vm);
        outs[x8][0] = vm.read_bytes("y1");
        outs[x8][1] = vm.read_bytes("y2");
      }
      CHECK(outs[0][1] == outs[1][1]);
      REQUIRE(outs[0][0].size() == outs[1][0].size());
      std::vector<float> ya(static_cast<std::size_t>(N)), yb(static_cast<std::size_t>(N));
      std::memcpy(ya.data(), outs[0][0].data(), outs[0][0].size());
      std::memcpy(yb.data(), outs[1][0].data(), outs[1][0].size());
      float ymax = 0.0f;
      for (float v : ya) ymax = std::max(ymax, std::abs(v));
      REQUIRE(ymax > 0.0f);
      for (std::size_t i = 0; i < ya.size(); ++i)
        CHECK_MESSAGE(std::abs(ya[i] - yb[i]) <= 1e-4f * ymax, "column " << i << ": " << ya[i] << " against " << yb[i] << " (largest " << ymax << ")");
    }
  }
  ::unsetenv("OCTO_GEMV_X8");
  ::unsetenv("OCTO_GEMV_IDOT");
}

TEST_CASE("conformance: integer-dot decode GEMVs read x rounded by the GEMV_ADD that wrote it") {
  // A residual GEMV_ADD writes the row h that two RMSNORM-fused integer GEMVs (one norm) read as x. By
  // default (OCTO_GEMV_X8_WRITER) the GEMV_ADD's workgroups each own one run of 16 outputs (LANES lanes
  // of NR columns, gemv.comp ROUND) and round it, times the readers' norm weight, into the runs they
  // read: no gemv_quantize_x launch and no barrier before them. Checked against the contract computed
  // here from the h the device wrote (h times the norm weight rounded per run, the inverse RMS of h
  // after) over every format with an integer loop, three steps of one recording; the writer's own
  // outputs bit-identical to the plain GEMV_ADD's (OCTO_GEMV_X8_WRITER=0). Rows of 1280 (80 workgroups)
  // take the planner's 1024-invocation shape (4 lanes of 256 over 4 columns); a forced NR 4 or 8 keeps
  // the GEMV's own (4 and 2 lanes at its width, the shape of grids over 128 workgroups) on one format of
  // each block size; readers with different norms are not served (they keep their own rounding, and the
  // writer does not round).
  ::setenv("OCTO_GEMV_IDOT", "1", 1);
  std::mt19937_64 rng(seed() ^ 0x3b17ull);
  INFO("seed " << seed() << " (OCTO_CONFORMANCE_SEED replays it)");
  auto& vm = gpu_fast();
  struct variant {
    dtype wd;
    std::int64_t H;
    const char* nr;  // OCTO_GEMV_NR, or null: the planner's
    bool same_norm;
  };
  std::vector<variant> variants;
  for (dtype wd : idot_dtypes) variants.push_back({wd, 1280, nullptr, true});
  for (dtype wd : {dtype::q8_0, dtype::q4_k}) {
    const std::int64_t small = octo::ir::layout(wd).block_elems == 256 ? 256 : 96;
    variants.push_back({wd, small, "4", true});
    variants.push_back({wd, small, "8", true});
  }
  variants.push_back({dtype::q8_0, 1280, nullptr, false});
  for (const variant& va : variants) {
    const dtype wd = va.wd;
    if (!reduction_sample(wd) && va.same_norm && octo::test::sampled_out("integer-dot formats other than Q5_1 and Q4_K"))
      continue;
    const std::int64_t H = va.H;
    CAPTURE(octo::ir::name(wd));
    CAPTURE(H);
    CAPTURE(va.same_norm);
    CAPTURE((va.nr ? va.nr : "planner's"));
    if (va.nr) ::setenv("OCTO_GEMV_NR", va.nr, 1);
    const std::int64_t Kin = 512, N = 24;
    case_builder c;
    auto x = c.buf("x", buffer_kind::io_input, dtype::f32, {1, Kin});
    auto wo = c.buf("wo", buffer_kind::weight, wd, {H, Kin});
    auto r = c.buf("r", buffer_kind::io_input, dtype::f32, {1, H});
    auto h = c.buf("h", buffer_kind::io_output, dtype::f32, {1, H});
    auto nw = c.buf("nw", buffer_kind::weight, dtype::f32, {H});
    auto nw2 = c.buf("nw2", buffer_kind::weight, dtype::f32, {H});
    auto w1 = c.buf("w1", buffer_kind::weight, wd, {N, H});
    auto w2 = c.buf("w2", buffer_kind::weight, wd, {N, H});
    auto w3 = c.buf("w3", buffer_kind::weight, wd, {N, H});
    auto y1 = c.buf("y1", buffer_kind::io_output, dtype::f32, {1, N});
    auto y2 = c.buf("y2", buffer_kind::io_output, dtype::f32, {1, N});
    const auto normed = params({{param_key::K, double(H)}, {param_key::N_tile, double(N)}, {param_key::n_off, 0.0},
                                {param_key::eps, 1e-6}, {param_key::hidden, double(H)}});
    const auto wrote = c.task(opcode::gemv_add, {x, wo, r}, {h},
                              params({{param_key::K, double(Kin)}, {param_key::N_tile, double(H)}, {param_key::n_off, 0.0}}));
    c.task(opcode::rmsnorm_gemv, {h, nw, w1}, {y1}, normed, {{wrote, 1}});
    c.task(opcode::rmsnorm_swiglu, {h, va.same_norm ? nw : nw2, w2, w3}, {y2}, normed, {{wrote, 1}});
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> nwv(static_cast<std::size_t>(H)), nw2v(nwv.size());
    for (auto& v : nwv) v = 1.0f + 0.5f * u(rng);
    for (auto& v : nw2v) v = 1.0f + 0.5f * u(rng);
    std::vector<float> w1q, w2q, w3q;
    const auto wob = random_weight(rng, wd, H, Kin, nullptr), w1b = random_weight(rng, wd, N, H, &w1q), w2b = random_weight(rng, wd, N, H, &w2q),
               w3b = random_weight(rng, wd, N, H, &w3q);
    constexpr int steps = 3;
    std::vector<std::vector<float>> xs(steps), rs(steps);
    for (int st = 0; st < steps; ++st) {
      xs[st].resize(static_cast<std::size_t>(Kin));
      rs[st].resize(static_cast<std::size_t>(H));
      for (auto& v : xs[st]) v = u(rng);
      for (std::int64_t k = 0; k < H; ++k) rs[st][static_cast<std::size_t>(k)] = u(rng) * (k % 61 == 0 ? 16.0f : 1.0f);
    }
    // The plain GEMV_ADD (writer off) on one variant of each block size, and where the norms differ.
    const bool compare = wd == dtype::q8_0 || (wd == dtype::q4_k && va.nr);
    std::vector<std::byte> outs[2][steps][3];  // [writer rounds][step][h, y1, y2]
    std::uint64_t kernels[2] = {0, 0};
    for (int writer = compare ? 0 : 1; writer < 2; ++writer) {
      CAPTURE(writer);
      ::setenv("OCTO_GEMV_X8_WRITER", writer ? "1" : "0", 1);
      ::setenv("OCTO_GEMV_X8", "1", 1);
      vm.load(c.p);  // planned again under this setting
      vm.write_bytes("wo", wob);
      vm.write_bytes("w1", w1b);
      vm.write_bytes("w2", w2b);
      vm.write_bytes("w3", w3b);
      vm.write_bytes("nw", f32_bytes(nwv));
      vm.write_bytes("nw2", f32_bytes(nw2v));
      for (int st = 0; st < steps; ++st) {
        vm.write_bytes("x", f32_bytes(xs[st]));
        vm.write_bytes("r", f32_bytes(rs[st]));
        vm.execute();
        octo_test::check_clean(vm);
        outs[writer][st][0] = vm.read_bytes("h");
        outs[writer][st][1] = vm.read_bytes("y1");
        outs[writer][st][2] = vm.read_bytes("y2");
      }
      kernels[writer] = vm.stats().dispatches;
    }
    if (compare) {
      // Served readers lose their (shared) launch ahead; unserved ones keep theirs.
      CHECK(kernels[1] == kernels[0] - (va.same_norm ? 1 : 0));
      for (int st = 0; st < steps; ++st) CHECK(outs[0][st][0] == outs[1][st][0]);
    }
    for (int st = 0; st < steps; ++st) {
      CAPTURE(st);
      std::vector<float> hv(static_cast<std::size_t>(H));
      REQUIRE(outs[1][st][0].size() == hv.size() * 4);
      std::memcpy(hv.data(), outs[1][st][0].data(), outs[1][st][0].size());
      for (int reader = 0; reader < 2; ++reader) {
        CAPTURE(reader);
        const auto& nv = reader == 1 && !va.same_norm ? nw2v : nwv;
        std::vector<float> v(hv.size());
        double ss = 0.0;
        for (std::size_t k = 0; k < hv.size(); ++k) {
          ss += double(hv[k]) * hv[k];
          v[k] = hv[k] * nv[k];
        }
        const double inv_rms = 1.0 / std::sqrt(ss / double(H) + 1e-6);
        const idot_expect e = idot_contract(v, reader == 0 ? w1q : w2q, N, H);
        const idot_expect e2 = reader == 1 ? idot_contract(v, w3q, N, H) : idot_expect{};
        std::vector<float> got(static_cast<std::size_t>(N));
        REQUIRE(outs[1][st][1 + reader].size() == got.size() * 4);
        std::memcpy(got.data(), outs[1][st][1 + reader].data(), got.size() * 4);
        int bad = 0;
        for (std::int64_t n = 0; n < N; ++n) {
          const auto i = static_cast<std::size_t>(n);
          double want = e.y[i] * inv_rms, bound = e.bound[i] * inv_rms * (1.0 + 1e-5);
          if (reader == 1) {  // silu(g) u, the bound propagated as in the contract case above
            const double up = e2.y[i] * inv_rms, bu = e2.bound[i] * inv_rms * (1.0 + 1e-5);
            const double silu = want / (1.0 + std::exp(-want));
            bound = 1.1 * std::abs(up) * bound + std::abs(silu) * bu + bound * bu * 1.1;
            want = silu * up;
          }
          bound += 1e-6 * std::abs(want);
          if (!(std::abs(double(got[i]) - want) <= bound) && ++bad <= 5)
            CHECK_MESSAGE(false, "column " << n << ": gpu " << got[i] << ", contract " << want << ", bound " << bound);
        }
        CHECK(bad == 0);
      }
    }
    ::unsetenv("OCTO_GEMV_NR");
  }
  ::unsetenv("OCTO_GEMV_X8_WRITER");
  ::unsetenv("OCTO_GEMV_X8");
  ::unsetenv("OCTO_GEMV_IDOT");
}

TEST_CASE("conformance: integer-dot decode GEMV turns a NaN or an infinity in x into non-finite outputs") {
  // The float loops give NaN or an infinity where x holds one; the rounding must not hide it behind a
  // finite step (docs/precision.md). A NaN step stays NaN; an infinite one gives NaN or an infinity
  // (on the H200, infinities: the device's NaN bits round to a nonzero quant).
  ::setenv("OCTO_GEMV_IDOT", "1", 1);
  auto& vm = gpu_fast();
  for (dtype wd : idot_dtypes) {
    if (!reduction_sample(wd) && octo::test::sampled_out("integer-dot formats other than Q5_1 and Q4_K")) continue;
    for (float bad_value : {std::nanf(""), INFINITY}) {
    for (const char* x8 : {"0", "2"}) {
      ::setenv("OCTO_GEMV_X8", x8, 1);
      CAPTURE(octo::ir::name(wd));
      CAPTURE(bad_value);
      CAPTURE(x8);
      const std::int64_t K = 512, N = 8;
      case_builder c;
      auto x = c.buf("x", buffer_kind::io_input, dtype::f32, {1, K});
      auto w = c.buf("w", buffer_kind::weight, wd, {N, K});
      auto y = c.buf("y", buffer_kind::io_output, dtype::f32, {1, N});
      c.task(opcode::gemv_tile, {x, w}, {y}, params({{param_key::K, double(K)}, {param_key::N_tile, double(N)}, {param_key::n_off, 0.0}}));
      std::vector<float> xv(static_cast<std::size_t>(K), 0.25f), wf(static_cast<std::size_t>(N * K), 0.5f);
      xv[77] = bad_value;
      std::vector<std::byte> wb(static_cast<std::size_t>(octo::ir::nbytes(wd, N * K)));
      for (std::int64_t n = 0; n < N; ++n)
        octo::detail::quantize_row(wd, wf.data() + n * K, reinterpret_cast<std::uint8_t*>(wb.data()) + octo::ir::nbytes(wd, n * K), K);
      vm.load(c.p);
      vm.write_bytes("x", f32_bytes(xv));
      vm.write_bytes("w", wb);
      vm.execute();
      std::vector<float> got(static_cast<std::size_t>(N));
      const auto gb = vm.read_bytes("y");
      REQUIRE(gb.size() == got.size() * 4);
      std::memcpy(got.data(), gb.data(), gb.size());
      for (float g : got) CHECK_MESSAGE(!std::isfinite(g), "output " << g);
    }
    }
  }
  ::unsetenv("OCTO_GEMV_X8");
  ::unsetenv("OCTO_GEMV_IDOT");
}

TEST_CASE("conformance: the integer-dot down projection reads x rounded by the RMSNORM_SWIGLU that wrote it") {
  // An RMSNORM_SWIGLU writes the row a that a residual GEMV_ADD (the down projection, no norm) reads as
  // x. With OCTO_GEMV_SWIGLU_ROUND=1 (the default over rows of at most 128 chunks; 1 forces it over the
  // Q8_0 rows of 3072 here) the SWIGLU's workgroups each own one run of 16 outputs
  // (LANES lanes of NR / 2 outputs, gemv.comp ROUND) and round it as it is into the runs the down
  // projection reads (X8), instead of every down workgroup rounding the x elements its chunks take.
  // The same runs either way, so a and the down projection's output are bit-identical to the plain
  // path's (OCTO_GEMV_SWIGLU_ROUND=0) with no launch added where the writer keeps the GEMV's width (over
  // rows of 3072 or more its lanes are 32 wide: a within f32 rounding); and the down projection's output is checked
  // against the contract computed here from the a the device wrote (a rounded per run, the products in
  // double), over every format with an integer loop and three steps of one recording.
  ::setenv("OCTO_GEMV_IDOT", "1", 1);
  std::mt19937_64 rng(seed() ^ 0x5a11ull);
  INFO("seed " << seed() << " (OCTO_CONFORMANCE_SEED replays it)");
  auto& vm = gpu_fast();
  // Every format over rows of 256, and three over rows of at least 3072 (K >= 3072: the writer's lanes
  // are one subgroup of 32 wide, not the GEMV's own width; Q4_K's there take chunks of whole 64-element
  // groups, HALVES = 2, and over rows of 4096 its own width is 64, not 32).
  std::vector<std::pair<dtype, std::int64_t>> variants;
  for (dtype wd : idot_dtypes) variants.emplace_back(wd, 256);
  variants.emplace_back(dtype::q8_0, 3072);
  variants.emplace_back(dtype::q4_k, 4096);
  variants.emplace_back(dtype::q5_k, 4096);
  for (const auto& [wd, H] : variants) {
    if (!reduction_sample(wd) && octo::test::sampled_out("integer-dot formats other than Q5_1 and Q4_K")) continue;
    CAPTURE(octo::ir::name(wd));
    CAPTURE(H);
    // a has 1536 elements (96 runs, 96 SWIGLU workgroups of 16 outputs: the shortest row a writer rounds
    // by default); the down projection 40 outputs.
    const std::int64_t F = 1536, N = 40;
    case_builder c;
    auto x = c.buf("x", buffer_kind::io_input, dtype::f32, {1, H});
    auto nw = c.buf("nw", buffer_kind::weight, dtype::f32, {H});
    auto wg = c.buf("wg", buffer_kind::weight, wd, {F, H});
    auto wu = c.buf("wu", buffer_kind::weight, wd, {F, H});
    auto a = c.buf("a", buffer_kind::io_output, dtype::f32, {1, F});
    auto wd_ = c.buf("wd", buffer_kind::weight, wd, {N, F});
    auto r = c.buf("r", buffer_kind::io_input, dtype::f32, {1, N});
    auto y = c.buf("y", buffer_kind::io_output, dtype::f32, {1, N});
    const auto act = c.task(opcode::rmsnorm_swiglu, {x, nw, wg, wu}, {a},
                            params({{param_key::K, double(H)}, {param_key::N_tile, double(F)}, {param_key::n_off, 0.0},
                                    {param_key::eps, 1e-6}, {param_key::hidden, double(H)}}));
    c.task(opcode::gemv_add, {a, wd_, r}, {y},
           params({{param_key::K, double(F)}, {param_key::N_tile, double(N)}, {param_key::n_off, 0.0}}), {{act, 1}});
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> nwv(static_cast<std::size_t>(H));
    for (auto& v : nwv) v = 1.0f + 0.5f * u(rng);
    std::vector<float> wdq;
    const auto wgb = random_weight(rng, wd, F, H, nullptr), wub = random_weight(rng, wd, F, H, nullptr), wdb = random_weight(rng, wd, N, F, &wdq);
    constexpr int steps = 3;
    std::vector<std::vector<float>> xs(steps), rs(steps);
    for (int st = 0; st < steps; ++st) {
      xs[st].resize(static_cast<std::size_t>(H));
      rs[st].resize(static_cast<std::size_t>(N));
      // Some large elements, so runs of a differ in their steps.
      for (std::int64_t k = 0; k < H; ++k) xs[st][static_cast<std::size_t>(k)] = u(rng) * (k % 37 == 0 ? 8.0f : 1.0f);
      for (auto& v : rs[st]) v = u(rng);
    }
    // The plain path (writer off) on three formats and over rows of 3072, to keep the suite's pipelines
    // few; every variant's writer output is checked against the contract below.
    const bool compare = wd == dtype::q8_0 || wd == dtype::q4_k || wd == dtype::q6_k || H >= 3072;
    std::vector<std::byte> outs[2][steps][2];  // [the SWIGLU rounds][step][a, y]
    std::uint64_t kernels[2] = {0, 0};
    for (int writer = compare ? 0 : 1; writer < 2; ++writer) {
      CAPTURE(writer);
      ::setenv("OCTO_GEMV_SWIGLU_ROUND", writer ? "1" : "0", 1);
      vm.load(c.p);  // planned again under this setting
      vm.write_bytes("wg", wgb);
      vm.write_bytes("wu", wub);
      vm.write_bytes("wd", wdb);
      vm.write_bytes("nw", f32_bytes(nwv));
      for (int st = 0; st < steps; ++st) {
        vm.write_bytes("x", f32_bytes(xs[st]));
        vm.write_bytes("r", f32_bytes(rs[st]));
        vm.execute();
        octo_test::check_clean(vm);
        outs[writer][st][0] = vm.read_bytes("a");
        outs[writer][st][1] = vm.read_bytes("y");
      }
      kernels[writer] = vm.stats().dispatches;
    }
    if (compare) CHECK(kernels[1] == kernels[0]);
    for (int st = 0; st < steps; ++st) {
      CAPTURE(st);
      if (compare && H < 3072) {  // the GEMV's own width: the same sums
        CHECK(outs[0][st][0] == outs[1][st][0]);
        CHECK(outs[0][st][1] == outs[1][st][1]);
      } else if (compare) {  // lanes of 32: the SWIGLU's sums in another order, within f32 rounding of the plain ones
        std::vector<float> a0(static_cast<std::size_t>(F)), a1(a0.size());
        REQUIRE(outs[0][st][0].size() == a0.size() * 4);
        REQUIRE(outs[1][st][0].size() == a1.size() * 4);
        std::memcpy(a0.data(), outs[0][st][0].data(), outs[0][st][0].size());
        std::memcpy(a1.data(), outs[1][st][0].data(), outs[1][st][0].size());
        double num = 0.0, den = 0.0;
        for (std::size_t i = 0; i < a0.size(); ++i) {
          num += (double(a1[i]) - a0[i]) * (double(a1[i]) - a0[i]);
          den += double(a0[i]) * a0[i];
        }
        CHECK(std::sqrt(num / den) < 1e-5);
        CHECK(outs[0][st][0] != outs[1][st][0]);  // the lanes' width did change
      }
      std::vector<float> av(static_cast<std::size_t>(F)), got(static_cast<std::size_t>(N));
      REQUIRE(outs[1][st][0].size() == av.size() * 4);
      REQUIRE(outs[1][st][1].size() == got.size() * 4);
      std::memcpy(av.data(), outs[1][st][0].data(), outs[1][st][0].size());
      std::memcpy(got.data(), outs[1][st][1].data(), outs[1][st][1].size());
      const idot_expect e = idot_contract(av, wdq, N, F);
      int bad = 0;
      for (std::int64_t n = 0; n < N; ++n) {
        const auto i = static_cast<std::size_t>(n);
        const double want = double(rs[st][i]) + e.y[i];
        const double bound = e.bound[i] * (1.0 + 1e-5) + 1e-6 * std::abs(want) + 1e-6;
        if (!(std::abs(double(got[i]) - want) <= bound) && ++bad <= 5)
          CHECK_MESSAGE(false, "column " << n << ": gpu " << got[i] << ", contract " << want << ", bound " << bound);
      }
      CHECK(bad == 0);
    }
  }
  ::unsetenv("OCTO_GEMV_SWIGLU_ROUND");
  ::unsetenv("OCTO_GEMV_IDOT");
}
