// Conformance of GEMV_TILE (tests/gpu/conformance.cpp says how cases run): every weight format, both
// reductions, decode shapes, the scalar path, the opt-in x-through-shared-tiles mode.
#include <doctest/doctest.h>

#include <cmath>
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
