// Element conversions against independent oracles: an exhaustive sorted table of all f16 / bf16
// values searched for the nearest (ties to even), hand-checked bit patterns, and nibble packing.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <octo/detail/element_convert.hpp>

using namespace octo::detail;
using octo::ir::dtype;

namespace {

// Decodes IEEE half bits by the textbook formula, in double (independent of f16_to_f32).
double half_value(std::uint16_t h) {
  const int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  double v = e == 0 ? std::ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : std::ldexp(1024 + m, e - 25);
  return s ? -v : v;
}

// Nearest finite-or-inf half to x with ties to the even code, by searching all positive codes.
std::uint16_t nearest_half(float x) {
  const double a = std::fabs(double(x));
  std::uint16_t best = 0;
  double best_d = a;
  for (std::uint32_t c = 1; c <= 0x7bff; ++c) {
    const double d = std::fabs(half_value(std::uint16_t(c)) - a);
    if (d < best_d || (d == best_d && (c & 1) == 0)) {
      best = std::uint16_t(c);
      best_d = d;
    }
  }
  if (a >= 65520.0) best = 0x7c00;  // max + half ulp and above round to inf
  return std::uint16_t(best | (std::signbit(x) ? 0x8000 : 0));
}

}  // namespace

TEST_CASE("f16 -> f32 is exact for every code, and f32 -> f16 inverts it") {
  for (std::uint32_t c = 0; c <= 0xffff; ++c) {
    const auto h = std::uint16_t(c);
    const float f = f16_to_f32(h);
    const double want = half_value(h);
    if (std::isnan(want)) {
      CHECK(std::isnan(f));
      CHECK(std::isnan(f16_to_f32(f32_to_f16(f))));
    } else {
      REQUIRE(double(f) == want);
      REQUIRE(f32_to_f16(f) == h);  // includes -0, subnormals and infinities
    }
  }
}

TEST_CASE("f32 -> f16 rounds to nearest even like an exhaustive search") {
  CHECK(f32_to_f16(1.0f) == 0x3c00);
  CHECK(f32_to_f16(65504.0f) == 0x7bff);
  CHECK(f32_to_f16(65519.99f) == 0x7bff);
  CHECK(f32_to_f16(65520.0f) == 0x7c00);
  CHECK(f32_to_f16(std::ldexp(1.0f, -24)) == 0x0001);
  CHECK(f32_to_f16(std::ldexp(1.0f, -25)) == 0x0000);           // tie between 0 and 2^-24: even is 0
  CHECK(f32_to_f16(std::ldexp(3.0f, -26)) == 0x0001);           // above the tie
  CHECK(f32_to_f16(std::ldexp(3.0f, -25)) == 0x0002);           // 1.5 * 2^-24: tie, even is 2
  CHECK(f32_to_f16(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);    // tie: even mantissa stays
  CHECK(f32_to_f16(1.0f + std::ldexp(3.0f, -11)) == 0x3c02);    // tie: odd mantissa rounds up
  CHECK(f32_to_f16(std::ldexp(1023.5f, -24)) == 0x0400);         // carries from subnormal into normal
  std::mt19937 rng(5);
  std::uniform_int_distribution<std::uint32_t> bits;
  for (int i = 0; i < 1000; ++i) {
    // Random floats concentrated in and around the f16 range, including subnormals.
    float f = std::bit_cast<float>(bits(rng));
    if (std::isnan(f)) continue;
    int ex = 0;
    f = std::ldexp(std::frexp(f, &ex), int(bits(rng) % 50) - 30);
    CAPTURE(f);
    REQUIRE(f32_to_f16(f) == nearest_half(f));
  }
}

TEST_CASE("bf16: exact decode, round to nearest even encode") {
  for (std::uint32_t c = 0; c <= 0xffff; ++c) {
    const float f = bf16_to_f32(std::uint16_t(c));
    if (!std::isnan(f)) REQUIRE(f32_to_bf16(f) == c);
  }
  CHECK(f32_to_bf16(std::bit_cast<float>(0x3f808000u)) == 0x3f80);  // tie, even stays
  CHECK(f32_to_bf16(std::bit_cast<float>(0x3f818000u)) == 0x3f82);  // tie, odd rounds up
  CHECK(f32_to_bf16(std::bit_cast<float>(0x3f808001u)) == 0x3f81);  // above the tie
  CHECK(f32_to_bf16(std::bit_cast<float>(0x7f7fffffu)) == 0x7f80);  // FLT_MAX rounds to inf
  CHECK(std::isnan(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST_CASE("fp8 decode of known codes and encode round trip") {
  CHECK(f8_to_f32(0x7e, dtype::f8e4m3) == 448.0f);
  CHECK(f8_to_f32(0x01, dtype::f8e4m3) == std::ldexp(1.0f, -9));
  CHECK(f8_to_f32(0x38, dtype::f8e4m3) == 1.0f);
  CHECK(std::isnan(f8_to_f32(0x7f, dtype::f8e4m3)));
  CHECK(f8_to_f32(0x7b, dtype::f8e5m2) == 57344.0f);
  CHECK(f8_to_f32(0x3c, dtype::f8e5m2) == 1.0f);
  CHECK(std::isinf(f8_to_f32(0x7c, dtype::f8e5m2)));
  for (auto t : {dtype::f8e4m3, dtype::f8e5m2})
    for (int c = 0; c < 256; ++c) {
      const float f = f8_to_f32(std::uint8_t(c), t);
      if (!std::isnan(f)) CHECK(f32_to_f8(f, t) == c);
    }
  CHECK(f32_to_f8(1000.0f, dtype::f8e4m3) == 0x7e);  // saturates
  CHECK(f32_to_f8(1e6f, dtype::f8e5m2) == 0x7c);     // inf
}

TEST_CASE("I4 nibbles: element 2k low, signed") {
  std::byte b[2] = {std::byte{0x8f}, std::byte{0x07}};
  CHECK(i4_get(b, 0) == -1);
  CHECK(i4_get(b, 1) == -8);
  CHECK(i4_get(b, 2) == 7);
  CHECK(i4_get(b, 3) == 0);
  i4_set(b, 3, -3);
  CHECK(b[1] == std::byte{0xd7});
  i4_set(b, 0, 5);
  CHECK(b[0] == std::byte{0x85});
  std::vector<std::byte> raw(3);
  from_f32(dtype::i4, std::vector<float>{-8, 7, 2.5f, 3.5f, -100}, raw);
  std::vector<float> back(5);
  to_f32(dtype::i4, raw, back);
  CHECK(back == std::vector<float>{-8, 7, 2, 4, -8});
}

TEST_CASE("block-quantized dtypes are not per-element and short buffers are errors") {
  std::vector<std::byte> raw(34);
  std::vector<float> out(32);
  CHECK_THROWS_AS(to_f32(dtype::q8_0, raw, out), octo::error);
  std::vector<float> many(20);
  CHECK_THROWS_AS(to_f32(dtype::f32, raw, many), octo::error);
}
