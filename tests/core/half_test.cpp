// f16_t and bf16_t conversions: exact bit patterns, round-to-nearest-even ties, subnormals,
// overflow, NaN and signed zero.
#include <bit>
#include <cmath>
#include <limits>

#include "test_util.h"

namespace tg {
namespace {

uint16_t f16_bits(float f) { return f16_t(f).bits; }
float from_f16_bits(uint16_t b) { return f16_t::to_float(b); }
uint16_t bf16_bits(float f) { return bf16_t(f).bits; }
float from_bf16_bits(uint16_t b) {
  bf16_t h;
  h.bits = b;
  return static_cast<float>(h);
}
float float_from_bits(uint32_t b) { return std::bit_cast<float>(b); }

TEST(Half, F16ExactValues) {
  EXPECT_EQ(f16_bits(0.0f), 0x0000);
  EXPECT_EQ(f16_bits(1.0f), 0x3C00);
  EXPECT_EQ(f16_bits(-2.0f), 0xC000);
  EXPECT_EQ(f16_bits(0.5f), 0x3800);
  EXPECT_EQ(f16_bits(65504.0f), 0x7BFF);  // largest finite f16
  EXPECT_EQ(f16_bits(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(from_f16_bits(0x3C00), 1.0f);
  EXPECT_EQ(from_f16_bits(0x7BFF), 65504.0f);
  EXPECT_EQ(from_f16_bits(0x3555), 0.333251953125f);
  // 0.1 is not representable: nearest f16 is 0x2E66 = 0.0999755859375.
  EXPECT_EQ(f16_bits(0.1f), 0x2E66);
  EXPECT_EQ(from_f16_bits(0x2E66), 0.0999755859375f);
}

TEST(Half, F16Subnormals) {
  const float tiny = std::ldexp(1.0f, -24);  // smallest subnormal
  EXPECT_EQ(f16_bits(tiny), 0x0001);
  EXPECT_EQ(from_f16_bits(0x0001), tiny);
  EXPECT_EQ(from_f16_bits(0x03FF), 1023 * tiny);  // largest subnormal
  EXPECT_EQ(f16_bits(1023 * tiny), 0x03FF);
  // Half of the smallest subnormal is a tie between 0 and 1 unit: even (0) wins.
  EXPECT_EQ(f16_bits(std::ldexp(1.0f, -25)), 0x0000);
  // 1.5 units: tie between 1 and 2 units, even (2) wins; 2.5 units -> 2 (even).
  EXPECT_EQ(f16_bits(1.5f * tiny), 0x0002);
  EXPECT_EQ(f16_bits(2.5f * tiny), 0x0002);
  // Just above half a unit rounds up to 1 unit; far below underflows to (signed) zero.
  EXPECT_EQ(f16_bits(std::ldexp(1.0f, -25) * 1.0001f), 0x0001);
  EXPECT_EQ(f16_bits(std::ldexp(1.0f, -30)), 0x0000);
  EXPECT_EQ(f16_bits(-std::ldexp(1.0f, -30)), 0x8000);
}

TEST(Half, F16RoundsToNearestEvenAtTies) {
  // f16 spacing at 1 is 2^-10: 1 + 2^-11 is halfway between 0x3C00 (even) and 0x3C01.
  EXPECT_EQ(f16_bits(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  // 1 + 3*2^-11 is halfway between 0x3C01 (odd) and 0x3C02 (even).
  EXPECT_EQ(f16_bits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
  // Slightly above the tie rounds up.
  EXPECT_EQ(f16_bits(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3C01);
  // Slightly below 1 + 2^-10 rounds to it.
  EXPECT_EQ(f16_bits(1.0f + std::ldexp(1.0f, -10) - std::ldexp(1.0f, -20)), 0x3C01);
}

TEST(Half, F16OverflowInfNanAndSignedZero) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(f16_bits(65519.0f), 0x7BFF);  // below the midpoint 65520
  EXPECT_EQ(f16_bits(65520.0f), 0x7C00);  // tie between 65504 (odd) and 65536: rounds to inf
  EXPECT_EQ(f16_bits(1e6f), 0x7C00);
  EXPECT_EQ(f16_bits(-1e6f), 0xFC00);
  EXPECT_EQ(f16_bits(inf), 0x7C00);
  EXPECT_EQ(f16_bits(-inf), 0xFC00);
  EXPECT_EQ(from_f16_bits(0x7C00), inf);
  EXPECT_EQ(from_f16_bits(0xFC00), -inf);
  uint16_t nan = f16_bits(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7C00, 0x7C00);
  EXPECT_NE(nan & 0x03FF, 0);  // a NaN, not inf
  EXPECT_TRUE(std::isnan(from_f16_bits(nan)));
  EXPECT_TRUE(std::isnan(from_f16_bits(0x7E00)));
  // A signalling-NaN payload whose top mantissa bits are lost must not become inf.
  EXPECT_TRUE(std::isnan(static_cast<float>(f16_t(float_from_bits(0x7F800001u)))));
  EXPECT_EQ(f16_bits(-0.0f), 0x8000);
  float neg_zero = from_f16_bits(0x8000);
  EXPECT_EQ(neg_zero, 0.0f);
  EXPECT_TRUE(std::signbit(neg_zero));
}

TEST(Half, F16RoundTripsEveryFiniteValue) {
  for (uint32_t b = 0; b < 0x10000u; ++b) {
    uint16_t h = static_cast<uint16_t>(b);
    if ((h & 0x7C00) == 0x7C00 && (h & 0x03FF)) continue;  // NaNs: payload may change
    ASSERT_EQ(f16_bits(from_f16_bits(h)), h) << std::hex << b;
  }
}

TEST(Half, Bf16ExactValuesAndTies) {
  EXPECT_EQ(bf16_bits(1.0f), 0x3F80);
  EXPECT_EQ(bf16_bits(-2.0f), 0xC000);
  EXPECT_EQ(from_bf16_bits(0x3F80), 1.0f);
  EXPECT_EQ(from_bf16_bits(0x4049), 3.140625f);
  // Ties: 0x3F808000 is halfway between 0x3F80 (even) and 0x3F81.
  EXPECT_EQ(bf16_bits(float_from_bits(0x3F808000u)), 0x3F80);
  EXPECT_EQ(bf16_bits(float_from_bits(0x3F818000u)), 0x3F82);
  EXPECT_EQ(bf16_bits(float_from_bits(0x3F808001u)), 0x3F81);
  EXPECT_EQ(bf16_bits(float_from_bits(0x3F807FFFu)), 0x3F80);
  // Float subnormals keep their top bits: 2^-133 is bf16 0x0001.
  EXPECT_EQ(bf16_bits(std::ldexp(1.0f, -133)), 0x0001);
  EXPECT_EQ(from_bf16_bits(0x0001), std::ldexp(1.0f, -133));
}

TEST(Half, Bf16OverflowInfNanAndSignedZero) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(bf16_bits(std::numeric_limits<float>::max()), 0x7F80);  // rounds past 0x7F7F to inf
  EXPECT_EQ(from_bf16_bits(0x7F7F), float_from_bits(0x7F7F0000u));  // largest finite bf16
  EXPECT_EQ(bf16_bits(inf), 0x7F80);
  EXPECT_EQ(bf16_bits(-inf), 0xFF80);
  uint16_t nan = bf16_bits(std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(std::isnan(from_bf16_bits(nan)));
  // NaN whose payload sits only in the low 16 bits: truncation alone would give inf.
  EXPECT_TRUE(std::isnan(from_bf16_bits(bf16_bits(float_from_bits(0x7F800001u)))));
  EXPECT_TRUE(std::isnan(from_bf16_bits(bf16_bits(float_from_bits(0xFFFFFFFFu)))));
  EXPECT_EQ(bf16_bits(-0.0f), 0x8000);
  EXPECT_TRUE(std::signbit(from_bf16_bits(0x8000)));
}

TEST(Half, ArithmeticThroughFloat) {
  f16_t a(1.5f), b(2.25f);
  EXPECT_EQ(static_cast<float>(a) * static_cast<float>(b), 3.375f);
  bf16_t c(0.75f);
  EXPECT_EQ(static_cast<float>(c) + 1.0f, 1.75f);
}

}  // namespace
}  // namespace tg
