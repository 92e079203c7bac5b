// Conformance of the fused decode ops (tests/gpu/conformance.cpp says how cases run): gemv.comp's FUSE
// modes over every weight format against the composition of the plain ops, and the per-head norm + RoPE.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "conformance_support.hpp"

namespace {

// The decode GEMVs' tolerance: f32 sums of K products, so the absolute error grows with K. An
// RMSNORM_SWIGLU's silu(g) * u carries g's error times u and u's times silu(g), and these cases' g and u
// are about sqrt(K / 3) in size (a row of RMS-normalized x times a norm weight in [0.5, 1.5] against
// weights in [-1, 1]), so its absolute error is that much larger: over 4099 outputs at K = 1536 one
// of them had been 1.35e-3 off (at |y| 0.43) under the GEMV's own 1.29e-3 (seed 2753623837).
tolerance gemv_tolerance(opcode op, std::int64_t K) {
  const double atol = 2e-4 * double(K) / 256.0;
  return {op == opcode::rmsnorm_swiglu ? atol * std::sqrt(double(K) / 3.0) : atol, 2e-4};
}

}  // namespace

TEST_CASE("conformance: fused GEMVs (RMSNORM_GEMV, GEMV_ADD, RMSNORM_SWIGLU), every weight dtype, tiles, odd K") {
  // gemv.comp's FUSE modes over every format's loop: the norm (x scaled on load, the inverse RMS of the
  // row's sum of squares reduced beside the dot products), the residual epilogue and the
  // gate|up pairing, against the composition of the plain ops (include/octo/semantics/fused.hpp). Two tiles
  // leave columns 0, 1 and N-1 untouched (still poisoned).
  // Subgroup reductions on every format, the shared-memory one and three rows on reduction_sample()'s; the
  // opt-in x-through-shared-tiles mode (OCTO_GEMV_XS) is left to the plain GEMV cases: every (format, mode,
  // rows) compiles a pipeline cold on lavapipe (CI's long pole).
  // The shared-memory mode also takes 4 weight rows a workgroup (OCTO_GEMV_NR=4: the planner's choice for
  // wide outputs; these narrow ones take 2 at the K used here).
  for (int mode : {0, 1}) {
    if (mode == 1) {
      ::setenv("OCTO_KERNELS_NO_SUBGROUP", "1", 1);
      ::setenv("OCTO_GEMV_NR", "4", 1);
    }
    CAPTURE(mode);
    for (dtype wd : weight_dtypes) {
      if (mode == 1 && !reduction_sample(wd)) continue;
      const std::int64_t blk = octo::ir::layout(wd).block_elems;
      const std::int64_t k_odd = blk == 256 ? 1280 : 1120;  // not a multiple of 256 for the 32-element formats
      for (auto [K, R] : {std::pair<std::int64_t, std::int64_t>{k_odd, 1}, {512, 3}}) {
        // Decode steps run these at one row; several rows a workgroup on one format per loop family.
        if (R != 1 && !reduction_sample(wd)) continue;
        for (opcode op : {opcode::rmsnorm_gemv, opcode::gemv_add, opcode::rmsnorm_swiglu}) {
          for (bool bias : {false, true}) {
            if (bias && op != opcode::rmsnorm_gemv) continue;
            CAPTURE(octo::ir::name(wd));
            CAPTURE(octo::ir::name(op));
            CAPTURE(K);
            CAPTURE(R);
            CAPTURE(bias);
            const std::int64_t N = 27;
            case_builder c;
            auto x = c.buf("x", buffer_kind::io_input, dtype::f32, {R, K});
            auto nw = c.buf("norm_w", buffer_kind::weight, dtype::f32, {K});
            auto w = c.buf("w", buffer_kind::weight, wd, {N, K});
            auto w2 = c.buf("w_up", buffer_kind::weight, wd, {N, K});
            auto b = c.buf("b", buffer_kind::weight, dtype::f32, {N});
            auto r = c.buf("r", buffer_kind::io_input, dtype::f32, {R, N});
            auto y = c.buf("y", buffer_kind::io_output, dtype::f32, {R, N});
            c.range[nw] = {0.5f, 1.5f};
            std::vector<std::int32_t> in;
            octo::ir::param_list base;
            const double eps = 1e-5;
            if (op == opcode::gemv_add) {
              in = {x, w, r};
              base = params({{param_key::K, double(K)}});
            } else {
              in = {x, nw, w};
              if (op == opcode::rmsnorm_swiglu) in.push_back(w2);
              if (bias) in.push_back(b);
              base = params({{param_key::K, double(K)}, {param_key::hidden, double(K)}, {param_key::eps, eps}});
            }
            for (auto [n_tile, n_off] : {std::pair<std::int64_t, std::int64_t>{21, 2}, {3, 23}}) {
              auto pl = base;
              pl.set(param_key::N_tile, n_tile);
              pl.set(param_key::n_off, n_off);
              c.task(op, in, {y}, pl);
            }
            run_case(c, gemv_tolerance(op, K));
          }
        }
      }
    }
    ::unsetenv("OCTO_KERNELS_NO_SUBGROUP");
    ::unsetenv("OCTO_GEMV_NR");
  }
}

TEST_CASE("conformance: 16-bit decode GEMVs over wide outputs (LM head, gate|up): 4 rows a workgroup of 32 or 64") {
  // Over more than 4096 outputs the F32 / F16 / BF16 loop takes 4 weight rows a workgroup and 32
  // invocations where a row has fewer than 192 16-byte units (K = 896), else 64 (K = 1536)
  // (kernels/gemv.cpp); 4099 outputs leave a last workgroup of 3 rows (of one pair for RMSNORM_SWIGLU, 4
  // rows being 2 pairs). Both reductions, against the composition of the plain ops.
  for (int mode : {0, 1}) {
    if (mode == 1) ::setenv("OCTO_KERNELS_NO_SUBGROUP", "1", 1);
    CAPTURE(mode);
    for (dtype wd : {dtype::f16, dtype::bf16, dtype::f32}) {
      if (mode == 1 && wd != dtype::f16) continue;
      for (std::int64_t K : {896, 1536}) {
        for (opcode op : {opcode::rmsnorm_gemv, opcode::rmsnorm_swiglu, opcode::gemv_tile}) {
          CAPTURE(octo::ir::name(wd));
          CAPTURE(octo::ir::name(op));
          CAPTURE(K);
          const std::int64_t N = 4099;
          case_builder c;
          auto x = c.buf("x", buffer_kind::io_input, dtype::f32, {1, K});
          auto nw = c.buf("norm_w", buffer_kind::weight, dtype::f32, {K});
          auto w = c.buf("w", buffer_kind::weight, wd, {N, K});
          auto w2 = c.buf("w_up", buffer_kind::weight, wd, {N, K});
          auto y = c.buf("y", buffer_kind::io_output, dtype::f32, {1, N});
          c.range[nw] = {0.5f, 1.5f};
          std::vector<std::int32_t> in{x, nw, w};
          if (op == opcode::rmsnorm_swiglu) in.push_back(w2);
          auto pl = params({{param_key::K, double(K)}, {param_key::N_tile, double(N)}, {param_key::n_off, 0}});
          if (op == opcode::gemv_tile) {
            in = {x, w};
          } else {
            pl.set(param_key::hidden, K);
            pl.set_real(param_key::eps, 1e-5);
          }
          c.task(op, in, {y}, pl);
          run_case(c, gemv_tolerance(op, K));
        }
      }
    }
    ::unsetenv("OCTO_KERNELS_NO_SUBGROUP");
  }
}

/// One form of the tiled GEMM kernels (src/vulkan/kernels/gemm.cpp's knobs): the kernel, the weight
/// dequantized to f16 ahead (OCTO_GEMM_DEQUANT), the norm ahead (OCTO_GEMM_NORM_AHEAD; into gemm_reg as
/// f16 rows, its X16 mode), the tensor-core kernels' epilogue staged through shared memory or read from
/// each invocation's own elements (OCTO_GEMM_EPI_REGS=0 / 1; the elements only where the VM's probe found
/// NVIDIA's fragment layout). `old`: the 64 x 64 kernel's forms too. The tensor-core ones where the device has them.
struct gemm_form {
  std::string kernel, dequant;
  bool ahead;
  bool staged = false;
  bool f16_factors() const { return kernel == "coopf" || dequant == "1" || (ahead && kernel == "reg"); }
};
std::vector<gemm_form> gemm_forms(bool old) {
  std::vector<gemm_form> forms{{"reg", "", false}, {"reg", "1", false}, {"reg", "", true}};
  if (old) forms.insert(forms.begin(), {{"old", "", false}, {"old", "", true}});
  if (gpu_fast().device().cooperative_matrix_nv)
    forms.insert(forms.end(), {{"coop", "", false}, {"coopf", "", false}, {"coopf", "1", false}, {"coopf", "", true},
                               {"coopf", "", false, true}});
  return forms;
}
/// The environment of one form while it lives.
struct gemm_form_env {
  explicit gemm_form_env(const gemm_form& f) {
    ::setenv("OCTO_GEMM_KERNEL", f.kernel.c_str(), 1);
    ::setenv("OCTO_GEMM_DEQUANT", f.dequant.c_str(), 1);
    ::setenv("OCTO_GEMM_NORM_AHEAD", f.ahead ? "1" : "0", 1);
    ::setenv("OCTO_GEMM_X16", f.ahead && f.kernel == "reg" ? "1" : "", 1);
    ::setenv("OCTO_GEMM_EPI_REGS", f.staged ? "0" : "1", 1);
  }
  ~gemm_form_env() {
    for (const char* k : {"OCTO_GEMM_KERNEL", "OCTO_GEMM_DEQUANT", "OCTO_GEMM_NORM_AHEAD", "OCTO_GEMM_X16", "OCTO_GEMM_EPI_REGS"})
      ::unsetenv(k);
  }
  gemm_form_env(const gemm_form_env&) = delete;
  gemm_form_env& operator=(const gemm_form_env&) = delete;
};

TEST_CASE("conformance: GEMV_ADD, RMSNORM_GEMV and RMSNORM_SWIGLU over many rows (prefill): the tiled GEMM kernels' fused forms") {
  // From 16 rows these run as a tiled GEMM (src/vulkan/kernels/gemv.cpp): GEMV_ADD with r added in the
  // epilogue; RMSNORM_GEMV with x multiplied by the norm weight as it is staged, each row's sum of squares
  // kept beside and its 1 / RMS applied in the epilogue (with and without a bias; a norm weight in F32
  // and in F16). In every GEMM kernel this device has: the 64 x 64 kernel, the register-blocked one, the
  // register-blocked one after the weight dequantized once to f16 (OCTO_GEMM_DEQUANT=1), and with
  // cooperative matrices the tensor-core kernels (f16 factors: their bound, docs/precision.md). The
  // RMSNORM_GEMV also with its norm in a pass ahead (OCTO_GEMM_NORM_AHEAD=1, kernels/gemm.cpp plan_norm_x;
  // the default from 256 rows): f32 rows into the 64 x 64 kernel, f16 rows into the register-blocked
  // one's X16 mode (OCTO_GEMM_X16=1) and the tensor-core one. The RMSNORM_SWIGLU (form 3: gate and up
  // rows interleaved in one GEMM's tiles, silu(gate) * up in its epilogue; the 64 x 64 kernel has no such
  // epilogue, so "old" plans the register-blocked one) with its norm in the staging and ahead. Two column
  // tiles leave the columns between them poisoned.
  for (const gemm_form& f : gemm_forms(true)) {
    const gemm_form_env env(f);
    const auto& [kernel, dequant, ahead, staged] = f;
    CAPTURE(staged);
    const bool f16_factors = f.f16_factors();
    for (dtype wd : weight_dtypes) {
      if (dequant == "1" && (wd == dtype::f32 || wd == dtype::f16)) continue;  // read as stored
      if ((kernel != "reg" || ahead) && !reduction_sample(wd)) continue;
      // GEMV_ADD; RMSNORM_GEMV (F32 norm weight); with a bias and an F16 norm weight; RMSNORM_SWIGLU
      for (int form : {0, 1, 2, 3}) {
        // Every format's tile loads once (the norm form); the other forms on a sample (CI's lavapipe time).
        if ((!reduction_sample(wd) || ahead) && form != 1 && !(ahead && form >= 2)) continue;
        if (form == 3 && kernel == "old" && !ahead) continue;  // plans "reg", as the form with its norm ahead does
        CAPTURE(kernel);
        CAPTURE(dequant);
        CAPTURE(ahead);
        CAPTURE(octo::ir::name(wd));
        CAPTURE(form);
        const std::int64_t R = 37, K = 256, N = 75;
        case_builder c;
        auto x = c.buf("x", buffer_kind::io_input, dtype::f32, {R, K});
        auto nw = c.buf("norm_w", buffer_kind::weight, form == 2 ? dtype::f16 : dtype::f32, {K});
        auto w = c.buf("w", buffer_kind::weight, wd, {N, K});
        auto w_up = c.buf("w_up", buffer_kind::weight, wd, {N, K});
        auto b = c.buf("b", buffer_kind::weight, dtype::f32, {N});
        auto r = c.buf("r", buffer_kind::io_input, dtype::f32, {R, N});
        auto y = c.buf("y", buffer_kind::io_output, dtype::f32, {R, N});
        c.range[nw] = {0.5f, 1.5f};
        c.range[x] = {-3.0f, 3.0f};  // an RMS far from 1: the norm must matter
        for (auto [n_tile, n_off] : {std::pair<std::int64_t, std::int64_t>{67, 3}, {2, 72}}) {
          auto pl = params({{param_key::K, double(K)}, {param_key::N_tile, double(n_tile)}, {param_key::n_off, double(n_off)}});
          if (form == 0) {
            c.task(opcode::gemv_add, {x, w, r}, {y}, pl);
          } else {
            pl.set(param_key::hidden, K);
            pl.set_real(param_key::eps, 1e-5);
            std::vector<std::int32_t> in{x, nw, w};
            if (form == 2) in.push_back(b);
            if (form == 3) in.push_back(w_up);
            c.task(form == 3 ? opcode::rmsnorm_swiglu : opcode::rmsnorm_gemv, in, {y}, pl);
          }
        }
        // f16 factors: about 2^-11 of each product, summed over K (random signs keep it far below). The
        // SWIGLU's silu(g) * u carries each factor's error times the other's size (gemv_tolerance).
        const double swiglu = form == 3 ? std::sqrt(double(K) / 3.0) : 1.0;
        run_case(c, f16_factors ? tolerance{2e-2 * swiglu, 2e-3} : tolerance{2e-4 * swiglu, 2e-4});
      }
    }
  }
}

TEST_CASE("conformance: GEMV_ADD over many rows with the tensor-core GEMM's K split over workgroups") {
  // gemm_coopf_f16_ksplit: each output tile's K split over 2, 3 or 8 workgroups (OCTO_GEMM_SPLITK; the
  // default splits small grids over long rows, kernels/gemm.cpp split_for): the residual added once, by the
  // split that arrives last, after it adds every split's sums. Two column tiles in one wavefront: each
  // task has its own partials (the transient scratch) and counters.
  if (!gpu().device().cooperative_matrix_nv) {
    MESSAGE("no cooperative matrices on " << gpu().device().name << ": the K split runs on the card's calls only");
    return;
  }
  for (const char* splits : {"2", "3", "8"})
    for (dtype wd : {dtype::f16, dtype::q8_0, dtype::q6_k}) {
      const gemm_form_env env(gemm_form{"coopf", "", false, true});
      const octo_test::scoped_env split("OCTO_GEMM_SPLITK", splits);
      CAPTURE(std::string(splits));
      CAPTURE(octo::ir::name(wd));
      // From 256 rows: the split reads f16 weight rows (a quantized weight's f16 copy or tile).
      const std::int64_t R = 260, K = 512, N = 75;
      case_builder c;
      auto x = c.buf("x", buffer_kind::io_input, dtype::f32, {R, K});
      auto w = c.buf("w", buffer_kind::weight, wd, {N, K});
      auto r = c.buf("r", buffer_kind::io_input, dtype::f32, {R, N});
      auto y = c.buf("y", buffer_kind::io_output, dtype::f32, {R, N});
      for (auto [n_tile, n_off] : {std::pair<std::int64_t, std::int64_t>{67, 3}, {2, 72}})
        c.task(opcode::gemv_add, {x, w, r}, {y},
               params({{param_key::K, double(K)}, {param_key::N_tile, double(n_tile)}, {param_key::n_off, double(n_off)}}));
      run_case(c, tolerance{2e-2, 2e-3});
    }
}

/// Heads of a RoPE'd projection: heads x head_dim, n_rot of them rotated in rope_style, with a bias or not.
struct rope_shape {
  std::int64_t heads, head_dim, n_rot;
  int style;
  bool bias;
};
/// q, k and v of R rows of x [R, K] in one case: RMSNORM_GEMV_ROPE into q, RMSNORM_GEMV_KV into the k cache
/// (rotated) and the v cache (n_rot = 0), both of S slots at pos 1 (+ globals.pos), at `positions`.
/// `wide_x`: x in [-3, 3], an RMS far from 1, so the norm must matter.
case_builder qkv_rope_case(dtype wd, dtype cache_dt, const rope_shape& s, std::int64_t R, std::int64_t K,
                           std::int64_t S, const std::vector<std::int32_t>& positions, bool wide_x) {
  const std::int64_t N = s.heads * s.head_dim;
  case_builder c;
  auto x = c.buf("x", buffer_kind::io_input, dtype::f32, {R, K});
  auto nw = c.buf("norm_w", buffer_kind::weight, dtype::f32, {K});
  auto w = c.buf("w", buffer_kind::weight, wd, {N, K});
  auto wv = c.buf("w_v", buffer_kind::weight, wd, {N, K});
  auto b = c.buf("b", buffer_kind::weight, dtype::f32, {N});
  auto pos = c.buf("pos", buffer_kind::io_input, dtype::i32, {R});
  auto q = c.buf("q", buffer_kind::io_output, dtype::f32, {R, N});
  auto kc = c.buf("k_cache", buffer_kind::kv_cache, cache_dt, {S, N});
  auto vc = c.buf("v_cache", buffer_kind::kv_cache, cache_dt, {S, N});
  c.range[nw] = {0.5f, 1.5f};
  if (wide_x) c.range[x] = {-3.0f, 3.0f};
  c.ints(pos, positions);
  const auto rope_params = [&] {
    return params({{param_key::K, double(K)}, {param_key::hidden, double(K)}, {param_key::eps, 1e-6},
                   {param_key::head_dim, double(s.head_dim)}, {param_key::n_rot, double(s.n_rot)},
                   {param_key::theta, 1000000.0}, {param_key::rope_style, double(s.style)}});
  };
  std::vector<std::int32_t> qin{x, nw, w, pos}, kin{x, nw, w, kc, pos}, vin{x, nw, wv, vc};
  if (s.bias) {
    qin.push_back(b);
    kin.push_back(b);
    vin.push_back(b);
  }
  c.task(opcode::rmsnorm_gemv_rope, qin, {q}, rope_params());
  auto kp = rope_params();
  kp.set(param_key::pos, 1);
  c.task(opcode::rmsnorm_gemv_kv, kin, {kc}, kp);
  auto vp = params({{param_key::K, double(K)}, {param_key::hidden, double(K)}, {param_key::eps, 1e-6},
                    {param_key::head_dim, double(s.head_dim)}, {param_key::n_rot, 0}, {param_key::pos, 1}});
  c.task(opcode::rmsnorm_gemv_kv, vin, {vc}, vp);
  return c;
}

TEST_CASE("conformance: RMSNORM_GEMV_ROPE and RMSNORM_GEMV_KV over many rows (prefill): the GEMM kernels' RoPE / KV epilogue") {
  // From 16 rows a prefill's q, k and v run as tiled GEMMs whose epilogue adds the bias, rotates and
  // writes y or the cache rows (shaders/common/gemm_rope_kv.glsl: the tile's columns permuted so that a
  // lane's 4 columns are two rotation pairs; a 16-bit cache written a word at a time). Every GEMM kernel
  // with that epilogue this device has: the register-blocked one with the norm in its staging, with it
  // ahead (f16 rows, X16), after the weight dequantized to f16, and with cooperative matrices the
  // tensor-core ones. Heads of 64 rotating all (NeoX), of 32 rotating 16 (interleaved, with a bias), of
  // 16 rotating 8 (NeoX: dims past n_rot pass through); F32 and F16 caches; the v form (n_rot = 0). One
  // format of each weight loop family and Q8_0 on the first shape, F16 weights on the others.
  // The cache's other slots must stay as they were (run_case poisons and compares every slot).
  for (const gemm_form& f : gemm_forms(false)) {
    if (f.staged) continue;  // the RoPE / KV epilogue always stages (4 consecutive columns a lane)
    const gemm_form_env env(f);
    [[maybe_unused]] const auto& [kernel, dequant, ahead, staged] = f;
    const bool f16_factors = f.f16_factors();
    for (dtype wd : weight_dtypes) {
      if (dequant == "1" && (wd == dtype::f32 || wd == dtype::f16)) continue;  // read as stored
      // One format of each loop family (reduction_sample), as the SWIGLU's row interleave above: the
      // epilogue and the permuted weight rows are the same code for every format, and each format is a
      // cold pipeline on lavapipe (every format: 29.6 s of this case cold, against 18.5); and Q8_0, whose
      // tensor-core kernel has its own f16 path (W16_Q8_0).
      if (!reduction_sample(wd) && wd != dtype::q8_0) continue;
      for (rope_shape s : {rope_shape{3, 64, 64, 0, false}, rope_shape{2, 32, 16, 1, true}, rope_shape{4, 16, 8, 0, true}}) {
        if (s.head_dim != 64 && wd != dtype::f16) continue;
        for (dtype cache_dt : {dtype::f32, dtype::f16}) {
          CAPTURE(kernel);
          CAPTURE(dequant);
          CAPTURE(ahead);
          CAPTURE(octo::ir::name(wd));
          CAPTURE(s.head_dim);
          CAPTURE(s.n_rot);
          CAPTURE(s.style);
          CAPTURE(octo::ir::name(cache_dt));
          const std::int64_t R = 37;
          std::vector<std::int32_t> positions(static_cast<std::size_t>(R));
          for (std::int64_t t = 0; t < R; ++t) positions[static_cast<std::size_t>(t)] = static_cast<std::int32_t>(5 + 3 * t);
          case_builder c = qkv_rope_case(wd, cache_dt, s, R, 256, R + 5, positions, true);
          // globals.pos = 1: rows go to cache slots 2 .. R + 1.
          const double rtol = cache_dt == dtype::f16 ? 2e-3 : f16_factors ? 2e-3 : 2e-4;
          run_case(c, f16_factors ? tolerance{2e-2, rtol} : tolerance{2e-4, rtol}, 1);
        }
      }
    }
  }
}

TEST_CASE("conformance: RMSNORM_GEMV_ROPE and RMSNORM_GEMV_KV, every weight dtype, both RoPE styles, caches") {
  // The RoPE pairs of one rotation are summed in one workgroup; the KV form writes the rotated (n_rot = 0:
  // plain) rows into an F32 or F16 cache at pos + globals.pos, leaving every other slot as it was.
  // The fallback (shared-memory reduction) also takes 4 weight rows (2 RoPE pairs) a workgroup
  // (OCTO_GEMV_NR=4: the planner's choice for wide projections; these narrow ones take 2).
  for (bool fallback : {false, true}) {
    if (fallback) {
      ::setenv("OCTO_KERNELS_NO_SUBGROUP", "1", 1);
      ::setenv("OCTO_GEMV_NR", "4", 1);
    }
    CAPTURE(fallback);
    for (dtype wd : weight_dtypes) {
      if (fallback && !reduction_sample(wd)) continue;
      const std::int64_t K = octo::ir::layout(wd).block_elems == 256 ? 768 : 480;
      // 3 heads of 64 (rotate-half), 1 head of 32 rotating 16 dims (interleaved), 5 heads of 16 with bias
      for (rope_shape s : {rope_shape{3, 64, 64, 0, false}, rope_shape{1, 32, 16, 1, true}, rope_shape{5, 16, 16, 0, true},
                           rope_shape{2, 16, 8, 0, false}}) {
        for (dtype cache_dt : {dtype::f32, dtype::f16}) {
          for (std::int64_t R : {1, 2}) {
            if (R != 1 && !reduction_sample(wd)) continue;  // as above: decode runs one row
            CAPTURE(octo::ir::name(wd));
            CAPTURE(s.heads);
            CAPTURE(s.head_dim);
            CAPTURE(s.n_rot);
            CAPTURE(s.style);
            CAPTURE(s.bias);
            CAPTURE(octo::ir::name(cache_dt));
            CAPTURE(R);
            case_builder c = qkv_rope_case(wd, cache_dt, s, R, K, 6,
                                           R == 1 ? std::vector<std::int32_t>{57} : std::vector<std::int32_t>{7, 8}, false);
            // globals.pos = 2: rows go to cache slots 3 (and 4).
            run_case(c, {2e-4 * double(K) / 256.0, cache_dt == dtype::f16 ? 2e-3 : 2e-4}, R == 1 ? 2 : 1);
          }
        }
      }
    }
    ::unsetenv("OCTO_KERNELS_NO_SUBGROUP");
    ::unsetenv("OCTO_GEMV_NR");
  }
}

TEST_CASE("conformance: fused GEMVs with K not a multiple of 8 (the scalar path of every FUSE mode)") {
  for (dtype wd : {dtype::f32, dtype::f16, dtype::bf16}) {
    CAPTURE(octo::ir::name(wd));
    const std::int64_t K = 100, N = 12, R = 2;  // N: 2 heads of 6
    case_builder c;
    auto x = c.buf("x", buffer_kind::io_input, dtype::f32, {R, K});
    // a norm weight in the model's float dtype (a safetensors model's may be F16 / BF16)
    auto nw = c.buf("norm_w", buffer_kind::weight, wd, {K});
    auto w = c.buf("w", buffer_kind::weight, wd, {N, K});
    auto w2 = c.buf("w_up", buffer_kind::weight, wd, {N, K});
    auto b = c.buf("b", buffer_kind::weight, dtype::bf16, {N});
    auto r = c.buf("r", buffer_kind::io_input, dtype::f32, {R, N});
    auto pos = c.buf("pos", buffer_kind::io_input, dtype::i32, {R});
    auto y1 = c.buf("y_norm", buffer_kind::io_output, dtype::f32, {R, N});
    auto y2 = c.buf("y_add", buffer_kind::io_output, dtype::f32, {R, N});
    auto y3 = c.buf("y_swiglu", buffer_kind::io_output, dtype::f32, {R, N});
    auto y4 = c.buf("y_rope", buffer_kind::io_output, dtype::f32, {R, N});
    auto kc = c.buf("k_cache", buffer_kind::kv_cache, dtype::f16, {5, N});
    c.range[nw] = {0.5f, 1.5f};
    c.ints(pos, {2, 3});
    const auto norm = [&] { return params({{param_key::K, double(K)}, {param_key::hidden, double(K)}, {param_key::eps, 1e-5}}); };
    auto tile = norm();
    tile.set(param_key::N_tile, N).set(param_key::n_off, 0);
    c.task(opcode::rmsnorm_gemv, {x, nw, w, b}, {y1}, tile);
    c.task(opcode::gemv_add, {x, w, r}, {y2}, params({{param_key::K, double(K)}, {param_key::N_tile, double(N)}, {param_key::n_off, 0}}));
    c.task(opcode::rmsnorm_swiglu, {x, nw, w, w2}, {y3}, tile);
    auto rp = norm();
    rp.set(param_key::head_dim, 6).set(param_key::n_rot, 4).set(param_key::rope_style, 1).set_real(param_key::theta, 10000.0);
    c.task(opcode::rmsnorm_gemv_rope, {x, nw, w, pos, b}, {y4}, rp);
    rp.set(param_key::pos, 1);
    c.task(opcode::rmsnorm_gemv_kv, {x, nw, w, kc, pos}, {kc}, rp);
    run_case(c, {2e-4, 2e-3});
  }
}

TEST_CASE("conformance: RMSNORM_ROPE and RMSNORM_ROPE_KV (per-head norm + RoPE, Qwen3's q and k)") {
  struct shape {
    std::int64_t heads, head_dim, n_rot;
    int style;
  };
  for (shape s : {shape{3, 128, 128, 0}, shape{5, 64, 32, 1}, shape{1, 16, 16, 0}, shape{7, 32, 16, 0}}) {
    for (dtype cache_dt : {dtype::f32, dtype::f16, dtype::bf16}) {
      for (std::int64_t T : {1, 3, 37}) {  // 37: a prefill's rows (the fold of prefill_schedule())
        CAPTURE(s.heads);
        CAPTURE(s.head_dim);
        CAPTURE(s.n_rot);
        CAPTURE(s.style);
        CAPTURE(octo::ir::name(cache_dt));
        CAPTURE(T);
        const std::int64_t N = s.heads * s.head_dim, S = T + 5;
        case_builder c;
        auto x = c.buf("x", buffer_kind::io_input, dtype::f32, {T, N});
        auto nw = c.buf("norm_w", buffer_kind::weight, cache_dt, {s.head_dim});  // F32 / F16 / BF16 norm weights
        auto pos = c.buf("pos", buffer_kind::io_input, dtype::i32, {T});
        auto y = c.buf("y", buffer_kind::io_output, dtype::f32, {T, N});
        auto kc = c.buf("k_cache", buffer_kind::kv_cache, cache_dt, {S, N});
        c.range[nw] = {0.5f, 1.5f};
        std::vector<std::int32_t> positions{41};
        if (T > 1) {
          positions.resize(static_cast<std::size_t>(T));
          for (std::int64_t t = 0; t < T; ++t) positions[static_cast<std::size_t>(t)] = static_cast<std::int32_t>(3 + t);
        }
        c.ints(pos, positions);
        auto p = params({{param_key::hidden, double(s.head_dim)}, {param_key::eps, 1e-6},
                         {param_key::head_dim, double(s.head_dim)}, {param_key::n_rot, double(s.n_rot)},
                         {param_key::theta, 10000.0}, {param_key::rope_style, double(s.style)}});
        c.task(opcode::rmsnorm_rope, {x, nw, pos}, {y}, p);
        p.set(param_key::pos, 2);
        c.task(opcode::rmsnorm_rope_kv, {x, nw, kc, pos}, {kc}, p);
        // globals.pos = 1: rows go to cache slots 3 .. T + 2
        run_case(c, {1e-4, cache_dt == dtype::f32 ? 1e-4 : 1e-2}, 1);
      }
    }
  }
}

TEST_CASE("conformance: RMSNORM_GEMV_NORM_ROPE and RMSNORM_GEMV_NORM_KV (Qwen3's q and k in one task each)") {
  // The per-head norm between the GEMV and RoPE (gemv.comp HEAD_NORM): each workgroup leaves its sums in
  // the task's scratch and counts its arrival on its (row, head) counter; the last to arrive normalizes,
  // rotates and stores the head. Against the composition of the plain ops: the KV form over every weight
  // format (the float loops, `accurate`), the q form on one format of each loop family, two rows on F16;
  // the shared-memory reduction with 4 weight rows a workgroup (2 pairs) and 8 rows (4 pairs: 16-dim heads
  // in one workgroup); the integer-dot loops (`fast`), at the planner's rows and at 4 (Qwen3-0.6B's q and
  // k: kernels/gemv.cpp's rows for GEMVs that round x themselves). Each (format, form, mode, rows) is a pipeline
  // compiled cold on lavapipe (CI's long pole), so the modes take one format each. (The counters' reset, step after step of one
  // recording: fused_decode.cpp's Qwen3 models.)
  struct shape {
    std::int64_t heads, head_dim, n_rot;
    int style;
  };
  struct mode {
    const char* no_subgroup;
    const char* nr;
    bool fast;
    std::vector<dtype> formats;  // empty: weight_dtypes
  };
  const std::vector<mode> modes{{"", "", false, {}},
                                {"1", "4", false, {dtype::q4_k}},
                                {"", "8", false, {dtype::q8_0}},
                                {"", "", true, {dtype::q8_0}},
                                {"", "4", true, {dtype::q4_k}}};  // the integer loops at 2 pairs a workgroup
  for (const mode& m : modes) {
    ::setenv("OCTO_KERNELS_NO_SUBGROUP", m.no_subgroup, 1);
    ::setenv("OCTO_GEMV_NR", m.nr, 1);
    ::setenv("OCTO_GEMV_IDOT", m.fast ? "1" : "", 1);
    CAPTURE(std::string(m.no_subgroup));
    CAPTURE(std::string(m.nr));
    CAPTURE(m.fast);
    std::vector<dtype> formats = m.formats;
    if (formats.empty()) formats.assign(weight_dtypes.begin(), weight_dtypes.end());
    for (dtype wd : formats) {
      const bool both_forms = m.formats.empty() ? reduction_sample(wd) : true;
      const std::int64_t K = octo::ir::layout(wd).block_elems == 256 ? 768 : 480;
      for (std::int64_t R : {1, 2}) {
        if (R != 1 && !(m.formats.empty() && wd == dtype::f16)) continue;  // decode runs one row
        CAPTURE(octo::ir::name(wd));
        CAPTURE(R);
        // 3 heads of 128 (rotate-half, Qwen3's), 2 heads of 64 rotating 32 dims (interleaved), 4 of 16.
        for (shape s : {shape{3, 128, 128, 0}, shape{2, 64, 32, 1}, shape{4, 16, 16, 0}}) {
          const dtype cache_dt = s.head_dim == 64 ? dtype::f32 : (s.head_dim == 16 ? dtype::bf16 : dtype::f16);
          CAPTURE(s.heads);
          CAPTURE(s.head_dim);
          CAPTURE(octo::ir::name(cache_dt));
          const std::int64_t N = s.heads * s.head_dim, S = 6;
          case_builder c;
          auto x = c.buf("x", buffer_kind::io_input, dtype::f32, {R, K});
          auto nw = c.buf("norm_w", buffer_kind::weight, dtype::f32, {K});
          auto w = c.buf("w", buffer_kind::weight, wd, {N, K});
          auto hq = c.buf("q_norm", buffer_kind::weight, dtype::f32, {s.head_dim});
          auto hk = c.buf("k_norm", buffer_kind::weight, cache_dt, {s.head_dim});  // F32 / F16 / BF16 norm weights
          auto pos = c.buf("pos", buffer_kind::io_input, dtype::i32, {R});
          auto kc = c.buf("k_cache", buffer_kind::kv_cache, cache_dt, {S, N});
          for (auto b : {nw, hq, hk}) c.range[b] = {0.5f, 1.5f};
          c.ints(pos, R == 1 ? std::vector<std::int32_t>{57} : std::vector<std::int32_t>{7, 8});
          auto p = params({{param_key::K, double(K)}, {param_key::hidden, double(K)}, {param_key::eps, 1e-6},
                           {param_key::head_dim, double(s.head_dim)}, {param_key::n_rot, double(s.n_rot)},
                           {param_key::theta, 1000000.0}, {param_key::rope_style, double(s.style)}});
          if (both_forms)
            c.task(opcode::rmsnorm_gemv_norm_rope, {x, nw, w, hq, pos},
                   {c.buf("q", buffer_kind::io_output, dtype::f32, {R, N})}, p);
          p.set(param_key::pos, 1);
          c.task(opcode::rmsnorm_gemv_norm_kv, {x, nw, w, hk, kc, pos}, {kc}, p);
          // Normalized heads are about 1 in size: the float loops' sums to f32 rounding. The integer-dot
          // loops round x to int8 per run of 16 (docs/precision.md), about 0.6% of an output's RMS, and
          // the head norm takes the outputs to an RMS of about 1: up to ~0.03 on some of a case's
          // hundreds (seed 3438334025: 0.023 on Q6_K). A wrong pair, norm or sum is off by the value itself.
          const tolerance tol = m.fast ? tolerance{5e-2, 2e-2} : tolerance{2e-4, cache_dt == dtype::f32 ? 2e-4 : 1e-2};
          // globals.pos = 2: rows go to cache slots 3 (and 4).
          run_case(c, tol, 2, m.fast ? &gpu_fast() : nullptr);
        }
      }
    }
  }
  ::unsetenv("OCTO_KERNELS_NO_SUBGROUP");
  ::unsetenv("OCTO_GEMV_NR");
  ::unsetenv("OCTO_GEMV_IDOT");
}
