// The tiled GEMM kernels (src/vulkan/kernels/gemm.cpp: gemm_coop, gemm_reg at each of its tiles, the
// first 64x64 gemm) against a float64 oracle written here: y = x . dequant(W)^T (+ bias), with the CPU
// dequantizer (tested on its own against independently computed blocks). Shapes cover what a prefill
// meets at the edges: T and N not multiples of any tile, K from 256 to 4096, bias, m_off/n_off windows
// into a wider output (ldy > N_tile); everything outside the window must keep its poison bits.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "octo/detail/element_convert.hpp"
#include "octo/detail/quant_blocks.hpp"
#include "octo/ir/program.hpp"
#include "octo/vm/vulkan_vm.hpp"
#include "gpu_support.hpp"

namespace {

namespace ir = octo::ir;

// `accurate`: the planner's own choice ("" below) is then an f32 kernel on every device.
octo::vm::vulkan_vm& gpu() {
  static octo::vm::vulkan_vm vm([] {
    auto o = octo_test::small_options();
    o.precision = octo::vm::matmul_precision::accurate;
    return o;
  }());
  return vm;
}
// The default precision (`fast`): gemm_coopf where the device has cooperative matrices (docs/precision.md).
octo::vm::vulkan_vm& gpu_fast() {
  static octo::vm::vulkan_vm vm(octo_test::small_options());
  return vm;
}

using octo_test::scoped_env;

struct gemm_case {
  ir::dtype wd;
  std::int64_t T, K, N;         // x [T,K], W [N,K]
  std::int64_t ldy;             // y [T, ldy]
  std::int64_t m_off, m_tile;   // rows written
  std::int64_t n_off, n_tile;   // columns written
  bool bias;
};

/// A dequantized weight as the f16 GEMM input weights_f16.comp makes of it: saturated to f16's range,
/// rounded to f16.
float as_f16(float v) {
  return octo::detail::f16_to_f32(octo::detail::f32_to_f16(std::clamp(v, -65504.0f, 65504.0f)));
}

/// A weight [N, K] of random rows in [-1, 1) stored as `dt`, and the values a kernel must see (its
/// dequantization; rounded to f16 with `f16`, as weights_f16.comp makes them).
struct random_weight {
  std::vector<std::byte> bytes;
  std::vector<float> values;
};
template <class Rng>
random_weight make_weight(ir::dtype dt, std::int64_t N, std::int64_t K, Rng& rng, bool f16 = false) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const auto row_bytes = static_cast<std::size_t>(ir::nbytes(dt, K));
  random_weight w{std::vector<std::byte>(row_bytes * static_cast<std::size_t>(N)),
                  std::vector<float>(static_cast<std::size_t>(N * K))};
  std::vector<float> row(static_cast<std::size_t>(K));
  for (std::int64_t n = 0; n < N; ++n) {
    for (auto& v : row) v = u(rng);
    auto* dst = reinterpret_cast<std::uint8_t*>(w.bytes.data()) + row_bytes * static_cast<std::size_t>(n);
    if (ir::is_block_quantized(dt)) octo::detail::quantize_row(dt, row.data(), dst, K);
    else octo::detail::from_f32(dt, row, std::span<std::byte>(reinterpret_cast<std::byte*>(dst), row_bytes));
    octo::detail::dequantize_row(dt, dst, w.values.data() + n * K, K);
  }
  if (f16)
    for (auto& v : w.values) v = as_f16(v);
  return w;
}

/// Runs one GEMM_TILE on the GPU and checks every element of y against the float64 oracle (over the
/// weights rounded to f16 first with `w_f16`, and x with `x_f16`). The bound on |y - oracle| is
/// rel * sum_k |x_k w_k| (+ 1e-6): the error of the kernel's arithmetic. With runs > 1 the program runs
/// again on the same inputs, each time into a poisoned y, and every run must give the first one's bits.
/// Returns y's bytes.
std::vector<std::byte> check_gemm(const gemm_case& g, double rel, std::uint64_t seed, octo::vm::vulkan_vm& vm = gpu(),
                                  bool w_f16 = false, bool x_f16 = false, int runs = 1) {
  CAPTURE(ir::name(g.wd));
  CAPTURE(g.T);
  CAPTURE(g.K);
  CAPTURE(g.N);
  CAPTURE(g.m_off);
  CAPTURE(g.n_off);
  CAPTURE(g.bias);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);

  ir::program p;
  auto x = p.add_buffer("x", ir::buffer_kind::io_input, ir::dtype::f32, {g.T, g.K});
  auto w = p.add_buffer("w", ir::buffer_kind::weight, g.wd, {g.N, g.K});
  auto b = p.add_buffer("b", ir::buffer_kind::weight, ir::dtype::f32, {g.N});
  auto y = p.add_buffer("y", ir::buffer_kind::io_output, ir::dtype::f32, {g.T, g.ldy});
  ir::task t;
  t.op = ir::opcode::gemm_tile;
  t.inputs = {x, w};
  if (g.bias) t.inputs.push_back(b);
  t.outputs = {y};
  t.out_counter = p.add_counter();
  t.params.set(ir::param_key::M_tile, g.m_tile);
  t.params.set(ir::param_key::m_off, g.m_off);
  t.params.set(ir::param_key::K, g.K);
  t.params.set(ir::param_key::N_tile, g.n_tile);
  t.params.set(ir::param_key::n_off, g.n_off);
  p.add_task(t);

  std::vector<float> xv(static_cast<std::size_t>(g.T * g.K)), bv(static_cast<std::size_t>(g.N));
  for (auto& v : xv) v = u(rng);
  for (auto& v : bv) v = u(rng);
  auto [wb, wf] = make_weight(g.wd, g.N, g.K, rng, w_f16);

  vm.load(p);
  vm.write("x", xv);
  if (x_f16)
    for (auto& v : xv) v = as_f16(v);  // what the kernel multiplies (the oracle's x from here)
  vm.write_bytes("w", wb);
  vm.write("b", bv);
  vm.write_bytes("y", std::vector<std::byte>(static_cast<std::size_t>(g.T * g.ldy * 4), std::byte{0xff}));
  vm.execute();
  octo_test::check_clean(vm);
  const auto got = vm.read_bytes("y");
  REQUIRE(got.size() == static_cast<std::size_t>(g.T * g.ldy * 4));
  for (int r = 1; r < runs; ++r) {
    vm.write_bytes("y", std::vector<std::byte>(static_cast<std::size_t>(g.T * g.ldy * 4), std::byte{0xff}));
    vm.execute();
    CHECK_MESSAGE(vm.read_bytes("y") == got, "run " << r + 1 << " differs from the first");
  }
  CAPTURE(w_f16);
  CAPTURE(x_f16);

  int bad = 0;
  for (std::int64_t m = 0; m < g.T; ++m)
    for (std::int64_t n = 0; n < g.ldy; ++n) {
      std::uint32_t bits;
      std::memcpy(&bits, got.data() + 4 * (m * g.ldy + n), 4);
      const bool inside = m >= g.m_off && m < g.m_off + g.m_tile && n >= g.n_off && n < g.n_off + g.n_tile;
      if (!inside) {
        if (bits != 0xffffffffu && ++bad <= 5) {
          INFO("y[" << m << "," << n << "] outside the window was written");
          CHECK(bits == 0xffffffffu);
        }
        continue;
      }
      double want = g.bias ? double(bv[static_cast<std::size_t>(n)]) : 0.0, mag = 0.0;
      for (std::int64_t k = 0; k < g.K; ++k) {
        const double prod = double(xv[static_cast<std::size_t>(m * g.K + k)]) * double(wf[static_cast<std::size_t>(n * g.K + k)]);
        want += prod;
        mag += std::abs(prod);
      }
      float gv;
      std::memcpy(&gv, &bits, 4);
      const double bound = rel * mag + 1e-6;
      const double err = std::abs(double(gv) - want);
      if (!(err <= bound) && ++bad <= 5) {
        INFO("y[" << m << "," << n << "] = " << gv << ", oracle " << want << ", bound " << bound);
        CHECK(err <= bound);
      }
    }
  CHECK(bad == 0);
  return got;
}

const ir::dtype all_dtypes[] = {ir::dtype::f32,  ir::dtype::f16,  ir::dtype::bf16, ir::dtype::q8_0, ir::dtype::q4_0,
                                ir::dtype::q4_1, ir::dtype::q5_0, ir::dtype::q5_1, ir::dtype::q2_k, ir::dtype::q3_k,
                                ir::dtype::q4_k, ir::dtype::q5_k, ir::dtype::q6_k, ir::dtype::iq4_nl, ir::dtype::iq4_xs};

// Error bounds relative to sum |x w|: f32 products and sums (SIMT) leave a few ulps; the cooperative
// kernel's f16 high + low parts keep ~22 bits of each factor; plain f16 factors (coopf) 11 bits.
constexpr double rel_f32 = 2e-6, rel_split = 2e-5, rel_f16 = 2e-3;

/// A GEMM_TILE task y[T, N] = x[T, K] . w[N, K]^T over every row and column, added to `p`.
void add_whole_gemm(ir::program& p, std::int32_t x, std::int32_t w, std::int32_t y, std::int64_t T, std::int64_t K,
                    std::int64_t N) {
  ir::task t;
  t.op = ir::opcode::gemm_tile;
  t.inputs = {x, w};
  t.outputs = {y};
  t.out_counter = p.add_counter();
  t.params.set(ir::param_key::M_tile, T).set(ir::param_key::m_off, 0).set(ir::param_key::K, K);
  t.params.set(ir::param_key::N_tile, N).set(ir::param_key::n_off, 0);
  p.add_task(t);
}

/// y[T, N] against x . wf^T in float64, within rel * sum |x_k w_k| + 1e-6 everywhere.
void check_against_oracle(const std::vector<float>& y, const std::vector<float>& xv, const std::vector<float>& wf,
                          std::int64_t T, std::int64_t K, std::int64_t N, double rel) {
  int bad = 0;
  for (std::int64_t m = 0; m < T; ++m)
    for (std::int64_t n = 0; n < N; ++n) {
      double want = 0.0, mag = 0.0;
      for (std::int64_t k = 0; k < K; ++k) {
        const double prod = double(xv[static_cast<std::size_t>(m * K + k)]) * double(wf[static_cast<std::size_t>(n * K + k)]);
        want += prod;
        mag += std::abs(prod);
      }
      const double got = y[static_cast<std::size_t>(m * N + n)];
      if (!(std::abs(got - want) <= rel * mag + 1e-6) && ++bad <= 3) {
        INFO("y[" << m << "," << n << "] = " << got << ", oracle " << want);
        CHECK(std::abs(got - want) <= rel * mag + 1e-6);
      }
    }
  CHECK(bad == 0);
}


std::uint64_t seed() {
  static const std::uint64_t s = [] {
    if (const char* e = std::getenv("OCTO_CONFORMANCE_SEED")) return std::uint64_t(std::strtoull(e, nullptr, 10));
    return std::uint64_t(std::random_device{}());
  }();
  return s;
}

}  // namespace

TEST_CASE("tiled GEMM: every weight dtype, every kernel, T and N off the tile, a window into a wider output") {
  INFO("seed " << seed() << " (OCTO_CONFORMANCE_SEED replays it)");
  for (const char* kernel : {"", "reg", "old", "coop", "coopf"}) {
    const std::string k = kernel;
    if ((k == "coop" || k == "coopf") && !gpu().device().cooperative_matrix_nv) continue;
    scoped_env e("OCTO_GEMM_KERNEL", kernel);
    CAPTURE(k);
    for (ir::dtype wd : all_dtypes) {
      // The planner's choice, gemm_reg and gemm are f32 kernels; the cooperative ones never take F32
      // weights (the planner falls back to gemm_reg).
      const bool coop = (k == "coop" || k == "coopf") && wd != ir::dtype::f32;
      const double rel = !coop ? rel_f32 : (k == "coop" ? rel_split : rel_f16);
      // x [37, 256], W [75, 256]: rows [3, 36) and columns [5, 72) of a y with 80 columns.
      check_gemm({wd, 37, 256, 75, 80, 3, 33, 5, 67, true}, rel, seed() + static_cast<std::uint64_t>(wd));
    }
  }
}

TEST_CASE("tiled GEMM: K from 256 to 4096") {
  INFO("seed " << seed() << " (OCTO_CONFORMANCE_SEED replays it)");
  for (const char* kernel : {"", "reg"}) {
    scoped_env e("OCTO_GEMM_KERNEL", kernel);
    CAPTURE(std::string(kernel));
    for (ir::dtype wd : {ir::dtype::f16, ir::dtype::q8_0, ir::dtype::q4_k, ir::dtype::q6_k})
      for (std::int64_t K : {256, 1024, 4096}) {
        const double rel = rel_f32;
        check_gemm({wd, 20, K, 40, 40, 0, 20, 0, 40, false}, rel, seed() + static_cast<std::uint64_t>(K));
      }
  }
}

TEST_CASE("tiled GEMM: IQ4_NL / IQ4_XS with K an odd number of blocks, every kernel") {
  INFO("seed " << seed() << " (OCTO_CONFORMANCE_SEED replays it)");
  for (const char* kernel : {"", "reg", "old", "coop", "coopf"}) {
    const std::string k = kernel;
    if ((k == "coop" || k == "coopf") && !gpu().device().cooperative_matrix_nv) continue;
    scoped_env e("OCTO_GEMM_KERNEL", kernel);
    CAPTURE(k);
    for (ir::dtype wd : {ir::dtype::iq4_nl, ir::dtype::iq4_xs}) {
      const double rel = k == "coop" ? rel_split : (k == "coopf" ? rel_f16 : rel_f32);
      const std::int64_t K = wd == ir::dtype::iq4_nl ? 32 * 37 : 256 * 5;
      // 45 rows; W has 77 rows, of which [2, 75) go to a y 83 columns wide: partial tiles both ways.
      check_gemm({wd, 45, K, 77, 83, 0, 45, 2, 73, true}, rel, seed() + static_cast<std::uint64_t>(wd));
    }
  }
}

TEST_CASE("tiled GEMM: each tile of the register-blocked and cooperative kernels (both precisions), edges in both directions") {
  INFO("seed " << seed() << " (OCTO_CONFORMANCE_SEED replays it)");
  for (const char* kernel : {"reg", "coop", "coopf"}) {
    const std::string k = kernel;
    if (k != "reg" && !gpu().device().cooperative_matrix_nv) continue;
    scoped_env e("OCTO_GEMM_KERNEL", kernel);
    for (const char* tile : {"128x128", "128x64", "64x128", "64x64"}) {
      if (k == "reg" && std::string(tile) == "128x128") continue;  // not one of gemm_reg's tiles
      scoped_env t("OCTO_GEMM_TILE", tile);
      CAPTURE(std::string(kernel));
      CAPTURE(std::string(tile));
      for (ir::dtype wd : {ir::dtype::f16, ir::dtype::q4_0}) {
        const double rel = k == "reg" ? rel_f32 : (k == "coop" ? rel_split : rel_f16);
        // 150 rows and 200 columns (from column 3): a partial tile on both edges for every tile size.
        check_gemm({wd, 150, 256, 203, 203, 0, 150, 3, 200, wd == ir::dtype::q4_0}, rel,
                   seed() + static_cast<std::uint64_t>(wd));
      }
    }
  }
}

TEST_CASE("tiled GEMM: the cooperative kernels' double-buffered K loop, every configuration, K steps of 32 and 64") {
  INFO("seed " << seed() << " (OCTO_CONFORMANCE_SEED replays it)");
  if (!gpu().device().cooperative_matrix_nv) {
    MESSAGE("no cooperative matrices on " << gpu().device().name << ": the SIMT kernels' cases above cover it");
    return;
  }
  // src/vulkan/kernels/gemm.cpp's coop_configs and coop_narrow (wg, subgroups along M, fragments along M
  // and N).
  for (const char* config : {"256,2,4,4", "256,4,2,4", "256,2,2,4", "256,2,2,2", "128,2,2,4", "128,2,1,2"})
    for (const char* kernel : {"coop", "coopf"})
      for (const char* bk : {"32", "64"}) {
        const std::string k = kernel;
        scoped_env e("OCTO_GEMM_KERNEL", kernel);
        scoped_env c("OCTO_GEMM_COOP", config);
        scoped_env s("OCTO_GEMM_BK", bk);
        CAPTURE(k);
        CAPTURE(std::string(config));
        CAPTURE(std::string(bk));
        for (ir::dtype wd : {ir::dtype::f16, ir::dtype::q8_0})
          // 1, 3, 6 and 18 steps of 32; 3 and 9 of 64 (K = 32 and 96 take steps of 32 whatever is asked).
          for (std::int64_t K : {32, 96, 192, 576}) {
            const double rel = k == "coop" ? rel_split : rel_f16;
            // 130 rows, 131 columns: a partial tile on both edges for every tile size.
            check_gemm({wd, 130, K, 131, 131, 0, 130, 0, 131, wd == ir::dtype::q8_0}, rel,
                       seed() + static_cast<std::uint64_t>(K));
          }
      }
}

TEST_CASE("tiled GEMM: the cooperative kernel's K split over workgroups, the last adding the splits in order") {
  INFO("seed " << seed() << " (OCTO_CONFORMANCE_SEED replays it)");
  if (!gpu_fast().device().cooperative_matrix_nv) {
    MESSAGE("no cooperative matrices on " << gpu_fast().device().name
                                          << ": the K split (gemm_coopf, KSPLIT) runs on the card's calls only");
    return;
  }
  // Small grids (a few 128 x 128 tiles) with the split forced: 2, 3, 5 and 8 splits of 32 steps of 32
  // (K = 1024; the last split shorter where 32 does not divide), a window of rows and columns, bias;
  // three runs, each the first's bits (the arrival counters back at 0, the splits added in one order).
  for (const char* splits : {"2", "3", "5", "8"})
    for (ir::dtype wd : {ir::dtype::f16, ir::dtype::q8_0, ir::dtype::q4_k}) {
      scoped_env e("OCTO_GEMM_SPLITK", splits);
      CAPTURE(std::string(splits));
      check_gemm({wd, 300, 1024, 150, 160, 7, 290, 7, 143, true}, rel_f16, seed() + static_cast<std::uint64_t>(wd),
                 gpu_fast(), wd != ir::dtype::f16, true, 3);
    }
  // The default's own choice on the 1.5B's down projection shape (48 tiles: split in 2).
  check_gemm({ir::dtype::q8_0, 512, 8960, 1536, 1536, 0, 512, 0, 1536, false}, rel_f16, seed(), gpu_fast(), true, true, 2);
}

TEST_CASE("tiled GEMM at the default precision: f16 factors on tensor cores where the device has them, within the contract's kernel bound") {
  INFO("seed " << seed() << " (OCTO_CONFORMANCE_SEED replays it)");
  // docs/precision.md: each output within 2e-3 of sum |x w| of the f64 result (f16-rounded factors,
  // f32 sums); a device without cooperative matrices runs the f32 kernels at their own bound.
  const bool coop = gpu_fast().device().cooperative_matrix_nv;
  MESSAGE("default GEMM precision on " << gpu_fast().device().name << ": "
                                       << std::string(coop ? "f16 factors (gemm_coopf)" : "f32 (SIMT)"));
  for (ir::dtype wd : all_dtypes) {
    const double rel = coop && wd != ir::dtype::f32 ? rel_f16 : rel_f32;
    check_gemm({wd, 37, 256, 75, 80, 3, 33, 5, 67, true}, rel, seed() + static_cast<std::uint64_t>(wd), gpu_fast());
  }
  // prefill-like: 200 rows, K = 1024 and 4096, a partial tile on both edges
  for (ir::dtype wd : {ir::dtype::f16, ir::dtype::q8_0, ir::dtype::q4_k, ir::dtype::q6_k})
    for (std::int64_t K : {1024, 4096}) {
      const double rel = coop ? rel_f16 : rel_f32;
      check_gemm({wd, 200, K, 136, 136, 0, 200, 0, 136, wd == ir::dtype::q8_0}, rel,
                 seed() + static_cast<std::uint64_t>(K), gpu_fast());
    }
}

TEST_CASE("tiled GEMM: a quantized weight dequantized once to f16 (weights_f16), then the F16 kernel, every dtype") {
  INFO("seed " << seed() << " (OCTO_CONFORMANCE_SEED replays it)");
  // On every device: the two passes into the SIMT kernel (OCTO_GEMM_DEQUANT=1 with gemm_reg): exact
  // f32 arithmetic over the f16-rounded weights, so the oracle rounds them too and the bound stays f32's.
  {
    scoped_env e("OCTO_GEMM_KERNEL", "reg");
    scoped_env d("OCTO_GEMM_DEQUANT", "1");
    for (ir::dtype wd : all_dtypes) {
      if (wd == ir::dtype::f32 || wd == ir::dtype::f16) continue;  // read as stored: no weights_f16 module
      check_gemm({wd, 37, 256, 75, 80, 3, 33, 5, 67, true}, rel_f32, seed() + static_cast<std::uint64_t>(wd), gpu(), true);
    }
  }
  if (!gpu_fast().device().cooperative_matrix_nv) {
    MESSAGE("no cooperative matrices on " << gpu_fast().device().name
                                          << ": the default's two passes (gemm_coopf_f16) run on the card's calls only");
    return;
  }
  // With tensor cores, the default from 256 rows: the same bits as gemm_coopf dequantizing in its tiles.
  for (ir::dtype wd : {ir::dtype::q8_0, ir::dtype::q4_k, ir::dtype::q6_k, ir::dtype::q5_0, ir::dtype::iq4_xs, ir::dtype::bf16}) {
    const gemm_case g{wd, 300, 512, 150, 160, 0, 300, 7, 143, wd == ir::dtype::q8_0};
    std::vector<std::byte> once, inside;
    {
      scoped_env d("OCTO_GEMM_DEQUANT", "");
      once = check_gemm(g, rel_f16, seed() + static_cast<std::uint64_t>(wd), gpu_fast(), true);
    }
    {
      scoped_env d("OCTO_GEMM_DEQUANT", "0");
      inside = check_gemm(g, rel_f16, seed() + static_cast<std::uint64_t>(wd), gpu_fast());
    }
    CHECK_MESSAGE(once == inside, ir::name(wd) << ": dequantized once and in the tiles differ");
  }
}

TEST_CASE("tiled GEMM: x's rows rounded once to f16 (rows_f16_f32), then the kernel's X16 mode, every dtype") {
  INFO("seed " << seed() << " (OCTO_CONFORMANCE_SEED replays it)");
  // On every device: the two passes into the SIMT kernel (OCTO_GEMM_X16=1 with gemm_reg): f32 arithmetic
  // over the f16-rounded x, so the oracle rounds x too and the bound stays f32's. A window of rows from
  // m_off = 3 (the rounding launch starts at the task's first row) and one from 0.
  {
    scoped_env e("OCTO_GEMM_KERNEL", "reg");
    scoped_env x("OCTO_GEMM_X16", "1");
    for (ir::dtype wd : all_dtypes)
      check_gemm({wd, 37, 256, 75, 80, 3, 33, 5, 67, true}, rel_f32, seed() + static_cast<std::uint64_t>(wd), gpu(),
                 false, true);
    check_gemm({ir::dtype::q4_k, 64, 512, 40, 40, 0, 64, 0, 40, false}, rel_f32, seed(), gpu(), false, true);
  }
  if (!gpu_fast().device().cooperative_matrix_nv) {
    MESSAGE("no cooperative matrices on " << gpu_fast().device().name
                                          << ": the default's X16 mode (gemm_coopf) runs on the card's calls only");
    return;
  }
  // With tensor cores, the default from 256 rows (X16 and the three-stage K loop): the same bits as
  // gemm_coopf rounding x in its tiles, over an even and an odd count of K steps (288: 9 of 32; 576: 9
  // of 64).
  const std::pair<ir::dtype, std::int64_t> cases[] = {{ir::dtype::f16, 512}, {ir::dtype::q8_0, 512}, {ir::dtype::q4_k, 512},
                                                      {ir::dtype::bf16, 512}, {ir::dtype::f16, 288}, {ir::dtype::q8_0, 576}};
  for (auto [wd, K] : cases) {
    const gemm_case g{wd, 300, K, 150, 160, 7, 290, 7, 143, wd == ir::dtype::q8_0};
    std::vector<std::byte> once, inside;
    {
      scoped_env x("OCTO_GEMM_X16", "");
      once = check_gemm(g, rel_f16, seed() + static_cast<std::uint64_t>(wd), gpu_fast(), wd != ir::dtype::f16, true);
    }
    {
      scoped_env x("OCTO_GEMM_X16", "0");
      inside = check_gemm(g, rel_f16, seed() + static_cast<std::uint64_t>(wd), gpu_fast(), wd != ir::dtype::f16, true);
    }
    CHECK_MESSAGE(once == inside, ir::name(wd) << ": x rounded once and in the tiles differ");
  }
}

TEST_CASE("tiled GEMM: GEMMs over the same rows of x share one rounding launch and its scratch") {
  INFO("seed " << seed() << " (OCTO_CONFORMANCE_SEED replays it)");
  // Q, K and V of a prefill: x [300, 256] times three weights of different heights and dtypes, independent
  // tasks (one barrier group). The X16 mode's rounding of x is keyed by x's rows: one launch and one part
  // of the scratch for all three; a fourth GEMM over rows 20 .. 299 of x gets its own.
  std::mt19937_64 rng(seed());
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const std::int64_t T = 300, K = 256;
  const ir::dtype dts[] = {ir::dtype::f16, ir::dtype::q8_0, ir::dtype::q4_k, ir::dtype::f16};
  const std::int64_t Ns[] = {96, 160, 64, 32};
  const bool coop = gpu_fast().device().cooperative_matrix_nv;
  scoped_env e("OCTO_GEMM_KERNEL", coop ? "coopf" : "reg");
  scoped_env x16("OCTO_GEMM_X16", "1");
  ir::program p;
  auto x = p.add_buffer("x", ir::buffer_kind::io_input, ir::dtype::f32, {T, K});
  std::vector<float> xv(static_cast<std::size_t>(T * K));
  for (auto& v : xv) v = u(rng);
  std::vector<std::vector<std::byte>> wbytes(4);
  std::vector<std::vector<float>> wf(4);
  for (int i = 0; i < 4; ++i) {
    auto w = p.add_buffer("w" + std::to_string(i), ir::buffer_kind::weight, dts[i], {Ns[i], K});
    auto y = p.add_buffer("y" + std::to_string(i), ir::buffer_kind::io_output, ir::dtype::f32, {T, Ns[i]});
    const std::int64_t m_off = i < 3 ? 0 : 20;
    ir::task t;
    t.op = ir::opcode::gemm_tile;
    t.inputs = {x, w};
    t.outputs = {y};
    t.out_counter = p.add_counter();
    t.params.set(ir::param_key::M_tile, T - m_off).set(ir::param_key::m_off, m_off).set(ir::param_key::K, K);
    t.params.set(ir::param_key::N_tile, Ns[i]).set(ir::param_key::n_off, 0);
    p.add_task(t);
    auto rw = make_weight(dts[i], Ns[i], K, rng, coop);
    wbytes[i] = std::move(rw.bytes);
    wf[i] = std::move(rw.values);
  }
  auto& vm = coop ? gpu_fast() : gpu();
  vm.load(p);
  vm.write("x", xv);
  for (int i = 0; i < 4; ++i) vm.write_bytes("w" + std::to_string(i), wbytes[i]);
  vm.execute();
  octo_test::check_clean(vm);
  for (auto& v : xv) v = as_f16(v);  // what the kernels multiply
  const double rel = coop ? rel_f16 : rel_f32;
  for (int i = 0; i < 3; ++i) {
    CAPTURE(i);
    check_against_oracle(vm.read_f32("y" + std::to_string(i)), xv, wf[i], T, K, Ns[i], rel);
  }
  const auto y3 = vm.read_f32("y3");
  check_against_oracle(std::vector<float>(y3.begin() + 20 * Ns[3], y3.end()), std::vector<float>(xv.begin() + 20 * K, xv.end()),
                       wf[3], T - 20, K, Ns[3], rel);
  // Four GEMMs and two rounding launches (rows 0 .. 299 for three of them; rows 20 .. 299).
  CHECK(vm.stats().task_dispatches == 4);
  CHECK(vm.stats().dispatches == 4 + 2);
}

TEST_CASE("tiled GEMM: weights dequantized once share one scratch: three GEMMs with no barrier between them") {
  INFO("seed " << seed() << " (OCTO_CONFORMANCE_SEED replays it)");
  // x [64, 256] times three weights of different dtypes and heights, independent tasks (one barrier
  // group); each dequantizes into the same scratch, so the recorder must keep them apart.
  std::mt19937_64 rng(seed());
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const std::int64_t T = 64, K = 256;
  const ir::dtype dts[] = {ir::dtype::q4_k, ir::dtype::q6_k, ir::dtype::q8_0};
  const std::int64_t Ns[] = {96, 160, 64};
  ir::program p;
  auto x = p.add_buffer("x", ir::buffer_kind::io_input, ir::dtype::f32, {T, K});
  std::vector<float> xv(static_cast<std::size_t>(T * K));
  for (auto& v : xv) v = u(rng);
  std::vector<std::vector<std::byte>> wbytes(3);
  std::vector<std::vector<float>> wf(3);
  for (int i = 0; i < 3; ++i) {
    auto w = p.add_buffer("w" + std::to_string(i), ir::buffer_kind::weight, dts[i], {Ns[i], K});
    auto y = p.add_buffer("y" + std::to_string(i), ir::buffer_kind::io_output, ir::dtype::f32, {T, Ns[i]});
    add_whole_gemm(p, x, w, y, T, K, Ns[i]);
    auto rw = make_weight(dts[i], Ns[i], K, rng, true);
    wbytes[i] = std::move(rw.bytes);
    wf[i] = std::move(rw.values);
  }
  const bool coop = gpu_fast().device().cooperative_matrix_nv;
  scoped_env e("OCTO_GEMM_KERNEL", coop ? "coopf" : "reg");
  scoped_env d("OCTO_GEMM_DEQUANT", "1");
  scoped_env c("OCTO_WEIGHT_COPIES", "0");  // the scratch, not the weights' f16 copies
  auto& vm = coop ? gpu_fast() : gpu();
  vm.load(p);
  vm.write("x", xv);
  for (int i = 0; i < 3; ++i) vm.write_bytes("w" + std::to_string(i), wbytes[i]);
  vm.execute();
  octo_test::check_clean(vm);
  const double rel = coop ? rel_f16 : rel_f32;
  for (int i = 0; i < 3; ++i) {
    CAPTURE(i);
    check_against_oracle(vm.read_f32("y" + std::to_string(i)), xv, wf[i], T, K, Ns[i], rel);
  }
}

TEST_CASE("tiled GEMM: a quantized weight's f16 copy: the scratch's bits, no pass per run, filled after each write") {
  INFO("seed " << seed() << " (OCTO_CONFORMANCE_SEED replays it)");
  // OCTO_GEMM_DEQUANT=1 takes the f16 path at any row count, into gemm_reg where the device has no
  // cooperative matrices (lavapipe: f32 arithmetic over the f16-rounded weights).
  const bool coop = gpu_fast().device().cooperative_matrix_nv;
  scoped_env e("OCTO_GEMM_KERNEL", coop ? "coopf" : "reg");
  scoped_env d("OCTO_GEMM_DEQUANT", "1");
  const double rel = coop ? rel_f16 : rel_f32;
  const auto options = [&] {
    auto o = octo_test::small_options();
    if (!coop) o.precision = octo::vm::matmul_precision::accurate;
    return o;
  };
  for (ir::dtype wd : {ir::dtype::q4_k, ir::dtype::q8_0, ir::dtype::q6_k}) {
    const gemm_case g{wd, 37, 256, 75, 80, 3, 33, 5, 67, true};
    std::vector<std::byte> scratch, copy;
    std::uint64_t scratch_dispatches = 0, copy_dispatches = 0;
    {
      scoped_env c("OCTO_WEIGHT_COPIES", "0");
      octo::vm::vulkan_vm vm(options());
      scratch = check_gemm(g, rel, seed() + static_cast<std::uint64_t>(wd), vm, true);
      scratch_dispatches = vm.stats().dispatches;
      CHECK(vm.stats().weight_copies == 0);
    }
    {
      scoped_env c("OCTO_WEIGHT_COPIES", "");  // the default: where a quarter of the free memory covers it
      octo::vm::vulkan_vm vm(options());
      copy = check_gemm(g, rel, seed() + static_cast<std::uint64_t>(wd), vm, true);
      copy_dispatches = vm.stats().dispatches;
      CHECK(vm.stats().weight_copies == 1);
      CHECK(vm.stats().weight_copy_bytes == 75u * 256u * 2u);  // every row of the weight, as f16
    }
    CAPTURE(ir::name(wd));
    CHECK(copy == scratch);
    // The program records the GEMM alone: the copy was filled once, outside it.
    CHECK(scratch_dispatches == 2);
    CHECK(copy_dispatches == 1);
  }

  // A weight written again after a run: the next run reads the new values (the copy is filled again).
  std::mt19937_64 rng(seed());
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const std::int64_t T = 40, K = 512, N = 72;
  ir::program p;
  auto x = p.add_buffer("x", ir::buffer_kind::io_input, ir::dtype::f32, {T, K});
  auto w = p.add_buffer("w", ir::buffer_kind::weight, ir::dtype::q4_k, {N, K});
  auto y = p.add_buffer("y", ir::buffer_kind::io_output, ir::dtype::f32, {T, N});
  add_whole_gemm(p, x, w, y, T, K, N);
  std::vector<float> xv(static_cast<std::size_t>(T * K));
  for (auto& v : xv) v = u(rng);
  // Program 0 reads the weight as one row (a GEMV: no copy); the GEMM program added after the weight
  // was first written makes the copy then and fills it from the weight (the later writes refill it as
  // they happen), so no run fills it.
  ir::program one;
  {
    auto x1 = one.add_buffer("x1", ir::buffer_kind::io_input, ir::dtype::f32, {1, K});
    auto w1 = one.add_buffer("w", ir::buffer_kind::weight, ir::dtype::q4_k, {N, K});
    auto y1 = one.add_buffer("y1", ir::buffer_kind::io_output, ir::dtype::f32, {1, N});
    ir::task g;
    g.op = ir::opcode::gemv_tile;
    g.inputs = {x1, w1};
    g.outputs = {y1};
    g.out_counter = one.add_counter();
    g.params.set(ir::param_key::K, K).set(ir::param_key::N_tile, N).set(ir::param_key::n_off, 0);
    one.add_task(g);
  }
  octo::vm::vulkan_vm vm(options());
  vm.load(one);
  octo::vm::program_id gemm = 0;
  std::uint64_t first_add = 0;
  std::vector<float> last;
  for (int round = 0; round < 3; ++round) {
    CAPTURE(round);
    auto [wb, wf] = make_weight(ir::dtype::q4_k, N, K, rng, true);
    vm.write_bytes("w", wb);
    if (round == 0) {
      const std::uint64_t before = vm.stats().transfers;
      gemm = vm.add_program(p);
      first_add = vm.stats().transfers - before;  // its zeroing, the copy's fill
      REQUIRE(vm.stats(gemm).dispatches == 1);  // the GEMM alone, on the copy
      vm.write_bytes(gemm, "x", std::as_bytes(std::span<const float>(xv)));
    }
    const std::uint64_t transfers = vm.stats().transfers;  // the one-shot submits (uploads, fills)
    vm.execute(gemm);
    CHECK(vm.stats().transfers == transfers);
    if (round == 2) vm.execute(gemm);  // runs without a write between them read the same copy
    octo_test::check_clean(vm);
    last = vm.read_f32(gemm, "y");
    check_against_oracle(last, xv, wf, T, K, N, rel);
  }
  // A weight never written: its copy is filled before the first run (from the zeroed weight).
  {
    octo::vm::vulkan_vm fresh(options());
    fresh.load(p);
    fresh.write("x", xv);
    const std::uint64_t transfers = fresh.stats().transfers;
    fresh.execute();
    CHECK(fresh.stats().transfers == transfers + 1);
    const auto zeros = fresh.read_f32("y");
    CHECK(std::all_of(zeros.begin(), zeros.end(), [](float v) { return v == 0.0f; }));
  }
  // The copy lives as long as its weight, not its program: a GEMM program added again (a prefill of
  // another length, in the runtime) finds it made and filled.
  vm.remove_program(gemm);
  const std::uint64_t before = vm.stats().transfers;
  const auto again = vm.add_program(p);
  CHECK(vm.stats().transfers - before == first_add - 1);
  vm.write_bytes(again, "x", std::as_bytes(std::span<const float>(xv)));
  vm.execute(again);
  CHECK(vm.read_f32(again, "y") == last);  // the last round's weights, read from the same copy
}

TEST_CASE("tiled GEMM: no room for the shared scratch: the weight is dequantized in the tiles, as without it") {
  INFO("seed " << seed() << " (OCTO_CONFORMANCE_SEED replays it)");
  // The two passes forced into gemm_reg (any device). The scratch is made only where a quarter of the
  // free budget covers it (src/vulkan/vm_recording.cpp); under a budget that leaves twice its size free
  // the VM keeps the direct kernel: exact f32 against the weights as dequantized (an f16 rounding of
  // them would miss the f32 bound by far), and no more memory than without the two passes.
  scoped_env e("OCTO_GEMM_KERNEL", "reg");
  const gemm_case g{ir::dtype::q4_k, 37, 256, 75, 80, 3, 33, 5, 67, true};
  const std::uint64_t ask = 67u * 256u * 2u;  // n_tile rows of K halves
  std::uint64_t without = 0, with = 0;
  {
    scoped_env d("OCTO_GEMM_DEQUANT", "0");
    octo::vm::vulkan_vm vm(octo_test::small_options());
    check_gemm(g, rel_f32, seed(), vm);
    without = vm.stats().memory_in_use;
  }
  {
    scoped_env d("OCTO_GEMM_DEQUANT", "1");
    octo::vm::vulkan_vm vm(octo_test::small_options());
    check_gemm(g, rel_f32, seed(), vm, /*w_f16=*/true);
    with = vm.stats().memory_in_use;
  }
  CHECK(with > without);  // the scratch, where there is room
  {
    scoped_env d("OCTO_GEMM_DEQUANT", "1");
    auto o = octo_test::small_options();
    o.memory_budget = without + 2 * ask;
    octo::vm::vulkan_vm vm(o);
    check_gemm(g, rel_f32, seed(), vm, /*w_f16=*/false);
    CHECK(vm.stats().memory_in_use == without);
  }
}
