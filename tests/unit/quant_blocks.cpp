// GGUF block formats: dequantize_row against blocks packed here by hand from the format description
// (scales and quants chosen, expected values computed in float64), f16/bf16 exhaustively, and
// quantize -> dequantize error bounds per type.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <cstdint>
#include <random>
#include <vector>

#include "octo/detail/quant_blocks.hpp"
#include "octo/error.hpp"

namespace {

using octo::ir::dtype;

// Independent f16 encoder for values that are exact halves (normal range), via frexp.
std::uint16_t half_bits(double v) {
  if (v == 0.0) return std::signbit(v) ? 0x8000 : 0;
  int e = 0;
  const double m = std::frexp(std::fabs(v), &e);  // v = m * 2^e, m in [0.5, 1)
  const double mant = (m * 2.0 - 1.0) * 1024.0;   // 10 fraction bits
  REQUIRE(mant == std::floor(mant));
  const int exp = e - 1 + 15;
  REQUIRE(exp > 0);
  REQUIRE(exp < 31);
  return std::uint16_t((v < 0 ? 0x8000 : 0) | (exp << 10) | int(mant));
}

void put_half(std::vector<std::uint8_t>& b, std::size_t at, double v) {
  const auto h = half_bits(v);
  b[at] = std::uint8_t(h & 0xff);
  b[at + 1] = std::uint8_t(h >> 8);
}

// Writes `nbits` of `value` at absolute bit position `bit` (little-endian bit order within bytes).
void put_bits(std::vector<std::uint8_t>& b, std::size_t byte, int bit, int nbits, unsigned value) {
  for (int k = 0; k < nbits; ++k) {
    const int pos = bit + k;
    if ((value >> k) & 1u) b[byte + std::size_t(pos / 8)] |= std::uint8_t(1u << (pos % 8));
  }
}

std::vector<float> decode(dtype t, const std::vector<std::uint8_t>& bytes, int n) {
  std::vector<float> out(std::size_t(n), -12345.0f);
  octo::detail::dequantize_row(t, bytes.data(), out.data(), n);
  return out;
}

void check_exact(const std::vector<float>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  int bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (double(got[i]) != want[i] && bad++ < 5) FAIL_CHECK("element " << i << ": got " << got[i] << " want " << want[i]);
  CHECK(bad == 0);
}

std::mt19937 rng(12345);
int rand_int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

const double scale_choices[] = {0.5, 0.25, 1.5, 0.375, 2.0, 0.0625, 3.0, 0.125};
double pick_scale() { return scale_choices[rand_int(0, 7)] * (rand_int(0, 1) ? 1 : -1); }

}  // namespace

TEST_CASE("f16 decoding is exact for all 65536 values and encoding rounds to nearest even") {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const int sign = (h >> 15) ? -1 : 1;
    const int exp = int((h >> 10) & 31);
    const int man = int(h & 1023);
    const float got = octo::detail::f16_to_f32(std::uint16_t(h));
    if (exp == 31) {
      if (man == 0) CHECK(got == sign * INFINITY);
      else CHECK(std::isnan(got));
      continue;
    }
    const double want = exp == 0 ? sign * std::ldexp(double(man), -24)
                                 : sign * std::ldexp(1.0 + man / 1024.0, exp - 15);
    if (double(got) != want) FAIL("f16 " << h << " decodes to " << got << ", want " << want);
    if (double(got) != 0.0 || h == 0) REQUIRE(octo::detail::f32_to_f16(got) == h);
  }
  // Midpoints between neighbouring halves go to the even one; just above goes up.
  const double one = 1.0, ulp = std::ldexp(1.0, -10);
  CHECK(octo::detail::f32_to_f16(float(one + ulp / 2)) == 0x3c00);
  CHECK(octo::detail::f32_to_f16(float(one + 3 * ulp / 2)) == 0x3c02);
  CHECK(octo::detail::f32_to_f16(float(one + ulp / 2 + ulp / 64)) == 0x3c01);
  CHECK(octo::detail::f32_to_f16(65504.0f) == 0x7bff);
  CHECK(octo::detail::f32_to_f16(65520.0f) == 0x7c00);
  CHECK(octo::detail::f32_to_f16(float(std::ldexp(1.0, -25))) == 0x0000);   // tie to even (0)
  CHECK(octo::detail::f32_to_f16(float(std::ldexp(1.5, -25))) == 0x0001);
  CHECK(octo::detail::f32_to_f16(float(std::ldexp(3.0, -25))) == 0x0002);   // tie 1.5 units -> 2
}

TEST_CASE("F32, F16 and BF16 rows") {
  std::vector<std::uint8_t> f16(8, 0);
  put_half(f16, 0, 1.0);
  put_half(f16, 2, -0.375);
  put_half(f16, 4, 65504.0);
  put_half(f16, 6, std::ldexp(1.0, -14));
  check_exact(decode(dtype::f16, f16, 4), {1.0, -0.375, 65504.0, std::ldexp(1.0, -14)});

  // bf16 is the top half of a float: 0x3fc0 = 1.5, 0xc120 = -10, 0x0001 = smallest subnormal bf16.
  std::vector<std::uint8_t> bf{0xc0, 0x3f, 0x20, 0xc1, 0x01, 0x00};
  check_exact(decode(dtype::bf16, bf, 3), {1.5, -10.0, std::ldexp(1.0, -133)});
  CHECK(octo::detail::f32_to_bf16(1.00390625f) == 0x3f80);  // tie -> even
  CHECK(octo::detail::f32_to_bf16(1.01171875f) == 0x3f82);  // tie -> even (up)

  std::vector<std::uint8_t> f32(8);
  const float vals[2] = {3.25f, -1e-30f};
  std::memcpy(f32.data(), vals, 8);
  check_exact(decode(dtype::f32, f32, 2), {3.25, double(-1e-30f)});
}

TEST_CASE("Q8_0 blocks packed by hand") {
  const int nb = 3;
  std::vector<std::uint8_t> b(std::size_t(nb) * 34, 0);
  std::vector<double> want;
  for (int k = 0; k < nb; ++k) {
    const double d = pick_scale();
    put_half(b, std::size_t(k) * 34, d);
    for (int j = 0; j < 32; ++j) {
      const int q = j == 0 ? -128 : j == 1 ? 127 : rand_int(-128, 127);
      b[std::size_t(k) * 34 + 2 + std::size_t(j)] = std::uint8_t(q & 0xff);
      want.push_back(d * q);
    }
  }
  check_exact(decode(dtype::q8_0, b, nb * 32), want);
}

TEST_CASE("Q4_0 / Q4_1 blocks packed by hand") {
  for (bool with_min : {false, true}) {
    const int bs = with_min ? 20 : 18;
    std::vector<std::uint8_t> b(2 * std::size_t(bs), 0);
    std::vector<double> want(64);
    for (int k = 0; k < 2; ++k) {
      const std::size_t o = std::size_t(k * bs);
      const double d = pick_scale(), m = with_min ? pick_scale() : 0.0;
      put_half(b, o, d);
      if (with_min) put_half(b, o + 2, m);
      // Element j < 16 is the low nibble of byte j, element j + 16 the high nibble.
      for (int j = 0; j < 32; ++j) {
        const int q = rand_int(0, 15);
        put_bits(b, o + (with_min ? 4 : 2), (j % 16) * 8 + (j / 16) * 4, 4, unsigned(q));
        want[std::size_t(32 * k + j)] = with_min ? d * q + m : d * (q - 8);
      }
    }
    check_exact(decode(with_min ? dtype::q4_1 : dtype::q4_0, b, 64), want);
  }
}

TEST_CASE("Q5_0 / Q5_1 blocks packed by hand") {
  for (bool with_min : {false, true}) {
    const int bs = with_min ? 24 : 22;
    std::vector<std::uint8_t> b(2 * std::size_t(bs), 0);
    std::vector<double> want(64);
    for (int k = 0; k < 2; ++k) {
      const std::size_t o = std::size_t(k * bs);
      const double d = pick_scale(), m = with_min ? pick_scale() : 0.0;
      put_half(b, o, d);
      if (with_min) put_half(b, o + 2, m);
      const std::size_t qh = o + (with_min ? 4 : 2), qs = qh + 4;
      // Bit 4 of element j is bit j of the 32-bit little-endian qh; the low 4 bits as in Q4.
      for (int j = 0; j < 32; ++j) {
        const int q = j == 5 ? 31 : j == 20 ? 16 : rand_int(0, 31);
        put_bits(b, qs, (j % 16) * 8 + (j / 16) * 4, 4, unsigned(q & 15));
        put_bits(b, qh, j, 1, unsigned(q >> 4));
        want[std::size_t(32 * k + j)] = with_min ? d * q + m : d * (q - 16);
      }
    }
    check_exact(decode(with_min ? dtype::q5_1 : dtype::q5_0, b, 64), want);
  }
}

TEST_CASE("Q2_K blocks packed by hand") {
  std::vector<std::uint8_t> b(2 * 84, 0);
  std::vector<double> want(512);
  for (int k = 0; k < 2; ++k) {
    const std::size_t o = std::size_t(k) * 84;
    const double d = std::fabs(pick_scale()), dmin = std::fabs(pick_scale());
    put_half(b, o + 80, d);
    put_half(b, o + 82, dmin);
    int sc[16], mn[16];
    for (int s = 0; s < 16; ++s) {
      sc[s] = rand_int(0, 15);
      mn[s] = rand_int(0, 15);
      b[o + std::size_t(s)] = std::uint8_t(sc[s] | (mn[s] << 4));
    }
    // Element i = 128n + 32j + l keeps its 2 bits in qs byte 32n + l at bit 2j; sub-block i / 16.
    for (int i = 0; i < 256; ++i) {
      const int q = rand_int(0, 3);
      const int n = i / 128, j = (i / 32) % 4, l = i % 32;
      put_bits(b, o + 16 + std::size_t(32 * n + l), 2 * j, 2, unsigned(q));
      want[std::size_t(256 * k + i)] = d * sc[i / 16] * q - dmin * mn[i / 16];
    }
  }
  check_exact(decode(dtype::q2_k, b, 512), want);
}

TEST_CASE("Q3_K blocks packed by hand, including the 6-bit scale packing") {
  // Hand-packed scale bytes first: scales i = 0..15 stored (s + 32) as 6 bits. Chosen stored values
  // v = {0, 63, 32, 1, 17, 48, 5, 60, 33, 31, 15, 16, 47, 2, 62, 40}.
  // Low nibbles: bytes 0..7 = v[0..7] & 15 | (v[8..15] & 15) << 4;
  // high 2 bits: byte 8 + i%4 at bits 2*(i/4).
  //   byte0 = 0x0 | 1<<4 = 0x10   byte1 = 0xf | 0xf<<4 = 0xff  byte2 = 0x0 | 0xf<<4 = 0xf0
  //   byte3 = 0x1 | 0x0<<4 = 0x01 byte4 = 0x1 | 0xf<<4 = 0xf1  byte5 = 0x0 | 0x2<<4 = 0x20
  //   byte6 = 0x5 | 0xe<<4 = 0xe5 byte7 = 0xc | 0x8<<4 = 0x8c
  //   hi bits: v>>4 = {0,3,2,0, 1,3,0,3, 2,1,0,1, 2,0,3,2}
  //   byte8  = i 0,4,8,12 -> 0 | 1<<2 | 2<<4 | 2<<6 = 0xa4
  //   byte9  = i 1,5,9,13 -> 3 | 3<<2 | 1<<4 | 0<<6 = 0x1f
  //   byte10 = i 2,6,10,14 -> 2 | 0<<2 | 0<<4 | 3<<6 = 0xc2
  //   byte11 = i 3,7,11,15 -> 0 | 3<<2 | 1<<4 | 2<<6 = 0x9c
  const int v[16] = {0, 63, 32, 1, 17, 48, 5, 60, 33, 31, 15, 16, 47, 2, 62, 40};
  const std::uint8_t packed[12] = {0x10, 0xff, 0xf0, 0x01, 0xf1, 0x20, 0xe5, 0x8c, 0xa4, 0x1f, 0xc2, 0x9c};
  for (int i = 0; i < 16; ++i) CHECK(octo::detail::k3_get_scale(i, packed) == v[i] - 32);

  std::vector<std::uint8_t> b(110, 0);
  for (int i = 0; i < 12; ++i) b[96 + std::size_t(i)] = packed[i];
  const double d = 0.375;
  put_half(b, 108, d);
  std::vector<double> want(256);
  // Element i = 128n + 32j + l: low 2 bits in qs byte 32n + l at bit 2j; the third bit in hmask byte l
  // at bit 4n + j; value (q3 - 4) where a clear hmask bit subtracts 4.
  for (int i = 0; i < 256; ++i) {
    const int q = rand_int(0, 7);
    const int n = i / 128, j = (i / 32) % 4, l = i % 32;
    put_bits(b, 32 + std::size_t(32 * n + l), 2 * j, 2, unsigned(q & 3));
    put_bits(b, std::size_t(l), 4 * n + j, 1, unsigned(q >> 2));
    want[std::size_t(i)] = d * (v[i / 16] - 32) * (q - 4);
  }
  check_exact(decode(dtype::q3_k, b, 256), want);
}

TEST_CASE("Q4_K / Q5_K blocks packed by hand, including the 6-bit scale/min packing") {
  // Scales {5, 17, 33, 63, 48, 21, 9, 60} and mins {0, 1, 62, 31, 40, 3, 16, 7}, packed by hand:
  // bytes 0..3: sc[j] | (sc[j+4] >> 4) << 6; 4..7: m[j] | (m[j+4] >> 4) << 6;
  // 8..11: (sc[j+4] & 15) | (m[j+4] & 15) << 4.
  const int sc[8] = {5, 17, 33, 63, 48, 21, 9, 60};
  const int mn[8] = {0, 1, 62, 31, 40, 3, 16, 7};
  const std::uint8_t packed[12] = {0xc5, 0x51, 0x21, 0xff, 0x80, 0x01, 0x7e, 0x1f, 0x80, 0x35, 0x09, 0x7c};
  for (int j = 0; j < 8; ++j) {
    int s = -1, m = -1;
    octo::detail::k4_get_scale_min(j, packed, s, m);
    CHECK(s == sc[j]);
    CHECK(m == mn[j]);
  }
  for (bool five : {false, true}) {
    const int bs = five ? 176 : 144;
    std::vector<std::uint8_t> b(std::size_t(bs), 0);
    const double d = 0.375, dmin = 1.5;
    put_half(b, 0, d);
    put_half(b, 2, dmin);
    for (int i = 0; i < 12; ++i) b[4 + std::size_t(i)] = packed[i];
    const std::size_t qs = five ? 48 : 16;
    std::vector<double> want(256);
    // Element i in sub-block s = i / 32, l = i % 32: low 4 bits in qs byte 32*(s/2) + l, low nibble for
    // even s, high for odd; for Q5_K the fifth bit in qh byte l at bit s.
    for (int i = 0; i < 256; ++i) {
      const int s = i / 32, l = i % 32;
      const int q = five ? rand_int(0, 31) : rand_int(0, 15);
      put_bits(b, qs + std::size_t(32 * (s / 2) + l), 4 * (s % 2), 4, unsigned(q & 15));
      if (five) put_bits(b, 16 + std::size_t(l), s, 1, unsigned(q >> 4));
      want[std::size_t(i)] = d * sc[s] * q - dmin * mn[s];
    }
    check_exact(decode(five ? dtype::q5_k : dtype::q4_k, b, 256), want);
  }
}

TEST_CASE("Q6_K blocks packed by hand, signed 8-bit sub-block scales") {
  std::vector<std::uint8_t> b(2 * 210, 0);
  std::vector<double> want(512);
  for (int k = 0; k < 2; ++k) {
    const std::size_t o = std::size_t(k) * 210;
    const double d = k == 0 ? 0.375 : 0.0625;
    put_half(b, o + 208, d);
    int sc[16];
    for (int s = 0; s < 16; ++s) {
      sc[s] = s == 0 ? -128 : s == 1 ? 127 : rand_int(-128, 127);
      b[o + 192 + std::size_t(s)] = std::uint8_t(sc[s] & 0xff);
    }
    // Element i = 128n + 32c + l (c = 0..3): low 4 bits in ql byte 64n + l + 32*(c%2), low nibble for
    // c < 2 and high nibble for c >= 2; top 2 bits in qh byte 32n + l at bit 2c; value q6 - 32 times
    // the int8 scale of sub-block i / 16.
    for (int i = 0; i < 256; ++i) {
      const int q = rand_int(0, 63);
      const int n = i / 128, c = (i / 32) % 4, l = i % 32;
      put_bits(b, o + std::size_t(64 * n + l + 32 * (c % 2)), 4 * (c / 2), 4, unsigned(q & 15));
      put_bits(b, o + 128 + std::size_t(32 * n + l), 2 * c, 2, unsigned(q >> 4));
      want[std::size_t(256 * k + i)] = d * sc[i / 16] * (q - 32);
    }
  }
  check_exact(decode(dtype::q6_k, b, 512), want);
}

// ggml's kvalues_iq4nl, written out here from the format description (not taken from the code under test).
const int iq4_values[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

TEST_CASE("IQ4_NL blocks packed by hand: every index through the fixed table") {
  const int nb = 3;
  std::vector<std::uint8_t> b(std::size_t(nb) * 18, 0);
  std::vector<double> want(std::size_t(nb) * 32);
  for (int k = 0; k < nb; ++k) {
    const std::size_t o = std::size_t(k) * 18;
    const double d = pick_scale();
    put_half(b, o, d);
    for (int j = 0; j < 32; ++j) {
      const int q = k == 0 ? j % 16 : rand_int(0, 15);  // block 0 uses all 16 indices twice
      // Element j < 16 is the low nibble of qs[j], element j + 16 the high nibble of qs[j].
      put_bits(b, o + 2, (j % 16) * 8 + (j / 16) * 4, 4, unsigned(q));
      want[std::size_t(32 * k + j)] = d * iq4_values[q];
    }
  }
  check_exact(decode(dtype::iq4_nl, b, nb * 32), want);
}

TEST_CASE("IQ4_XS blocks packed by hand: 6-bit sub-block scales split over scales_l and scales_h") {
  const int nb = 2;
  std::vector<std::uint8_t> b(std::size_t(nb) * 136, 0);
  std::vector<double> want(std::size_t(nb) * 256);
  for (int k = 0; k < nb; ++k) {
    const std::size_t o = std::size_t(k) * 136;
    const double d = std::ldexp(pick_scale(), -5);  // d * (ls - 32) stays exact in float
    put_half(b, o, d);
    for (int ib = 0; ib < 8; ++ib) {
      const int ls = ib == 0 ? 0 : ib == 1 ? 63 : ib == 2 ? 32 : rand_int(0, 63);
      // Low 4 bits: scales_l[ib / 2] (byte 4 + ib / 2), nibble ib % 2; high 2 bits: scales_h (bytes 2..3)
      // at bit 2 * ib.
      put_bits(b, o + 4 + std::size_t(ib / 2), 4 * (ib % 2), 4, unsigned(ls & 15));
      put_bits(b, o + 2, 2 * ib, 2, unsigned(ls >> 4));
      for (int j = 0; j < 32; ++j) {
        const int q = rand_int(0, 15);
        put_bits(b, o + 8 + 16 * std::size_t(ib), (j % 16) * 8 + (j / 16) * 4, 4, unsigned(q));
        want[std::size_t(256 * k + 32 * ib + j)] = d * (ls - 32) * iq4_values[q];
      }
    }
  }
  check_exact(decode(dtype::iq4_xs, b, nb * 256), want);
}

TEST_CASE("IQ4 quantizers reproduce values already on their grid exactly") {
  // IQ4_NL: d = 0.5 (exact in f16) times table entries, -127 among them so the search's first anchor
  // lands on d.
  std::vector<float> x(64), y(64);
  for (int j = 0; j < 64; ++j) x[std::size_t(j)] = 0.5f * float(iq4_values[j == 5 ? 0 : rand_int(0, 15)]);
  std::vector<std::uint8_t> q(36);
  octo::detail::quantize_row(dtype::iq4_nl, x.data(), q.data(), 64);
  octo::detail::dequantize_row(dtype::iq4_nl, q.data(), y.data(), 64);
  CHECK(y == x);
  // IQ4_XS: d = 1/64, sub-block steps d * (ls - 32) with sub-block 3 at the end of the range (-32), each
  // sub-block holding its -127 entry.
  std::vector<float> xs(256), ys(256);
  const int ls[8] = {40, 20, 33, 0, 63, 31, 10, 50};
  for (int ib = 0; ib < 8; ++ib)
    for (int j = 0; j < 32; ++j)
      xs[std::size_t(32 * ib + j)] = float(std::ldexp(double(ls[ib] - 32), -6)) * float(iq4_values[j == 7 ? 0 : rand_int(0, 15)]);
  std::vector<std::uint8_t> qs(136);
  octo::detail::quantize_row(dtype::iq4_xs, xs.data(), qs.data(), 256);
  octo::detail::dequantize_row(dtype::iq4_xs, qs.data(), ys.data(), 256);
  CHECK(ys == xs);
}

TEST_CASE("dequantize_row matches ggml's reference dequantizers bit for bit (golden file)") {
  // tests/data/quant_golden_ggml.bin: random blocks (finite f16 scales) and the floats ggml's own
  // dequantize_row_* produced for them, made once outside the repo by linking ggml-quants.c (the IQ4_NL
  // and IQ4_XS records, appended later, from ggml at d99724f2: random bytes, d's exponent kept finite).
  // Records: u8 octo dtype code, u32 block count, the blocks, then the decoded floats.
  const std::string path = std::string(OCTO_SOURCE_DIR) + "/tests/data/quant_golden_ggml.bin";
  std::FILE* f = std::fopen(path.c_str(), "rb");
  REQUIRE_MESSAGE(f != nullptr, "missing " << path);
  std::vector<std::uint8_t> all;
  for (int c; (c = std::fgetc(f)) != EOF;) all.push_back(std::uint8_t(c));
  std::fclose(f);
  std::size_t pos = 0;
  int records = 0;
  while (pos < all.size()) {
    REQUIRE(pos + 5 <= all.size());
    const auto t = static_cast<dtype>(all[pos]);
    std::uint32_t nb = 0;
    std::memcpy(&nb, &all[pos + 1], 4);
    pos += 5;
    const auto l = octo::ir::layout(t);
    const std::size_t nbytes = std::size_t(nb) * std::size_t(l.block_bytes);
    const std::size_t n = std::size_t(nb) * std::size_t(l.block_elems);
    REQUIRE(pos + nbytes + 4 * n <= all.size());
    std::vector<float> want(n), got(n);
    std::memcpy(want.data(), &all[pos + nbytes], 4 * n);
    octo::detail::dequantize_row(t, &all[pos], got.data(), std::int64_t(n));
    CAPTURE(octo::ir::name(t));
    CHECK(std::memcmp(want.data(), got.data(), 4 * n) == 0);
    pos += nbytes + 4 * n;
    ++records;
  }
  CHECK(records == 12);  // the 10 formats of the first file, then IQ4_NL and IQ4_XS (appended likewise)
}

TEST_CASE("rows that are not whole blocks are refused") {
  std::vector<std::uint8_t> b(1024, 0);
  std::vector<float> out(1024);
  CHECK_THROWS_AS(octo::detail::dequantize_row(dtype::q4_k, b.data(), out.data(), 100), octo::error);
  CHECK_THROWS_AS(octo::detail::quantize_row(dtype::q8_0, out.data(), b.data(), 33), octo::error);
  CHECK_THROWS_AS(octo::detail::dequantize_row(dtype::i32, b.data(), out.data(), 4), octo::error);
}

namespace {

struct round_trip_stats {
  double max_rel_to_range = 0;  // max |err| / (block max - block min)
  double rms_rel = 0;           // rms(err) / rms(x)
};

round_trip_stats round_trip(dtype t, const std::vector<float>& x, int block) {
  std::vector<std::uint8_t> q(std::size_t(octo::ir::nbytes(t, std::int64_t(x.size()))));
  octo::detail::quantize_row(t, x.data(), q.data(), std::int64_t(x.size()));
  std::vector<float> y(x.size());
  octo::detail::dequantize_row(t, q.data(), y.data(), std::int64_t(x.size()));
  round_trip_stats st;
  double se = 0, sx = 0;
  for (std::size_t b0 = 0; b0 < x.size(); b0 += std::size_t(block)) {
    double mn = 0, mx = 0;  // range includes 0: K formats and symmetric formats anchor there
    for (int i = 0; i < block; ++i) mn = std::min(mn, double(x[b0 + std::size_t(i)])), mx = std::max(mx, double(x[b0 + std::size_t(i)]));
    for (int i = 0; i < block; ++i) {
      const double e = std::fabs(double(y[b0 + std::size_t(i)]) - double(x[b0 + std::size_t(i)]));
      st.max_rel_to_range = std::max(st.max_rel_to_range, e / (mx - mn));
      se += e * e;
      sx += double(x[b0 + std::size_t(i)]) * x[b0 + std::size_t(i)];
    }
  }
  st.rms_rel = std::sqrt(se / sx);
  return st;
}

}  // namespace

TEST_CASE("quantize -> dequantize stays within each format's error bound") {
  std::mt19937 g(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(256 * 64);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = normal(g) * (1.0f + float(i / 256) * 0.25f);
  // Shift some super-blocks so asymmetric formats see all-positive and all-negative data too.
  for (std::size_t i = 256 * 10; i < 256 * 12; ++i) x[i] = std::fabs(x[i]) + 3.0f;
  for (std::size_t i = 256 * 12; i < 256 * 14; ++i) x[i] = -std::fabs(x[i]) - 3.0f;

  struct bound {
    dtype t;
    int block;
    double max_rel;  // bound on |err| / block range (range taken to include 0)
    double rms;      // bound on relative RMS error over the gaussian data
  };
  // Symmetric types: one step is amax/127 (Q8_0), amax/8 (Q4_0), amax/16 (Q5_0); the clamped end can
  // be a full step off. Min/max types: half a step of range/15 or range/31. K types: half a step plus
  // the error of 4/6/8-bit sub-block scales (bounded empirically, with margin).
  const bound bounds[] = {
      {dtype::q8_0, 32, 0.5 / 127 * 1.01, 0.01},  {dtype::q4_0, 32, 1.0 / 8 * 1.01, 0.12},
      {dtype::q4_1, 32, 0.5 / 15 * 1.05, 0.08},   {dtype::q5_0, 32, 1.0 / 16 * 1.01, 0.06},
      {dtype::q5_1, 32, 0.5 / 31 * 1.05, 0.04},   {dtype::q2_k, 16, 0.25, 0.4},
      {dtype::q3_k, 16, 0.18, 0.2},               {dtype::q4_k, 32, 0.05, 0.1},
      {dtype::q5_k, 32, 0.03, 0.05},              {dtype::q6_k, 16, 0.025, 0.025},
      {dtype::f16, 1, 0, 0.001},                  {dtype::bf16, 1, 0, 0.005},
  };
  double prev_k_rms = 1.0;
  for (const auto& bd : bounds) {
    CAPTURE(octo::ir::name(bd.t));
    const auto st = round_trip(bd.t, x, bd.block);
    MESSAGE(octo::ir::name(bd.t) << ": max err / range " << st.max_rel_to_range << ", rms rel " << st.rms_rel);
    if (bd.block > 1) CHECK(st.max_rel_to_range <= bd.max_rel);
    CHECK(st.rms_rel <= bd.rms);
    CHECK(st.rms_rel > 0.0);  // a lossy format that reproduced gaussian data exactly would be suspicious
    if (bd.t == dtype::q2_k || bd.t == dtype::q3_k || bd.t == dtype::q4_k || bd.t == dtype::q5_k ||
        bd.t == dtype::q6_k) {
      CHECK(st.rms_rel < prev_k_rms);  // more bits, less error
      prev_k_rms = st.rms_rel;
    }
  }
}

TEST_CASE("IQ4_NL / IQ4_XS quantizers: error below Q4_0's on the same data") {
  // Same bits per weight as Q4_0 (IQ4_NL, 4.5) or fewer (IQ4_XS, 4.25): the scale search over the
  // non-linear table must still beat Q4_0's round-to-nearest, on gaussian rows of varying spread and on
  // the shifted all-positive / all-negative rows.
  std::mt19937 g(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(256 * 64);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = normal(g) * (1.0f + float(i / 256) * 0.25f);
  for (std::size_t i = 256 * 10; i < 256 * 12; ++i) x[i] = std::fabs(x[i]) + 3.0f;
  for (std::size_t i = 256 * 12; i < 256 * 14; ++i) x[i] = -std::fabs(x[i]) - 3.0f;
  const auto q4_0 = round_trip(dtype::q4_0, x, 32);
  const auto nl = round_trip(dtype::iq4_nl, x, 32);
  const auto xs = round_trip(dtype::iq4_xs, x, 32);
  MESSAGE("rms rel: Q4_0 " << q4_0.rms_rel << ", IQ4_NL " << nl.rms_rel << ", IQ4_XS " << xs.rms_rel);
  MESSAGE("max err / range: Q4_0 " << q4_0.max_rel_to_range << ", IQ4_NL " << nl.max_rel_to_range << ", IQ4_XS "
                                   << xs.max_rel_to_range);
  CHECK(nl.rms_rel < q4_0.rms_rel);
  CHECK(xs.rms_rel < q4_0.rms_rel);
  CHECK(nl.rms_rel > 0.0);
  CHECK(xs.rms_rel > 0.0);
  // Worst element: the table's widest gap is 24 steps of d ~ amax / 127, so about 0.1 of the range
  // (with margin for the search trading the extremes for the bulk).
  CHECK(nl.max_rel_to_range < 0.15);
  CHECK(xs.max_rel_to_range < 0.15);
}

TEST_CASE("quantizers: zero blocks and exactly representable grids") {
  for (dtype t : {dtype::q8_0, dtype::q4_0, dtype::q4_1, dtype::q5_0, dtype::q5_1, dtype::q2_k,
                  dtype::q3_k, dtype::q4_k, dtype::q5_k, dtype::q6_k, dtype::iq4_nl, dtype::iq4_xs}) {
    CAPTURE(octo::ir::name(t));
    std::vector<float> z(256, 0.0f), y(256, 1.0f);
    std::vector<std::uint8_t> q(std::size_t(octo::ir::nbytes(t, 256)), 0xab);
    octo::detail::quantize_row(t, z.data(), q.data(), 256);
    octo::detail::dequantize_row(t, q.data(), y.data(), 256);
    for (float v : y) REQUIRE(v == 0.0f);
  }
  // Q8_0 of integers -127..127 scaled by 1/127 * 127: d = 1, exact.
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i) x[std::size_t(i)] = float(i * 8 - 127 < -127 ? -127 : i * 8 - 127);
  x[31] = 127.0f;
  std::vector<std::uint8_t> q(34);
  std::vector<float> y(32);
  octo::detail::quantize_row(dtype::q8_0, x.data(), q.data(), 32);
  octo::detail::dequantize_row(dtype::q8_0, q.data(), y.data(), 32);
  CHECK(y == x);
  CHECK(q[0] == 0x00);
  CHECK(q[1] == 0x3c);  // d = 1.0 as f16
}
