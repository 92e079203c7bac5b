// Conformance: every opcode x dtype on the Vulkan VM against the CPU reference VM (the oracle), on
// fresh random inputs each run, with every output poisoned (all bits set: NaN / -1) before each run so
// a kernel that skips an element cannot pass. Untouched regions (GEMV tiles, GEMM rows, KV slots) must
// keep the poison / their prior contents exactly as the reference does.
//
// Runs on lavapipe in CI and unchanged on any GPU (OCTO_DEVICE picks one). The seed is printed on
// failure; OCTO_CONFORMANCE_SEED=<n> replays it.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "conformance_support.hpp"

namespace {
/// A sampled run (OCTO_TEST_SAMPLE=1, conformance_support.hpp) takes the attention cases' F16 and Q8_0
/// caches: one of the 16-bit caches the flash-decoding kernel reads and the quantized one; F32 and BF16
/// read through the same kernels and Vulkan calls.
bool sampled_cache_out(dtype kd) {
  return kd != dtype::f16 && kd != dtype::q8_0 &&
         octo::test::sampled_out("the attention cases' F32 and BF16 caches (F16 and Q8_0 kept)");
}
}  // namespace

TEST_CASE("conformance: GEMV_TILE with more than 65535 workgroups (an LM-head-like N over the x/z grid)") {
  for (dtype wd : {dtype::f16, dtype::q8_0, dtype::q4_0, dtype::q4_k}) {
    CAPTURE(octo::ir::name(wd));
    const std::int64_t K = octo::ir::layout(wd).block_elems == 256 ? 256 : 32;
    const std::int64_t N = 262151;  // > 4 * 65535 output rows: more groups than one grid dimension holds
    case_builder c;
    auto x = c.buf("x", buffer_kind::io_input, dtype::f32, {1, K});
    auto w = c.buf("w", buffer_kind::weight, wd, {N, K});
    auto y = c.buf("y", buffer_kind::io_output, dtype::f32, {1, N});
    // Columns 0..2 and the last two stay poisoned.
    c.task(opcode::gemv_tile, {x, w}, {y}, params({{param_key::K, double(K)}, {param_key::N_tile, double(N - 5)}, {param_key::n_off, 3}}));
    run_case(c, {1e-4, 1e-4});
  }
}

TEST_CASE("conformance: GEMM_TILE, every weight dtype, a row window") {
  for (dtype wd : weight_dtypes) {
    CAPTURE(octo::ir::name(wd));
    const std::int64_t K = 256, N = 20, M = 13;
    case_builder c;
    auto x = c.buf("x", buffer_kind::io_input, dtype::f32, {M, K});
    auto w = c.buf("w", buffer_kind::weight, wd, {N, K});
    auto b = c.buf("b", buffer_kind::weight, dtype::f16, {N});
    auto y = c.buf("y", buffer_kind::io_output, dtype::f32, {M, N});
    // Rows [2, 12) and columns [1, 19): the rest stays poisoned.
    c.task(opcode::gemm_tile, {x, w, b}, {y},
           params({{param_key::M_tile, 10}, {param_key::m_off, 2}, {param_key::K, K}, {param_key::N_tile, 18},
                   {param_key::n_off, 1}}));
    run_case(c, {1e-4, 1e-4});
  }
}

TEST_CASE("conformance: GEMM_TILE and GEMV_TILE over many rows (the tiled prefill kernel)") {
  for (dtype wd : weight_dtypes) {
    CAPTURE(octo::ir::name(wd));
    const std::int64_t K = 512, N = 70, M = 100;
    case_builder c;
    auto x = c.buf("x", buffer_kind::io_input, dtype::f32, {M, K});
    auto w = c.buf("w", buffer_kind::weight, wd, {N, K});
    auto b = c.buf("b", buffer_kind::weight, dtype::f32, {N});
    auto y = c.buf("y", buffer_kind::io_output, dtype::f32, {M, N});
    auto y2 = c.buf("y2", buffer_kind::io_output, dtype::f32, {M, N});
    // Rows [5, 95), columns [2, 69) with bias; and every row of columns [0, 40) without.
    c.task(opcode::gemm_tile, {x, w, b}, {y},
           params({{param_key::M_tile, 90}, {param_key::m_off, 5}, {param_key::K, K}, {param_key::N_tile, 67},
                   {param_key::n_off, 2}}));
    c.task(opcode::gemv_tile, {x, w}, {y2}, params({{param_key::K, K}, {param_key::N_tile, 40}, {param_key::n_off, 0}}));
    run_case(c, {2e-4, 1e-4});
  }
}

TEST_CASE("conformance: EMBED, every table dtype") {
  for (dtype wd : weight_dtypes) {
    CAPTURE(octo::ir::name(wd));
    const std::int64_t V = 50, H = 256, T = 6;
    case_builder c;
    auto ids = c.buf("ids", buffer_kind::io_input, dtype::i32, {T});
    auto table = c.buf("table", buffer_kind::weight, wd, {V, H});
    auto y = c.buf("y", buffer_kind::io_output, dtype::f32, {T, H});
    c.ints(ids, {0, 49, 7, 7, 23, 1});
    c.task(opcode::embed, {ids, table}, {y}, params({{param_key::hidden, H}}));
    run_case(c, {1e-6, 1e-6});  // a gather of dequantized values (a compiler may fuse d*q - m into an fma)
  }
}

TEST_CASE("conformance: IQ4_NL / IQ4_XS with odd block counts: GEMV (both reductions), GEMM, EMBED") {
  // K an odd number of blocks (37 x 32 for IQ4_NL, 5 x 256 for IQ4_XS), output columns and rows that are
  // not multiples of any workgroup's tile, decode (1-3 rows) and prefill (45 rows) shapes.
  for (bool fallback : {false, true}) {
    if (fallback) ::setenv("OCTO_KERNELS_NO_SUBGROUP", "1", 1);
    for (dtype wd : {dtype::iq4_nl, dtype::iq4_xs}) {
      const std::int64_t K = wd == dtype::iq4_nl ? 32 * 37 : 256 * 5, N = 77;
      for (std::int64_t R : {1, 3, 45}) {
        CAPTURE(fallback);
        CAPTURE(octo::ir::name(wd));
        CAPTURE(R);
        case_builder c;
        auto x = c.buf("x", buffer_kind::io_input, dtype::f32, {R, K});
        auto w = c.buf("w", buffer_kind::weight, wd, {N, K});
        auto b = c.buf("b", buffer_kind::weight, dtype::f32, {N});
        auto y = c.buf("y", buffer_kind::io_output, dtype::f32, {R, N});
        // Columns 0 and 76 stay poisoned; the second tile is a single column.
        c.task(opcode::gemv_tile, {x, w, b}, {y}, params({{param_key::K, double(K)}, {param_key::N_tile, 74}, {param_key::n_off, 1}}));
        c.task(opcode::gemv_tile, {x, w}, {y}, params({{param_key::K, double(K)}, {param_key::N_tile, 1}, {param_key::n_off, 75}}));
        run_case(c, {2e-4 * double(K) / 256.0, 1e-4});
      }
      CAPTURE(octo::ir::name(wd));
      case_builder c;
      const std::int64_t V = 11, T = 5;
      auto ids = c.buf("ids", buffer_kind::io_input, dtype::i32, {T});
      auto table = c.buf("table", buffer_kind::weight, wd, {V, K});
      auto y = c.buf("y", buffer_kind::io_output, dtype::f32, {T, K});
      c.ints(ids, {10, 0, 3, 3, 9});
      c.task(opcode::embed, {ids, table}, {y}, params({{param_key::hidden, double(K)}}));
      run_case(c, {1e-6, 1e-6});
    }
    ::unsetenv("OCTO_KERNELS_NO_SUBGROUP");
  }
}

TEST_CASE("conformance: RMSNORM and LAYERNORM") {
  for (std::int64_t H : {64, 300, 1024}) {
    for (dtype wd : {dtype::f32, dtype::f16}) {
      for (int kind = 0; kind < 3; ++kind) {  // rmsnorm, layernorm, layernorm + bias
        CAPTURE(H);
        CAPTURE(octo::ir::name(wd));
        CAPTURE(kind);
        case_builder c;
        auto x = c.buf("x", buffer_kind::io_input, dtype::f32, {5, H});
        auto w = c.buf("w", buffer_kind::weight, wd, {H});
        auto b = c.buf("b", buffer_kind::weight, dtype::f32, {H});
        auto y = c.buf("y", buffer_kind::io_output, dtype::f32, {5, H});
        c.range[x] = {-3.0f, 5.0f};
        std::vector<std::int32_t> in{x, w};
        if (kind == 2) in.push_back(b);
        c.task(kind == 0 ? opcode::rmsnorm : opcode::layernorm, in, {y},
               params({{param_key::eps, 1e-5}, {param_key::hidden, H}}));
        run_case(c, {1e-5, 1e-4});
      }
    }
  }
}

TEST_CASE("conformance: RMSNORM of a row window (m_off: a prefill's final norm of its last row)") {
  for (std::int64_t H : {64, 896}) {
    for (std::int64_t m_off : {0, 3, 6}) {
      CAPTURE(H);
      CAPTURE(m_off);
      case_builder c;
      auto x = c.buf("x", buffer_kind::io_input, dtype::f32, {7, H});
      auto w = c.buf("w", buffer_kind::weight, dtype::f32, {H});
      auto y = c.buf("y", buffer_kind::io_output, dtype::f32, {1, H});
      c.range[x] = {-3.0f, 5.0f};
      c.task(opcode::rmsnorm, {x, w}, {y},
             params({{param_key::eps, 1e-5}, {param_key::hidden, H}, {param_key::m_off, double(m_off)}}));
      run_case(c, {1e-5, 1e-4});
    }
  }
}

TEST_CASE("conformance: elementwise ops (COPY, ADD, MUL, SILU_MUL, GELU, ALLREDUCE_SHARD)") {
  SUBCASE("COPY between dtypes, odd numel") {
    const std::pair<dtype, dtype> pairs[] = {{dtype::f32, dtype::f32},  {dtype::f32, dtype::f16},
                                             {dtype::f32, dtype::bf16}, {dtype::f16, dtype::f32},
                                             {dtype::bf16, dtype::f32}, {dtype::i32, dtype::f32},
                                             {dtype::i8, dtype::f32},   {dtype::f16, dtype::bf16}};
    for (auto [from, to] : pairs) {
      CAPTURE(octo::ir::name(from));
      CAPTURE(octo::ir::name(to));
      case_builder c;
      auto x = c.buf("x", buffer_kind::io_input, from, {1001});
      auto y = c.buf("y", buffer_kind::io_output, to, {7, 143});
      if (from == dtype::i32) {
        std::vector<std::int32_t> v(1001);
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::int32_t>(i * 7919 % 20001) - 10000;
        c.ints(x, v);
      }
      c.task(opcode::copy, {x}, {y}, {});
      run_case(c, {0, 0});  // conversions are exact (round to nearest even both sides)
    }
  }
  SUBCASE("ADD and MUL with a broadcast row, MUL by alpha") {
    for (opcode op : {opcode::add, opcode::mul}) {
      case_builder c;
      auto a = c.buf("a", buffer_kind::io_input, dtype::f32, {9, 96});
      auto b = c.buf("b", buffer_kind::io_input, dtype::f32, {96});
      auto b2 = c.buf("b2", buffer_kind::io_input, dtype::f32, {9, 96});
      auto y = c.buf("y", buffer_kind::io_output, dtype::f32, {9, 96});
      auto y2 = c.buf("y2", buffer_kind::io_output, dtype::f32, {9, 96});
      auto y3 = c.buf("y3", buffer_kind::io_output, dtype::f32, {9, 96});
      c.task(op, {a, b}, {y}, {});
      c.task(op, {a, b2}, {y2}, {});
      c.task(opcode::mul, {a}, {y3}, params({{param_key::alpha, -0.375}}));
      run_case(c, {0, 1e-7});
    }
  }
  SUBCASE("SILU_MUL and GELU") {
    case_builder c;
    auto g = c.buf("g", buffer_kind::io_input, dtype::f32, {3, 500});
    auto u = c.buf("u", buffer_kind::io_input, dtype::f32, {3, 500});
    auto y = c.buf("y", buffer_kind::io_output, dtype::f32, {3, 500});
    auto z = c.buf("z", buffer_kind::io_output, dtype::f32, {3, 500});
    c.range[g] = {-8.0f, 8.0f};
    c.task(opcode::silu_mul, {g, u}, {y}, {});
    c.task(opcode::gelu, {g}, {z}, {});
    run_case(c, {1e-6, 1e-5});
  }
  SUBCASE("ALLREDUCE_SHARD over 1, 3 and 8 shards") {
    for (int n : {1, 3, 8}) {
      CAPTURE(n);
      case_builder c;
      std::vector<std::int32_t> in;
      const char* names[] = {"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7"};
      for (int i = 0; i < n; ++i) in.push_back(c.buf(names[i], buffer_kind::io_input, dtype::f32, {777}));
      auto y = c.buf("y", buffer_kind::io_output, dtype::f32, {777});
      c.task(opcode::allreduce_shard, in, {y}, {});
      run_case(c, {1e-6, 1e-6});
    }
  }
}

TEST_CASE("conformance: SOFTMAX and SAMPLE_ARGMAX") {
  for (std::int64_t dim : {7, 1000}) {
    CAPTURE(dim);
    case_builder c;
    auto x = c.buf("x", buffer_kind::io_input, dtype::f32, {4, dim});
    auto y = c.buf("y", buffer_kind::io_output, dtype::f32, {4, dim});
    c.range[x] = {-20.0f, 20.0f};
    c.task(opcode::softmax, {x}, {y}, {});
    run_case(c, {1e-7, 1e-5});
  }
  {
    // Ties: row 1 has its maximum at 17 and 900 (the lowest index wins); row 2 is constant.
    const std::int64_t V = 1000;
    case_builder c;
    auto x = c.buf("logits", buffer_kind::io_input, dtype::f32, {3, V});
    auto y = c.buf("ids", buffer_kind::io_output, dtype::i32, {3});
    std::mt19937_64 rng(seed());
    std::uniform_real_distribution<float> u(-5.0f, 5.0f);
    std::vector<float> v(static_cast<std::size_t>(3 * V));
    for (auto& e : v) e = u(rng);
    v[static_cast<std::size_t>(V + 17)] = 9.0f;
    v[static_cast<std::size_t>(V + 900)] = 9.0f;
    for (std::int64_t i = 0; i < V; ++i) v[static_cast<std::size_t>(2 * V + i)] = 0.5f;
    std::vector<std::byte> b(v.size() * 4);
    std::memcpy(b.data(), v.data(), b.size());
    c.init[x] = b;
    c.task(opcode::sample_argmax, {x}, {y}, {});
    run_case(c, {0, 0});
  }
}

TEST_CASE("conformance: ROPE, NeoX and interleaved, full and partial rotation") {
  // One ROPE task over T = 4 rows of `heads` heads at `positions`, with `p` (head_dim among them).
  const auto rope_case = [](std::int64_t heads, std::int64_t hd, std::vector<std::int32_t> positions,
                            const octo::ir::param_list& p, tolerance tol) {
    const std::int64_t T = 4;
    case_builder c;
    auto x = c.buf("x", buffer_kind::io_input, dtype::f32, {T, heads * hd});
    auto pos = c.buf("pos", buffer_kind::io_input, dtype::i32, {T});
    auto y = c.buf("y", buffer_kind::io_output, dtype::f32, {T, heads * hd});
    c.ints(pos, positions);
    c.task(opcode::rope, {x, pos}, {y}, p);
    run_case(c, tol);
  };
  for (int style : {0, 1}) {
    for (std::int64_t n_rot : {64, 32}) {
      CAPTURE(style);
      CAPTURE(n_rot);
      rope_case(3, 64, {0, 1, 17, 63},
                params({{param_key::head_dim, 64}, {param_key::theta, 10000.0}, {param_key::rope_style, style},
                        {param_key::n_rot, n_rot}}),
                {2e-5, 1e-4});
    }
  }
  // Long-context positions: angles of thousands of radians. Both sides compute the angle in f32 as
  // Hugging Face does; theta^x differs by an ulp or two between GPU and CPU, which at position 4095
  // moves the angle by ~5e-4 rad: the tolerance says so.
  rope_case(2, 128, {255, 1000, 2047, 4095}, params({{param_key::head_dim, 128}, {param_key::theta, 1000000.0}}),
            {2e-3, 0});
  for (int style : {0, 1}) {
    // Llama 3.1 8B's frequency scaling (factor 8, low / high frequency factors 1 / 4, 8192 positions
    // originally): the ramp's params as semantics::rope_ramp defines them, shaders/common/rope.glsl's
    // specialization constants on the device.
    CAPTURE(style);
    const double pi = std::acos(-1.0);
    rope_case(2, 128, {3, 1000, 2047, 4095},
              params({{param_key::head_dim, 128}, {param_key::theta, 500000.0}, {param_key::rope_style, style},
                      {param_key::rope_low_scale, 0.125}, {param_key::rope_ramp_slope, 8192.0 / (2 * pi * 3)},
                      {param_key::rope_ramp_offset, -1.0 / 3}}),
              {2e-3, 0});
  }
  // The linear scaling (every frequency divided by 4): the ramp at its low scale everywhere.
  rope_case(2, 64, {3, 100, 1000, 4095},
            params({{param_key::head_dim, 64}, {param_key::theta, 10000.0}, {param_key::rope_low_scale, 0.25},
                    {param_key::rope_ramp_slope, 0.0}, {param_key::rope_ramp_offset, 0.0}}),
            {2e-3, 0});
}

TEST_CASE("conformance: DEQUANT I8 / I4 with and without zero points") {
  for (dtype q : {dtype::i8, dtype::i4}) {
    for (bool zero : {false, true}) {
      CAPTURE(octo::ir::name(q));
      CAPTURE(zero);
      const std::int64_t n = 256, group = 32;
      case_builder c;
      auto qb = c.buf("q", buffer_kind::weight, q, {n});
      auto s = c.buf("scales", buffer_kind::weight, dtype::f32, {n / group});
      auto z = c.buf("zero", buffer_kind::weight, dtype::f32, {n / group});
      auto y = c.buf("y", buffer_kind::io_output, dtype::f32, {n});
      std::vector<std::int32_t> in{qb, s};
      if (zero) in.push_back(z);
      c.task(opcode::dequant, in, {y},
             params({{param_key::qdtype, static_cast<int>(q)}, {param_key::group, group}}));
      run_case(c, {1e-7, 1e-6});
    }
  }
}

TEST_CASE("conformance: KV_APPEND into F32, F16, BF16 and Q8_0 caches") {
  // Rows of 64, 96 (an odd number of Q8_0 blocks: rows start mid-word) and 128 elements; one and three
  // new rows; positions from the params and from globals. F16/BF16 must match the reference's rounding
  // bit for bit; Q8_0 may differ by one quant step where x / d lands within an ulp of a rounding tie (the
  // GPU's 1 / d need not be correctly rounded), so it is compared on decoded values within one step.
  struct shape {
    std::int64_t row, T, pos;
    std::uint32_t position;
  };
  for (const shape s : {shape{128, 3, 5, 0}, shape{96, 1, 2, 7}, shape{96, 3, 4, 0}, shape{64, 1, 0, 15}}) {
    for (dtype cd : {dtype::f32, dtype::f16, dtype::bf16, dtype::q8_0}) {
      CAPTURE(octo::ir::name(cd));
      CAPTURE(s.row);
      CAPTURE(s.T);
      CAPTURE(s.position);
      const std::int64_t S = 16;
      case_builder c;
      auto src = c.buf("k_new", buffer_kind::io_input, dtype::f32, {s.T, s.row});
      auto cache = c.buf("k_cache", buffer_kind::kv_cache, cd, {S, s.row});
      c.range[src] = {-3.0f, 3.0f};
      c.task(opcode::kv_append, {src, cache}, {cache}, params({{param_key::pos, static_cast<double>(s.pos)}}));
      // Slots outside the appended rows keep their prior (random) contents.
      run_case(c, cd == dtype::q8_0 ? tolerance{3.0 / 127 * 1.001, 0} : tolerance{0, 0}, s.position);
    }
  }
}

namespace {
/// One ATTENTION_TILE case: q [T, heads x hd] over caches of S slots, keys [kv_start, + kv_len) at q_pos,
/// run at globals.pos = position.
struct attention_shape {
  std::int64_t T, heads, kv_heads, hd, S, kv_start, kv_len, q_pos;
  int causal;
  std::uint32_t position;
};
octo::ir::param_list attention_params(const attention_shape& s, std::int64_t start, std::int64_t len) {
  return params({{param_key::head_dim, s.hd}, {param_key::kv_start, start}, {param_key::kv_len, len},
                 {param_key::scale, 1.0 / std::sqrt(double(s.hd))}, {param_key::n_heads, s.heads},
                 {param_key::n_kv_heads, s.kv_heads}, {param_key::causal, s.causal}, {param_key::q_pos, s.q_pos}});
}
/// The case's q [T, heads x hd] (f32), k and v caches [S, kv_heads x hd] of dtype kd, o like q.
struct attention_io {
  std::int32_t q, k, v, o;
};
attention_io attention_buffers(case_builder& c, std::int64_t T, std::int64_t heads, std::int64_t kv_heads,
                               std::int64_t hd, std::int64_t S, dtype kd) {
  return {c.buf("q", buffer_kind::io_input, dtype::f32, {T, heads * hd}),
          c.buf("k", buffer_kind::io_input, kd, {S, kv_heads * hd}), c.buf("v", buffer_kind::io_input, kd, {S, kv_heads * hd}),
          c.buf("o", buffer_kind::io_output, dtype::f32, {T, heads * hd})};
}
}  // namespace

TEST_CASE("conformance: ATTENTION_TILE (GQA, causal, cache dtypes) and split-K with ATTENTION_COMBINE") {
  struct shape {
    std::int64_t T, heads, kv_heads, hd, S, kv_start, kv_len, q_pos;
    int causal;
  };
  const shape shapes[] = {
      {1, 4, 2, 64, 40, 0, 20, 19, 1},    // decode
      {3, 4, 2, 64, 40, 0, 20, 17, 1},    // prefill rows see 18, 19, 20 keys
      {2, 8, 2, 128, 200, 0, 150, 0, 0},  // several chunks of keys, not causal
      {3, 2, 1, 64, 40, 10, 20, 5, 1},    // causal with no visible key: zeros
      {2, 2, 2, 80, 30, 3, 25, 0, 0},     // head_dim not a multiple of the workgroup
  };
  for (bool fallback : {false, true}) {
  if (fallback) ::setenv("OCTO_KERNELS_NO_SUBGROUP", "1", 1);
  CAPTURE(fallback);
  for (const auto& s : shapes) {
    for (dtype kd : {dtype::f32, dtype::f16}) {
      CAPTURE(s.T);
      CAPTURE(s.hd);
      CAPTURE(s.kv_len);
      CAPTURE(octo::ir::name(kd));
      case_builder c;
      const auto [q, k, v, o] = attention_buffers(c, s.T, s.heads, s.kv_heads, s.hd, s.S, kd);
      c.range[q] = {-2.0f, 2.0f};
      auto base = [&](std::int64_t start, std::int64_t len) {
        return params({{param_key::head_dim, s.hd}, {param_key::kv_start, start}, {param_key::kv_len, len},
                       {param_key::scale, 1.0 / std::sqrt(double(s.hd))}, {param_key::n_heads, s.heads},
                       {param_key::n_kv_heads, s.kv_heads}, {param_key::causal, s.causal}, {param_key::q_pos, s.q_pos}});
      };
      c.task(opcode::attention_tile, {q, k, v}, {o}, base(s.kv_start, s.kv_len));
      // The same attention split in three KV blocks, merged.
      std::vector<std::int32_t> parts;
      std::vector<octo::ir::wait> waits;
      const std::int64_t b1 = s.kv_len / 3, b2 = 2 * s.kv_len / 3;
      const std::int64_t starts[] = {s.kv_start, s.kv_start + b1, s.kv_start + b2};
      const std::int64_t lens[] = {b1, b2 - b1, s.kv_len - b2};
      for (int i = 0; i < 3; ++i) {
        const char* names[] = {"part0", "part1", "part2"};
        auto pbuf = c.buf(names[i], buffer_kind::activation, dtype::f32, {s.T, s.heads, s.hd + 2});
        auto pl = base(starts[i], lens[i]);
        pl.set(param_key::partial, 1);
        waits.push_back({c.task(opcode::attention_tile, {q, k, v}, {pbuf}, pl), 1});
        parts.push_back(pbuf);
      }
      auto o2 = c.buf("o_split", buffer_kind::io_output, dtype::f32, {s.T, s.heads * s.hd});
      c.task(opcode::attention_combine, parts, {o2}, {}, waits);
      run_case(c, {2e-5, 1e-4});
    }
  }
  ::unsetenv("OCTO_KERNELS_NO_SUBGROUP");
  }
}

TEST_CASE("conformance: ATTENTION_TILE at decode and prefill shapes (kv lengths, GQA 1/2/3/7, head_dims, partials)") {
  // The kernel splits a row's keys over groups (subgroups; the whole workgroup in the fallback) in
  // blocks of the group's width and merges the groups at the end: kv lengths of 1, below, at and past
  // a block, not a multiple of any width, caches large enough for the most groups; GQA ratios 1, 2, 3, 7;
  // head_dim 64 and 128 (16-byte K loads), 20 and 17 (the scalar paths); causal prefill rows; positions
  // from globals; every cache dtype; the same attention split in three partials and merged.
  using shape = attention_shape;
  const shape shapes[] = {
      {1, 14, 2, 64, 700, 0, 40, 39, 1, 600},    // Qwen2.5-0.5B decode at position 640
      {1, 12, 2, 128, 300, 0, 257, 256, 1, 0},   // 1.5B layout, 257 keys
      {1, 2, 2, 64, 50, 0, 33, 32, 1, 0},        // GQA ratio 1, one key past a block
      {1, 9, 3, 64, 1100, 0, 30, 29, 1, 1000},   // SmolLM2-135M's layout (GQA 3) at position 1029
      {1, 7, 1, 128, 4096, 0, 1, 0, 1, 0},       // one key in a large cache: most groups see nothing
      {1, 4, 2, 64, 100, 5, 7, 11, 1, 3},        // window from kv_start 5
      {5, 14, 2, 64, 120, 0, 100, 95, 1, 0},     // prefill rows see 96 .. 100 keys
      {6, 4, 2, 128, 64, 0, 6, 0, 1, 0},         // prefill from position 0: rows see 1 .. 6 keys
      {2, 4, 4, 20, 90, 0, 77, 0, 0, 0},         // head_dim 20: scalar loads for 16-bit K
      {2, 2, 1, 17, 40, 0, 39, 0, 0, 0},         // odd head_dim
      // T >= 8 (full outputs): the row-block prefill kernel (attention_rows.comp) on subgroup devices.
      {37, 7, 1, 64, 80, 3, 37, 0, 1, 2},        // 37 rows (a partial block), GQA 7, window from 3, position 2
      {130, 14, 2, 128, 200, 4, 130, 0, 1, 5},   // 130 rows, head_dim 128, key tiles past the diagonal skipped
      {8, 4, 2, 64, 60, 0, 30, 22, 1, 0},        // 8 rows at q_pos 22
      {9, 2, 1, 17, 40, 0, 35, 0, 0, 0},         // non-causal, odd head_dim
      {12, 4, 4, 20, 30, 6, 10, 0, 1, 0},        // kv_start 6 past q_pos + t for rows 0..5: those output 0
      {20, 4, 2, 80, 90, 0, 70, 50, 1, 0},       // head_dim 80: a row's 4-dim groups do not divide the workgroup
  };
  for (bool fallback : {false, true}) {
    if (fallback) ::setenv("OCTO_KERNELS_NO_SUBGROUP", "1", 1);
    CAPTURE(fallback);
    for (const auto& s : shapes) {
      for (dtype kd : {dtype::f32, dtype::f16, dtype::bf16, dtype::q8_0}) {
        if (kd == dtype::q8_0 && s.kv_heads * s.hd % 32 != 0) continue;  // Q8_0 caches need whole blocks per row
        if (sampled_cache_out(kd)) continue;
        CAPTURE(s.T);
        CAPTURE(s.heads);
        CAPTURE(s.kv_heads);
        CAPTURE(s.hd);
        CAPTURE(s.kv_len);
        CAPTURE(s.position);
        CAPTURE(octo::ir::name(kd));
        case_builder c;
        const auto [q, k, v, o] = attention_buffers(c, s.T, s.heads, s.kv_heads, s.hd, s.S, kd);
        c.range[q] = {-2.0f, 2.0f};
        c.range[k] = {-2.0f, 2.0f};
        auto base = [&](std::int64_t start, std::int64_t len) { return attention_params(s, start, len); };
        c.task(opcode::attention_tile, {q, k, v}, {o}, base(s.kv_start, s.kv_len));
        std::vector<std::int32_t> parts;
        std::vector<octo::ir::wait> waits;
        const std::int64_t b1 = s.kv_len / 3, b2 = 2 * s.kv_len / 3;
        const std::int64_t starts[] = {s.kv_start, s.kv_start + b1, s.kv_start + b2};
        const std::int64_t lens[] = {b1, b2 - b1, s.kv_len - b2};
        for (int i = 0; i < 3; ++i) {
          const char* names[] = {"part0", "part1", "part2"};
          auto pbuf = c.buf(names[i], buffer_kind::io_output, dtype::f32, {s.T, s.heads, s.hd + 2});
          auto pl = base(starts[i], lens[i]);
          pl.set(param_key::partial, 1);
          waits.push_back({c.task(opcode::attention_tile, {q, k, v}, {pbuf}, pl), 1});
          parts.push_back(pbuf);
        }
        auto o2 = c.buf("o_split", buffer_kind::io_output, dtype::f32, {s.T, s.heads * s.hd});
        c.task(opcode::attention_combine, parts, {o2}, {}, waits);
        run_case(c, {2e-5, 1e-4}, s.position);
      }
    }
    ::unsetenv("OCTO_KERNELS_NO_SUBGROUP");
  }
}

TEST_CASE("conformance: prefill ATTENTION_TILE at the default precision (tensor cores where the device has them)") {
  // shaders/attention_coop.comp runs where the device has NV cooperative matrices and the VM's precision
  // is `fast` (16-bit caches, head_dim % 16 == 0, up to 128): Q and P rounded to f16, f32 sums
  // (docs/precision.md). Against the reference VM (f32) within 5e-3: with q, k in [-1, 1] a score moves
  // by about 1e-3 from Q's rounding and a probability by 5e-4 relative from P's. Rows per workgroup 16,
  // 32 and 64 (OCTO_ATTENTION_ROWS), keys split over 1, 2 or 4 subgroups of each 16 rows
  // (OCTO_ATTENTION_SPLIT), the next key tile loaded during the products or not (OCTO_ATTENTION_PREFETCH),
  // the softmax in registers or through shared memory (OCTO_ATTENTION_REGS; registers only where the VM's
  // probe found NVIDIA's fragment layout, and never with a key split), partial blocks of rows and of key
  // tiles, GQA 1/2/7, windows from kv_start, positions from globals, rows that see no key (output 0),
  // non-causal rows. Elsewhere (lavapipe) the same cases run attention_rows at its f32 precision, once
  // (the knobs are attention_coop's).
  using shape = attention_shape;
  const shape shapes[] = {
      {16, 14, 2, 64, 40, 0, 16, 0, 1, 0},        // one block of rows, from position 0
      {37, 7, 1, 64, 80, 3, 37, 0, 1, 2},         // GQA 7, window from 3, position 2
      {130, 12, 2, 128, 200, 4, 130, 0, 1, 5},    // head_dim 128, 130 rows: partial row blocks and key tiles
      {70, 4, 4, 32, 150, 0, 100, 30, 1, 0},      // rows at q_pos 30: 31 .. 100 keys
      {33, 2, 1, 80, 90, 0, 77, 0, 0, 0},         // non-causal, head_dim 80
      {20, 4, 4, 32, 30, 6, 10, 0, 1, 0},         // kv_start 6 past q_pos + t for rows 0..5: those output 0
      {200, 2, 2, 96, 260, 0, 200, 0, 1, 40},     // head_dim 96, position 40
  };
  const bool coop = gpu_fast().device().cooperative_matrix_nv;
  for (const char* mode : {"64 0 1 1", "32 0 1 1", "16 0 1 1", "64 1 1 1", "32 1 1 1", "64 0 1 0", "32 1 1 0", "16 0 4 0",
                           "32 0 2 0", "64 1 2 0", "16 1 2 0", "32 0 4 0"}) {
    std::istringstream in(mode);
    std::string rows, prefetch, split, regs;
    in >> rows >> prefetch >> split >> regs;
    if (!coop && std::string_view(mode) != "64 0 1 1") continue;
    ::setenv("OCTO_ATTENTION_ROWS", rows.c_str(), 1);
    ::setenv("OCTO_ATTENTION_PREFETCH", prefetch.c_str(), 1);
    ::setenv("OCTO_ATTENTION_SPLIT", split.c_str(), 1);
    ::setenv("OCTO_ATTENTION_REGS", regs.c_str(), 1);
    struct unset_on_exit {
      ~unset_on_exit() {
        ::unsetenv("OCTO_ATTENTION_ROWS");
        ::unsetenv("OCTO_ATTENTION_PREFETCH");
        ::unsetenv("OCTO_ATTENTION_SPLIT");
        ::unsetenv("OCTO_ATTENTION_REGS");
      }
    } unset_knobs;
    CAPTURE(rows);
    CAPTURE(prefetch);
    CAPTURE(split);
    CAPTURE(regs);
    CAPTURE(gpu_fast().device().cooperative_matrix_mma_layout);
    for (const auto& s : shapes)
      for (dtype kd : {dtype::f16, dtype::bf16}) {
        CAPTURE(s.T);
        CAPTURE(s.heads);
        CAPTURE(s.kv_heads);
        CAPTURE(s.hd);
        CAPTURE(s.position);
        CAPTURE(octo::ir::name(kd));
        case_builder c;
        const auto [q, k, v, o] = attention_buffers(c, s.T, s.heads, s.kv_heads, s.hd, s.S, kd);
        c.task(opcode::attention_tile, {q, k, v}, {o}, attention_params(s, s.kv_start, s.kv_len));
        run_case(c, {5e-3, 5e-3}, s.position, &gpu_fast());
      }
  }
}

TEST_CASE("conformance: SAMPLE_ARGMAX over a vocabulary row (vector loads, ties, NaN, -inf)") {
  // 151936 logits (the 16-byte path of a large workgroup) and 151935 (the scalar path). Row 0: random
  // with the maximum tied at a late and an early index; row 1: NaNs everywhere but two equal values; row
  // 2: all -inf but one NaN (index 0 wins: the lowest non-NaN); row 3: NaN only (0).
  for (std::int64_t V : {151936, 151935}) {
    CAPTURE(V);
    case_builder c;
    auto x = c.buf("logits", buffer_kind::io_input, dtype::f32, {4, V});
    auto y = c.buf("ids", buffer_kind::io_output, dtype::i32, {4});
    std::mt19937_64 rng(seed());
    std::uniform_real_distribution<float> u(-30.0f, 30.0f);
    const auto at = [&](std::int64_t r, std::int64_t i) { return static_cast<std::size_t>(r * V + i); };
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    std::vector<float> v(static_cast<std::size_t>(4 * V));
    for (std::int64_t i = 0; i < V; ++i) {
      v[at(0, i)] = u(rng);
      v[at(1, i)] = nan;
      v[at(2, i)] = -inf;
      v[at(3, i)] = nan;
    }
    v[at(0, V - 3)] = 31.0f;
    v[at(0, 4099)] = 31.0f;
    v[at(1, 70001)] = -5.0f;
    v[at(1, 150000)] = -5.0f;
    v[at(2, 1)] = nan;
    std::vector<std::byte> b(v.size() * 4);
    std::memcpy(b.data(), v.data(), b.size());
    c.init[x] = b;
    c.task(opcode::sample_argmax, {x}, {y}, {});
    run_case(c, {0, 0});
  }
}

TEST_CASE("conformance: SAMPLE_ARGMAX split over workgroups, three steps of one recording (the arrival counters reset)") {
  // A vocabulary row is read by several workgroups, the last to arrive merging their parts through the
  // task's scratch (shaders/argmax.comp SPLIT): each step must find its counters back at 0. Against the
  // rule computed here (lowest index of the largest non-NaN value, 0 for a row of NaNs), on new logits
  // each step: the maximum in the first, a middle and the last part, tied across parts, and a row of
  // NaNs but one value. 16385 logits take three parts, the last of one logit.
  const auto want = [](std::span<const float> row) {
    std::int32_t best = -1;
    for (std::size_t i = 0; i < row.size(); ++i)
      if (!std::isnan(row[i]) && (best < 0 || row[i] > row[static_cast<std::size_t>(best)])) best = static_cast<std::int32_t>(i);
    return best < 0 ? 0 : best;
  };
  for (const char* split : {"1", "0"})  // 0: the single workgroup a row (OCTO_ARGMAX_SPLIT)
  for (std::int64_t V : {151936, 151935, 16385}) {
    CAPTURE(split);
    CAPTURE(V);
    ::setenv("OCTO_ARGMAX_SPLIT", split, 1);
    const std::int64_t R = 3;
    case_builder c;
    auto x = c.buf("logits", buffer_kind::io_input, dtype::f32, {R, V});
    auto y = c.buf("ids", buffer_kind::io_output, dtype::i32, {R});
    c.task(opcode::sample_argmax, {x}, {y}, {});
    auto& vm = gpu();
    vm.load(c.p);
    ::unsetenv("OCTO_ARGMAX_SPLIT");
    std::mt19937_64 rng(seed() ^ static_cast<std::uint64_t>(V));
    std::uniform_real_distribution<float> u(-30.0f, 30.0f);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (int step = 0; step < 3; ++step) {
      CAPTURE(step);
      std::vector<float> v(static_cast<std::size_t>(R * V));
      for (auto& e : v) e = u(rng);
      const auto at = [&](std::int64_t r, std::int64_t i) -> float& { return v[static_cast<std::size_t>(r * V + i)]; };
      const std::int64_t places[3] = {5, V / 2 + 3, V - 1};
      at(0, places[step]) = 40.0f;                      // the maximum in part 0, a middle part, the last
      at(1, places[(step + 1) % 3]) = 35.0f;            // tied across parts: the lower index wins
      at(1, places[(step + 2) % 3]) = 35.0f;
      for (std::int64_t i = 0; i < V; ++i) at(2, i) = nan;
      at(2, places[step]) = -1.0f;
      std::vector<std::byte> b(v.size() * 4);
      std::memcpy(b.data(), v.data(), b.size());
      vm.write_bytes("logits", b);
      vm.execute();
      const auto got = vm.read_bytes("ids");
      REQUIRE(got.size() == static_cast<std::size_t>(R) * 4);
      for (std::int64_t r = 0; r < R; ++r) {
        CAPTURE(r);
        std::int32_t g = 0;
        std::memcpy(&g, got.data() + r * 4, 4);
        CHECK(g == want(std::span<const float>(v).subspan(static_cast<std::size_t>(r * V), static_cast<std::size_t>(V))));
      }
    }
    octo_test::check_clean(vm);
  }
  ::unsetenv("OCTO_ARGMAX_SPLIT");
}

TEST_CASE("conformance: NOP records nothing and the program still runs") {
  case_builder c;
  auto x = c.buf("x", buffer_kind::io_input, dtype::f32, {8});
  auto y = c.buf("y", buffer_kind::io_output, dtype::f32, {8});
  auto n = c.task(opcode::nop, {}, {}, {});
  c.task(opcode::copy, {x}, {y}, {}, {{n, 1}});
  run_case(c, {0, 0});
}

TEST_CASE("conformance: per-token values come from globals (one recording serves every position)") {
  // KV_APPEND at pos 2 + globals.pos, then attention over kv_len 3 + globals.pos with q_pos 2 + globals.pos.
  for (std::uint32_t position : {0u, 1u, 9u}) {
    CAPTURE(position);
    const std::int64_t S = 16, heads = 4, kv_heads = 2, hd = 64, T = 1;
    case_builder c;
    auto q = c.buf("q", buffer_kind::io_input, dtype::f32, {T, heads * hd});
    auto kn = c.buf("k_new", buffer_kind::io_input, dtype::f32, {T, kv_heads * hd});
    auto vn = c.buf("v_new", buffer_kind::io_input, dtype::f32, {T, kv_heads * hd});
    auto k = c.buf("k_cache", buffer_kind::kv_cache, dtype::f16, {S, kv_heads * hd});
    auto v = c.buf("v_cache", buffer_kind::kv_cache, dtype::f16, {S, kv_heads * hd});
    auto o = c.buf("o", buffer_kind::io_output, dtype::f32, {T, heads * hd});
    auto ck = c.task(opcode::kv_append, {kn, k}, {k}, params({{param_key::pos, 2}}));
    auto cv = c.task(opcode::kv_append, {vn, v}, {v}, params({{param_key::pos, 2}}));
    c.task(opcode::attention_tile, {q, k, v}, {o},
           params({{param_key::head_dim, hd}, {param_key::kv_start, 0}, {param_key::kv_len, 3},
                   {param_key::scale, 1.0 / std::sqrt(double(hd))}, {param_key::n_heads, heads}, {param_key::n_kv_heads, kv_heads},
                   {param_key::causal, 1}, {param_key::q_pos, 2}}),
           {{ck, 1}, {cv, 1}});
    run_case(c, {2e-5, 1e-4}, position);
  }
}

namespace {

/// One decode step of a loaded program at `pos`: fresh random `inputs` on both VMs, then output `o` of
/// the Vulkan VM within atol + rtol |x| of the reference VM's.
void decode_step_matches(const case_builder& c, octo::vm::reference_vm& ref, octo::vm::vulkan_vm& vm,
                         std::mt19937_64& rng, std::int64_t pos, std::initializer_list<std::int32_t> inputs,
                         std::int32_t o, double atol, double rtol) {
  for (auto id : inputs) {
    const auto bytes = random_bytes(c.p.buffers[static_cast<std::size_t>(id)], rng, -2.0f, 2.0f);
    ref.write_bytes(id, bytes);
    vm.write_bytes(std::string_view(c.p.buffers[static_cast<std::size_t>(id)].name), bytes);
  }
  ref.set_position(pos);
  vm.set_position(static_cast<std::uint32_t>(pos));
  ref.run();
  vm.execute();
  const auto want = ref.read_f32(o);
  const auto got = vm.read_f32(std::string_view(c.p.buffers[static_cast<std::size_t>(o)].name));
  REQUIRE(got.size() == want.size());
  int bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(std::abs(double(got[i]) - double(want[i])) <= atol + rtol * std::abs(double(want[i])))) {
      if (++bad <= 3) CHECK_MESSAGE(false, "o[" << i << "]: gpu " << got[i] << ", reference " << want[i]);
    }
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("conformance: decode steps of one recording (flash-decoding chunks, arrival counters, cache types)") {
  // forced: by default split-key runs up to 128 keys (kernels/attention.cpp)
  const octo_test::scoped_env flash("OCTO_ATTENTION", "flash");
  // The decoder's shape: KV_APPEND of this step's row at globals.pos, then one decode row of attention
  // over every slot up to it. One program, loaded once, runs at many positions in a row, so a chunk
  // merge that left its arrival counter set would corrupt the next step. Caches hold random contents
  // before the position and NaN from it on (the same on both VMs); positions: 0 (one key), chunk
  // boundaries (64-key chunks), mid-cache, the cache's last slot, and back to short contexts. 16-bit
  // caches take the flash-decoding kernel (shaders/attention_decode.comp), F32 and Q8_0 the split-key
  // one; the rows with a chunk cap (OCTO_ATTENTION_CHUNKS) make a chunk take several passes of keys (a
  // context past 8k slots does). The last two move the long form's switch (OCTO_ATTENTION_LONG_KEYS,
  // OCTO_ATTENTION_WIDE_KEYS: kernels/attention.cpp) to 256 keys, so past it their chunks take pipelined
  // passes (PIPE) and merge 16 chunks a round trip, over more than 16 chunks: in registers (0.5B) and
  // through shared memory (1.5B).
  struct shape {
    std::int64_t heads, kv_heads, hd, S;
    const char* max_chunks;  // OCTO_ATTENTION_CHUNKS, or nullptr
    const char* long_keys = nullptr;  // OCTO_ATTENTION_LONG_KEYS and OCTO_ATTENTION_WIDE_KEYS, or nullptr
  };
  const shape shapes[] = {
      {14, 2, 64, 4500, nullptr},  // Qwen2.5-0.5B: GQA 7, 71 chunks at the end
      {12, 2, 128, 300, nullptr},  // 1.5B: GQA 6
      {4, 4, 80, 200, nullptr},    // GQA 1, head_dim 80 (its 4-dim units do not tile the workgroup: split-key)
      {7, 1, 128, 700, nullptr},   // one KV head, GQA 7
      {8, 2, 32, 300, nullptr},    // short rows: 16 key groups of the V phase
      {6, 3, 16, 150, nullptr},    // head_dim 16 (a row of 48: no Q8_0)
      {16, 2, 256, 200, nullptr},  // GQA 8, head_dim 256 (256 invocations, 4 key groups; two outputs each)
      {18, 2, 64, 300, nullptr},   // GQA 9: 256 invocations (the softmax's 16 lanes a head)
      {14, 2, 64, 1400, "2"},      // two chunks of up to eleven 64-key passes (online softmax across passes)
      {12, 2, 128, 700, "2"},
      {14, 2, 64, 2600, "40", "256"},  // 21 chunks of two passes at the end
      {12, 2, 128, 2600, "40", "256"},
  };
  std::mt19937_64 rng(seed() ^ 0x5eedull);
  INFO("seed " << seed() << " (OCTO_CONFORMANCE_SEED replays it)");
  struct unset_chunks_on_exit {
    ~unset_chunks_on_exit() {
      for (const char* v : {"OCTO_ATTENTION_CHUNKS", "OCTO_ATTENTION_LONG_KEYS", "OCTO_ATTENTION_WIDE_KEYS"}) ::unsetenv(v);
    }
  } unset_chunks;
  for (const auto& s : shapes)
    for (dtype kd : {dtype::f32, dtype::f16, dtype::bf16, dtype::q8_0}) {
      if (kd == dtype::q8_0 && s.kv_heads * s.hd % 32 != 0) continue;  // Q8_0 caches need whole blocks per row
      if (s.max_chunks && kd != dtype::f16 && kd != dtype::bf16) continue;  // the cap is the flash kernel's
      if (sampled_cache_out(kd)) continue;
      if (s.max_chunks) ::setenv("OCTO_ATTENTION_CHUNKS", s.max_chunks, 1);
      else ::unsetenv("OCTO_ATTENTION_CHUNKS");
      for (const char* v : {"OCTO_ATTENTION_LONG_KEYS", "OCTO_ATTENTION_WIDE_KEYS"})
        if (s.long_keys) ::setenv(v, s.long_keys, 1);
        else ::unsetenv(v);
      // The long form is one of the kernels the default (adaptive) plan records: split-key up to 128 keys.
      if (s.long_keys) ::unsetenv("OCTO_ATTENTION");
      else ::setenv("OCTO_ATTENTION", "flash", 1);
      CAPTURE(s.S);
      CAPTURE(s.heads);
      CAPTURE(s.kv_heads);
      CAPTURE(s.hd);
      CAPTURE(octo::ir::name(kd));
      const std::int64_t kvw = s.kv_heads * s.hd;
      case_builder c;
      auto q = c.buf("q", buffer_kind::io_input, dtype::f32, {1, s.heads * s.hd});
      auto kn = c.buf("k_new", buffer_kind::io_input, dtype::f32, {1, kvw});
      auto vn = c.buf("v_new", buffer_kind::io_input, dtype::f32, {1, kvw});
      auto k = c.buf("k_cache", buffer_kind::kv_cache, kd, {s.S, kvw});
      auto v = c.buf("v_cache", buffer_kind::kv_cache, kd, {s.S, kvw});
      auto o = c.buf("o", buffer_kind::io_output, dtype::f32, {1, s.heads * s.hd});
      auto ck = c.task(opcode::kv_append, {kn, k}, {k}, params({{param_key::pos, 0}}));
      auto cv = c.task(opcode::kv_append, {vn, v}, {v}, params({{param_key::pos, 0}}));
      c.task(opcode::attention_tile, {q, k, v}, {o},
             params({{param_key::head_dim, s.hd}, {param_key::kv_start, 0}, {param_key::kv_len, 1},
                     {param_key::scale, 1.0 / std::sqrt(double(s.hd))}, {param_key::n_heads, s.heads},
                     {param_key::n_kv_heads, s.kv_heads}, {param_key::causal, 1}, {param_key::q_pos, 0}}),
             {{ck, 1}, {cv, 1}});
      octo::vm::reference_vm ref(c.p);
      auto& vm = gpu();
      vm.load(c.p);
      std::vector<std::vector<std::byte>> cache_init;
      for (auto id : {k, v})
        cache_init.push_back(random_bytes(c.p.buffers[static_cast<std::size_t>(id)], rng, -2.0f, 2.0f));
      const std::int64_t last = s.S - 1;
      for (std::int64_t pos : {std::int64_t{0}, std::int64_t{1}, std::int64_t{63}, std::int64_t{64}, std::int64_t{255},
                               std::int64_t{256}, std::int64_t{513}, last / 2 + 1, last - 1, last, std::int64_t{256},
                               std::int64_t{2}}) {
        if (pos > last) continue;  // past the cache (the short ones)
        CAPTURE(pos);
        // The slots before the position hold the random contents; the ones from it on hold all-ones
        // bytes (NaN in every cache type; the step appends its own row at the position). A kernel may
        // load past the visible keys (a first pass guessed ahead of the position would: results
        // 2026-11-29-h200-l2, attn-first-pass.diff), never let them reach the output.
        for (std::size_t b = 0; b < 2; ++b) {
          const auto id = b == 0 ? k : v;
          auto bytes = cache_init[b];
          const std::size_t row = bytes.size() / static_cast<std::size_t>(s.S);
          std::fill(bytes.begin() + static_cast<std::ptrdiff_t>(row * static_cast<std::size_t>(pos)), bytes.end(),
                    std::byte{0xff});
          ref.write_bytes(id, bytes);
          vm.write_bytes(std::string_view(c.p.buffers[static_cast<std::size_t>(id)].name), bytes);
        }
        // Q8_0: the two VMs' appended rows may differ by one quant step at a rounding tie.
        decode_step_matches(c, ref, vm, rng, pos, {q, kn, vn}, o, kd == dtype::q8_0 ? 2e-3 : 2e-5,
                            kd == dtype::q8_0 ? 1e-2 : 1e-4);
      }
      vm.set_position(0);
      octo_test::check_clean(vm);
    }
}

TEST_CASE("conformance: flash decode attention sized on the device (one recording, indirect dispatch)") {
  // The flash-decoding kernel's workgroups follow the keys visible at the position: vm_dispatch_size
  // computes them at the start of each run, the task dispatches indirectly. One program, loaded once,
  // runs at positions around the 64-key chunk boundaries, mid-cache, the full cache and back to one key;
  // each matches the reference VM. Then the same with OCTO_INDIRECT=0 (the whole cache's workgroups,
  // dispatched directly) as the comparison, and the stats tell the two recordings apart.
  // Then the default choice (OCTO_ATTENTION=auto) with its switch moved to 300 keys: the split-key and
  // the flash kernel both recorded, the device running the one its range of keys names at every step.
  // Last, the 1.5B's group (GQA 6, head_dim 128), whose flash kernel has 256 invocations up to a number
  // of keys (moved to 600) and 128 past it: three kernels recorded, one run at each step.
  struct unset_on_exit {
    ~unset_on_exit() {
      ::unsetenv("OCTO_ATTENTION");
      ::unsetenv("OCTO_INDIRECT");
      ::unsetenv("OCTO_ATTENTION_SWITCH");
      ::unsetenv("OCTO_ATTENTION_WIDE_KEYS");
    }
  } unset_env;
  std::mt19937_64 rng(seed() ^ 0x1d1ull);
  INFO("seed " << seed() << " (OCTO_CONFORMANCE_SEED replays it)");
  const std::int64_t kv_heads = 2, S = 1100;
  for (const char* indirect : {"1", "0", "auto", "wide"}) {
    CAPTURE(indirect);
    const bool wide = indirect[0] == 'w', adaptive = indirect[0] == 'a' || wide;
    const std::int64_t heads = wide ? 12 : 14, hd = wide ? 128 : 64, kvw = kv_heads * hd;
    ::setenv("OCTO_ATTENTION", adaptive ? "auto" : "flash", 1);
    ::setenv("OCTO_ATTENTION_SWITCH", "300", 1);
    ::setenv("OCTO_ATTENTION_WIDE_KEYS", "600", 1);
    ::setenv("OCTO_INDIRECT", adaptive ? "1" : indirect, 1);
    case_builder c;
    auto q = c.buf("q", buffer_kind::io_input, dtype::f32, {1, heads * hd});
    auto kn = c.buf("k_new", buffer_kind::io_input, dtype::f32, {1, kvw});
    auto vn = c.buf("v_new", buffer_kind::io_input, dtype::f32, {1, kvw});
    auto k = c.buf("k_cache", buffer_kind::kv_cache, dtype::f16, {S, kvw});
    auto v = c.buf("v_cache", buffer_kind::kv_cache, dtype::f16, {S, kvw});
    auto o = c.buf("o", buffer_kind::io_output, dtype::f32, {1, heads * hd});
    auto ck = c.task(opcode::kv_append, {kn, k}, {k}, params({{param_key::pos, 0}}));
    auto cv = c.task(opcode::kv_append, {vn, v}, {v}, params({{param_key::pos, 0}}));
    c.task(opcode::attention_tile, {q, k, v}, {o},
           params({{param_key::head_dim, hd}, {param_key::kv_start, 0}, {param_key::kv_len, 1},
                   {param_key::scale, 1.0 / std::sqrt(double(hd))}, {param_key::n_heads, heads}, {param_key::n_kv_heads, kv_heads},
                   {param_key::causal, 1}, {param_key::q_pos, 0}}),
           {{ck, 1}, {cv, 1}});
    octo::vm::reference_vm ref(c.p);
    auto& vm = gpu();
    vm.load(c.p);
    const auto s = vm.stats();
    CHECK(s.task_dispatches == (wide ? 5u : adaptive ? 4u : 3u));  // the adaptive attention task: two or three kernels
    // Of which the attention's kernels for other ranges of keys: three tasks run one kernel each a step.
    CHECK(s.exclusive_dispatches == (wide ? 2u : adaptive ? 1u : 0u));
    CHECK(s.task_dispatches - s.exclusive_dispatches == 3u);
    CHECK(s.indirect_dispatches == (wide ? 3u : adaptive ? 2u : indirect[0] == '1' ? 1u : 0u));
    // vm_dispatch_size is one more dispatch (not a task's) where there is an indirect launch.
    CHECK(s.dispatches == s.task_dispatches + (s.indirect_dispatches > 0 ? 1u : 0u));
    for (auto id : {k, v}) {
      const auto bytes = random_bytes(c.p.buffers[static_cast<std::size_t>(id)], rng, -2.0f, 2.0f);
      ref.write_bytes(id, bytes);
      vm.write_bytes(std::string_view(c.p.buffers[static_cast<std::size_t>(id)].name), bytes);
    }
    for (std::int64_t pos : {std::int64_t{1}, std::int64_t{63}, std::int64_t{64}, std::int64_t{255}, std::int64_t{256}, std::int64_t{257},
                             std::int64_t{298}, std::int64_t{299}, std::int64_t{300}, std::int64_t{598}, std::int64_t{599},
                             std::int64_t{600}, std::int64_t{700}, S - 1, std::int64_t{0}, std::int64_t{299}, std::int64_t{650}}) {
      CAPTURE(pos);
      decode_step_matches(c, ref, vm, rng, pos, {q, kn, vn}, o, 2e-5, 1e-4);
    }
    CHECK(vm.stats().recordings == s.recordings);  // every position ran the one recording
    vm.set_position(0);
    octo_test::check_clean(vm);
  }
}

TEST_CASE("kernels refuse what they cannot run with one error naming the task") {
  auto expect_error = [](case_builder& c, const std::string& part) {
    std::string what;
    try {
      gpu().load(c.p);
    } catch (const octo::error& e) {
      what = e.what();
    }
    INFO("error: " << what);
    if (std::getenv("OCTO_CONFORMANCE_VERBOSE")) MESSAGE(what);
    CHECK(what.find("task 0") != std::string::npos);
    CHECK(what.find(part) != std::string::npos);
    CHECK(what.find('\n') == std::string::npos);
  };
  SUBCASE("a GEMV weight dtype without a kernel") {
    case_builder c;
    auto x = c.buf("x", buffer_kind::io_input, dtype::f32, {1, 64});
    auto w = c.buf("w", buffer_kind::weight, dtype::i8, {8, 64});
    auto y = c.buf("y", buffer_kind::io_output, dtype::f32, {1, 8});
    c.task(opcode::gemv_tile, {x, w}, {y}, params({{param_key::K, 64}, {param_key::N_tile, 8}, {param_key::n_off, 0}}));
    expect_error(c, "I8");
  }
  SUBCASE("a tile past the weight's rows") {
    case_builder c;
    auto x = c.buf("x", buffer_kind::io_input, dtype::f32, {1, 48});
    auto w = c.buf("w", buffer_kind::weight, dtype::f32, {8, 48});
    auto y = c.buf("y", buffer_kind::io_output, dtype::f32, {1, 9});
    c.task(opcode::gemv_tile, {x, w}, {y}, params({{param_key::K, 48}, {param_key::N_tile, 9}, {param_key::n_off, 0}}));
    expect_error(c, "N_tile");
  }
  SUBCASE("K not a whole number of quantization blocks") {
    case_builder c;
    auto x = c.buf("x", buffer_kind::io_input, dtype::f32, {1, 48});
    auto w = c.buf("w", buffer_kind::weight, dtype::q4_0, {8, 48});
    auto y = c.buf("y", buffer_kind::io_output, dtype::f32, {1, 8});
    c.task(opcode::gemv_tile, {x, w}, {y}, params({{param_key::K, 48}, {param_key::N_tile, 8}, {param_key::n_off, 0}}));
    expect_error(c, "block");
  }
  SUBCASE("KV_APPEND past the end of the cache") {
    case_builder c;
    auto src = c.buf("k_new", buffer_kind::io_input, dtype::f32, {3, 8});
    auto cache = c.buf("k_cache", buffer_kind::kv_cache, dtype::f32, {4, 8});
    c.task(opcode::kv_append, {src, cache}, {cache}, params({{param_key::pos, 2}}));
    expect_error(c, "exceeds");
  }
  SUBCASE("an EMBED table of integers") {
    case_builder c;
    auto ids = c.buf("ids", buffer_kind::io_input, dtype::i32, {2});
    auto table = c.buf("table", buffer_kind::weight, dtype::i32, {4, 8});
    auto y = c.buf("y", buffer_kind::io_output, dtype::f32, {2, 8});
    c.task(opcode::embed, {ids, table}, {y}, params({{param_key::hidden, 8}}));
    expect_error(c, "I32");
  }
  SUBCASE("attention over more KV slots than the cache has") {
    case_builder c;
    auto q = c.buf("q", buffer_kind::io_input, dtype::f32, {1, 64});
    auto k = c.buf("k", buffer_kind::io_input, dtype::f32, {8, 64});
    auto v = c.buf("v", buffer_kind::io_input, dtype::f32, {8, 64});
    auto o = c.buf("o", buffer_kind::io_output, dtype::f32, {1, 64});
    c.task(opcode::attention_tile, {q, k, v}, {o},
           params({{param_key::head_dim, 64}, {param_key::kv_start, 4}, {param_key::kv_len, 5},
                   {param_key::scale, 0.125}, {param_key::n_heads, 1}, {param_key::n_kv_heads, 1}}));
    expect_error(c, "slots");
  }
}

TEST_CASE("EMBED: an id outside [0, V) yields a NaN row on the GPU (a kernel cannot throw)") {
  const std::int64_t V = 4, H = 32;
  case_builder c;
  auto ids = c.buf("ids", buffer_kind::io_input, dtype::i32, {3});
  auto table = c.buf("table", buffer_kind::weight, dtype::q8_0, {V, H});
  auto y = c.buf("y", buffer_kind::io_output, dtype::f32, {3, H});
  c.task(opcode::embed, {ids, table}, {y}, params({{param_key::hidden, H}}));
  auto& vm = gpu();
  vm.load(c.p);
  const std::int32_t id_values[] = {-1, 2, 4};
  std::vector<std::byte> id_bytes(12);
  std::memcpy(id_bytes.data(), id_values, 12);
  vm.write_bytes("ids", id_bytes);
  std::vector<float> t(static_cast<std::size_t>(V * H));
  for (std::size_t i = 0; i < t.size(); ++i) t[i] = static_cast<float>(i % 7) - 3.0f;
  std::vector<std::byte> tb(static_cast<std::size_t>(octo::ir::nbytes(dtype::q8_0, V * H)));
  for (std::int64_t r = 0; r < V; ++r)
    octo::detail::quantize_row(dtype::q8_0, t.data() + r * H,
                               reinterpret_cast<std::uint8_t*>(tb.data()) + octo::ir::nbytes(dtype::q8_0, r * H), H);
  vm.write_bytes("table", tb);
  vm.execute();
  auto out = vm.read_f32("y");
  (void)y;
  (void)table;
  for (std::int64_t k = 0; k < H; ++k) {
    CHECK(std::isnan(out[static_cast<std::size_t>(k)]));
    CHECK(std::isnan(out[static_cast<std::size_t>(2 * H + k)]));
    // Row 2 of the table, dequantized on the CPU independently of the kernel.
    std::vector<float> row(static_cast<std::size_t>(H));
    octo::detail::dequantize_row(dtype::q8_0, reinterpret_cast<const std::uint8_t*>(tb.data()) + octo::ir::nbytes(dtype::q8_0, 2 * H),
                                 row.data(), H);
    CHECK(out[static_cast<std::size_t>(H + k)] == doctest::Approx(row[static_cast<std::size_t>(k)]).epsilon(1e-6));
  }
}
