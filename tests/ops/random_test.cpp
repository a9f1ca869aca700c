// Tests of random_uniform / random_normal / random_uniform_like and of the Philox4x32-10 generator
// behind them.
#include <cmath>
#include <cstring>
#include <limits>

#include "core/philox.h"
#include "test_util.h"

namespace tg {
namespace {

using testing::run1;

// Bit-for-bit equality of two tensors (type and bytes).
void expect_same_bits(const TensorData& a, const TensorData& b) {
  ASSERT_EQ(a.type(), b.type());
  EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()), 0)
      << a.to_string() << " vs " << b.to_string();
}

std::vector<double> values(const TensorData& t) {
  std::vector<double> v(static_cast<size_t>(t.num_elements()));
  for (int64_t i = 0; i < t.num_elements(); ++i) v[i] = t.element_as_double(i);
  return v;
}

struct Moments {
  double mean = 0, variance = 0;
};
Moments moments(const std::vector<double>& v) {
  Moments m;
  for (double x : v) m.mean += x;
  m.mean /= static_cast<double>(v.size());
  for (double x : v) m.variance += (x - m.mean) * (x - m.mean);
  m.variance /= static_cast<double>(v.size() - 1);
  return m;
}

// Random123's published known-answer vectors for Philox4x32-10 (kat_vectors).
TEST(Random, PhiloxKnownAnswers) {
  using philox::Block;
  Block a = philox::philox4x32_10(Block{{0, 0, 0, 0}}, 0, 0);
  EXPECT_EQ(a.v[0], 0x6627e8d5u);
  EXPECT_EQ(a.v[1], 0xe169c58du);
  EXPECT_EQ(a.v[2], 0xbc57ac4cu);
  EXPECT_EQ(a.v[3], 0x9b00dbd8u);
  const uint32_t f = 0xffffffffu;
  Block b = philox::philox4x32_10(Block{{f, f, f, f}}, f, f);
  EXPECT_EQ(b.v[0], 0x408f276du);
  EXPECT_EQ(b.v[1], 0x41c83b0eu);
  EXPECT_EQ(b.v[2], 0xa20bc7c6u);
  EXPECT_EQ(b.v[3], 0x6d5451fdu);
  Block c = philox::philox4x32_10(Block{{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}},
                                  0xa4093822u, 0x299f31d0u);
  EXPECT_EQ(c.v[0], 0xd16cfe09u);
  EXPECT_EQ(c.v[1], 0x94fdccebu);
  EXPECT_EQ(c.v[2], 0x5001e420u);
  EXPECT_EQ(c.v[3], 0x24126ea1u);
}

TEST(Random, PhiloxStreamLayout) {
  // Word n of seed s is output n % 4 of the block with counter (n / 4, 0, 0, 0), key (s_lo, s_hi).
  const uint64_t seed = 0x0123456789abcdefull;
  philox::Block b = philox::philox4x32_10(philox::Block{{5, 0, 0, 0}}, 0x89abcdefu, 0x01234567u);
  for (uint32_t n = 0; n < 4; ++n) EXPECT_EQ(philox::word(seed, 20 + n), b.v[n]);
  // f32 uniform: the top 24 bits of the word over 2^24.
  EXPECT_EQ(philox::uniform_f32(seed, 21), static_cast<float>(b.v[1] >> 8) / 16777216.0f);
}

TG_COVERS(value, random_uniform);
TG_COVERS(value, random_normal);
TEST(Random, MatchesTensorDataBitExactly) {
  Graph g;
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    // 105 elements: an odd count exercises the last unpaired Box-Muller element.
    Tensor u = random_uniform(g, {3, 5, 7}, -2, 3, {42, dt});
    Tensor n = random_normal(g, {3, 5, 7}, 1.5, 0.25, {42, dt});
    EXPECT_EQ(u.type(), (TensorType{{3, 5, 7}, dt}));
    expect_same_bits(run1(g, u), TensorData::random_uniform({3, 5, 7}, -2, 3, 42, dt));
    expect_same_bits(run1(g, n), TensorData::random_normal({3, 5, 7}, 1.5f, 0.25f, 42, dt));
  }
}

TEST(Random, LargeTensorMatchesAcrossThreads) {
  // Large enough to be split over threads; every element must still equal the serial reference.
  Graph g;
  Tensor u = random_uniform(g, {300, 401}, 0, 1, {7, DType::f32});
  Tensor n = random_normal(g, {120301}, 0, 1, {0xfeedfacecafebeefull, DType::f64});
  expect_same_bits(run1(g, u), TensorData::random_uniform({300, 401}, 0, 1, 7, DType::f32));
  expect_same_bits(run1(g, n),
                   TensorData::random_normal({120301}, 0, 1, 0xfeedfacecafebeefull, DType::f64));
}

TEST(Random, ElementDependsOnlyOnSeedAndIndex) {
  Graph g;
  auto a = values(run1(g, random_uniform(g, {2, 3}, 0, 1, {9})));
  auto b = values(run1(g, random_uniform(g, {10}, 0, 1, {9})));
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], b[i]) << i;
  // Element i is the generator's value for index i (f32: low + (high - low) * u, in float).
  auto c = values(run1(g, random_uniform(g, {4}, 0, 2, {9})));
  for (uint64_t i = 0; i < 4; ++i) EXPECT_EQ(c[i], 2.0f * philox::uniform_f32(9, i));
  auto z = values(run1(g, random_normal(g, {3}, 0, 1, {9, DType::f64})));
  for (uint64_t i = 0; i < 3; ++i) EXPECT_EQ(z[i], philox::normal_f64(9, i));
}

TEST(Random, SameSeedSameValuesDifferentSeedsDiffer) {
  Graph g1, g2;
  TensorData a = run1(g1, random_normal(g1, {1000}, 0, 1, {123}));
  TensorData b = run1(g2, random_normal(g2, {1000}, 0, 1, {123}));
  expect_same_bits(a, b);
  Tensor t = random_uniform(g1, {64}, 0, 1, {5});
  expect_same_bits(run1(g1, t), run1(g1, t));  // running again gives the same values
  // Seeds differing only in the low or only in the high 32 bits give different streams.
  for (uint64_t other : {uint64_t{124}, (uint64_t{1} << 32) | 123}) {
    TensorData c = run1(g1, random_normal(g1, {1000}, 0, 1, {other}));
    int same = 0;
    for (int64_t i = 0; i < 1000; ++i) same += a.element_as_double(i) == c.element_as_double(i);
    EXPECT_LT(same, 5) << "seed " << other;
  }
}

TEST(Random, UniformStatistics) {
  Graph g;
  for (DType dt : {DType::f32, DType::f64}) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    auto v = values(run1(g, random_uniform(g, {100000}, -2, 3, {2024, dt})));
    for (double x : v) {
      ASSERT_GE(x, -2.0);
      ASSERT_LT(x, 3.0);
    }
    Moments m = moments(v);
    // mean 0.5 (standard error 0.0046), variance 25/12 = 2.0833 (standard error ~0.006).
    EXPECT_NEAR(m.mean, 0.5, 0.03);
    EXPECT_NEAR(m.variance, 25.0 / 12.0, 0.04);
  }
  // [0, 1): 0 may occur, 1 never; f64 uses 53 random bits (values not all multiples of 2^-24).
  auto d = values(run1(g, random_uniform(g, {1000}, 0, 1, {1, DType::f64})));
  int fine = 0;
  for (double x : d) fine += std::ldexp(x, 24) != std::floor(std::ldexp(x, 24));
  EXPECT_GT(fine, 990);
}

TEST(Random, NormalStatistics) {
  Graph g;
  for (DType dt : {DType::f32, DType::f64}) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    auto v = values(run1(g, random_normal(g, {100000}, 1.5, 2, {77, dt})));
    Moments m = moments(v);
    // Standard errors: mean 0.0063, variance ~0.018.
    EXPECT_NEAR(m.mean, 1.5, 0.04);
    EXPECT_NEAR(m.variance, 4.0, 0.12);
    int within = 0;  // P(|z| < 1) = 0.6827
    for (double x : v) within += std::fabs(x - 1.5) < 2;
    EXPECT_NEAR(within / 1e5, 0.6827, 0.01);
    // Both Box-Muller outputs (even: cos, odd: sin) are standard normal.
    std::vector<double> odd;
    for (size_t i = 1; i < v.size(); i += 2) odd.push_back(v[i]);
    Moments mo = moments(odd);
    EXPECT_NEAR(mo.mean, 1.5, 0.06);
    EXPECT_NEAR(mo.variance, 4.0, 0.17);
  }
}

TEST(Random, NextBelow) {
  EXPECT_EQ(philox::next_below(1.0f), 0.99999994f);
  EXPECT_EQ(philox::next_below(0.0), -std::numeric_limits<double>::denorm_min());
  EXPECT_EQ(static_cast<float>(philox::next_below(f16_t(1.0f))), 0.99951171875f);
  EXPECT_EQ(static_cast<float>(philox::next_below(f16_t(-1.0f))), -1.0009765625f);
  EXPECT_EQ(static_cast<float>(philox::next_below(f16_t(0.0f))), -0x1p-24f);
  EXPECT_EQ(static_cast<float>(philox::next_below(bf16_t(1.0f))), 0.99609375f);
  EXPECT_EQ(static_cast<float>(philox::next_below(bf16_t(-0.0f))), -0x1p-133f);
}

TEST(Random, UniformStaysBelowHighAfterRounding) {
  // f16 rounds u >= 1 - 2^-12 up to 1 (and bf16 u >= 1 - 2^-9): those values must step below.
  Graph g;
  for (DType dt : {DType::f16, DType::bf16}) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    for (auto [lo, hi] : {std::pair{0.0f, 1.0f}, std::pair{1.0f, 2.0f}, std::pair{-3.0f, -1.0f}}) {
      TensorData u = run1(g, random_uniform(g, {50000}, lo, hi, {11, dt}));
      expect_same_bits(u, TensorData::random_uniform({50000}, lo, hi, 11, dt));
      double top = 0;
      int at_top = 0;
      for (double x : values(u)) {
        ASSERT_GE(x, lo);
        ASSERT_LT(x, hi);
        top = std::max(top, x - lo);
      }
      for (double x : values(u)) at_top += x - lo == top;
      EXPECT_GT(at_top, 10);  // the largest value below hi occurs (about twice as often)
    }
  }
  // f32 with a range of two ulps: u > 3/4 would round to high, and is stepped back instead.
  const float lo = 1.0f, hi = 1.0f + 0x1p-22f;
  TensorData u = run1(g, random_uniform(g, {1000}, lo, hi, {3}));
  expect_same_bits(u, TensorData::random_uniform({1000}, lo, hi, 3, DType::f32));
  int low_count = 0, mid_count = 0;
  for (double x : values(u)) {
    low_count += x == 1.0;
    mid_count += x == 1.0 + 0x1p-23;
  }
  EXPECT_EQ(low_count + mid_count, 1000);
  EXPECT_GT(low_count, 100);
  EXPECT_GT(mid_count, 100);
}

TEST(Random, DegenerateParametersAndShapes) {
  Graph g;
  testing::expect_equal(run1(g, random_uniform(g, {3}, 2.5, 2.5)), {2.5, 2.5, 2.5}, {3});
  testing::expect_equal(run1(g, random_normal(g, {2}, -1, 0, {3, DType::f64})), {-1, -1}, {2});
  testing::expect_equal(run1(g, random_uniform(g, {0, 4}, 0, 1)), {}, {0, 4});
  TensorData s = run1(g, random_normal(g, {}, 0, 1, {5, DType::f64}));
  EXPECT_EQ(s.shape(), Shape{});
  EXPECT_EQ(s.element_as_double(0), philox::normal_f64(5, 0));
}

TG_COVERS(error, random_uniform);
TG_COVERS(error, random_normal);
TEST(Random, Errors) {
  Graph g;
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_TG_ERROR(random_uniform(g, {2}, 0, 1, {0, DType::i32}), ErrorCode::dtype_mismatch,
                  "[random_uniform]");
  EXPECT_TG_ERROR(random_normal(g, {2}, 0, 1, {0, DType::bool_}), ErrorCode::dtype_mismatch,
                  "[random_normal]");
  EXPECT_TG_ERROR(random_uniform(g, {2, -1}, 0, 1), ErrorCode::invalid_argument,
                  "[random_uniform]");
  EXPECT_TG_ERROR(random_normal(g, {-3}, 0, 1), ErrorCode::invalid_argument, "[random_normal]");
  EXPECT_TG_ERROR(random_uniform(g, {2}, 1, 0), ErrorCode::invalid_argument,
                  "low 1 must be <= high 0");
  EXPECT_TG_ERROR(random_normal(g, {2}, 0, -1), ErrorCode::invalid_argument,
                  "[random_normal] stddev");
  EXPECT_TG_ERROR(random_uniform(g, {2}, 0, inf), ErrorCode::invalid_argument, "[random_uniform]");
  EXPECT_TG_ERROR(random_normal(g, {2}, std::nan(""), 1), ErrorCode::invalid_argument,
                  "[random_normal]");
  EXPECT_TG_ERROR(random_uniform(g, {2}, -1e308, 1e308, {0, DType::f64}),
                  ErrorCode::invalid_argument, "[random_uniform]");
  EXPECT_TG_ERROR(random_uniform(g, {2}, 0, 1e39), ErrorCode::invalid_argument, "[random_uniform]");
  EXPECT_TG_ERROR(random_uniform(g, {2}, 0, 70000, {0, DType::f16}), ErrorCode::invalid_argument,
                  "exceed the range of f16");
  EXPECT_EQ(random_uniform(g, {2}, -60000, 60000, {0, DType::f16}).dtype(), DType::f16);
  // The same range is fine in f64.
  EXPECT_EQ(random_uniform(g, {2}, 0, 1e39, {0, DType::f64}).dtype(), DType::f64);
}

// ---------------------------------------------------------------------------------------------
// random_uniform_like

Tensor i64_scalar(Graph& g, int64_t v) { return g.constant(TensorData::scalar<int64_t>(v)); }

TG_COVERS(value, random_uniform_like);
TEST(RandomUniformLike, KeyZeroEqualsRandomUniform) {
  Graph g;
  Tensor like = g.constant(TensorData::zeros({3, 5, 7}, DType::i32));  // values and dtype unused
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    Tensor u = random_uniform_like(like, i64_scalar(g, 0), -2, 3, {42, dt});
    EXPECT_EQ(u.type(), (TensorType{{3, 5, 7}, dt}));
    expect_same_bits(run1(g, u), run1(g, random_uniform(g, {3, 5, 7}, -2, 3, {42, dt})));
  }
  // Large enough to be split over threads.
  Tensor big = g.constant(TensorData::zeros({300, 401}, DType::u8));
  expect_same_bits(run1(g, random_uniform_like(big, i64_scalar(g, 0), 0, 1, {7})),
                   TensorData::random_uniform({300, 401}, 0, 1, 7, DType::f32));
}

// Element i of key k: output i % 4 of Philox4x32-10 with counter (i / 4, 0, k_lo, k_hi) and key
// (seed_lo, seed_hi), built here from the block function (not through philox::word).
float expected_f32(uint64_t seed, uint64_t i, uint64_t k) {
  philox::Block b = philox::philox4x32_10(
      philox::Block{{static_cast<uint32_t>(i / 4), 0u, static_cast<uint32_t>(k),
                     static_cast<uint32_t>(k >> 32)}},
      static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  return static_cast<float>(b.v[i % 4] >> 8) / 16777216.0f;
}

TEST(RandomUniformLike, KeyFillsCounterWords2And3) {
  Graph g;
  Tensor like = g.placeholder({-1}, DType::f32, "like");
  Tensor key = g.placeholder({}, DType::i64, "key");
  Tensor u = random_uniform_like(like, key, 0, 1, {0xabcdef0123ull});
  EXPECT_EQ(u.type(), (TensorType{{-1}, DType::f32}));
  const TensorData like_v = TensorData::zeros({9});
  for (int64_t k : {int64_t{0}, int64_t{5}, (int64_t{1} << 32) + 3, int64_t{-1}}) {
    SCOPED_TRACE(k);
    TensorData got = run1(g, u, {{like, like_v}, {key, TensorData::scalar<int64_t>(k)}});
    ASSERT_EQ(got.shape(), Shape{9});
    for (uint64_t i = 0; i < 9; ++i) {
      EXPECT_EQ(got.element_as_double(static_cast<int64_t>(i)),
                expected_f32(0xabcdef0123ull, i, static_cast<uint64_t>(k)))
          << i;
    }
  }
  // f64 uses words 2i and 2i+1 of the keyed stream, like random_uniform.
  Tensor d = random_uniform_like(like, key, 0, 1, {7, DType::f64});
  TensorData got = run1(g, d, {{like, like_v}, {key, TensorData::scalar<int64_t>(11)}});
  for (uint64_t i = 0; i < 9; ++i) {
    EXPECT_EQ(got.element_as_double(static_cast<int64_t>(i)), philox::uniform_f64(7, i, 11)) << i;
  }
}

TEST(RandomUniformLike, KeysGiveIndependentStreams) {
  Graph g;
  Tensor like = g.constant(TensorData::zeros({4000}));
  auto draw = [&](Tensor key) { return values(run1(g, random_uniform_like(like, key))); };
  std::vector<double> a = draw(i64_scalar(g, 1)), b = draw(i64_scalar(g, 2));
  // Other integer key dtypes: i32 -1 is sign-extended (all ones), u8 200 zero-extended.
  std::vector<double> c = draw(g.constant(TensorData::scalar<int32_t>(-1)));
  std::vector<double> d = draw(g.constant(TensorData::scalar<uint8_t>(200)));
  EXPECT_EQ(c, draw(i64_scalar(g, -1)));
  EXPECT_EQ(d, draw(i64_scalar(g, 200)));
  int same_ab = 0, same_ac = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    same_ab += a[i] == b[i];
    same_ac += a[i] == c[i];
  }
  EXPECT_LT(same_ab, 5);
  EXPECT_LT(same_ac, 5);
  Moments m = moments(b);  // mean 1/2 (standard error 0.0046), variance 1/12
  EXPECT_NEAR(m.mean, 0.5, 0.02);
  EXPECT_NEAR(m.variance, 1.0 / 12, 0.005);
}

TEST(RandomUniformLike, DynamicShapeRangeAndEmpty) {
  Graph g;
  Tensor like = g.placeholder({-1, 3}, DType::bool_, "like");
  Tensor u = random_uniform_like(like, i64_scalar(g, 4), 2, 2.5, {3, DType::f16});
  EXPECT_EQ(u.type(), (TensorType{{-1, 3}, DType::f16}));
  TensorData big = run1(g, u, {{like, TensorData::zeros({500, 3}, DType::bool_)}});
  ASSERT_EQ(big.shape(), (Shape{500, 3}));
  for (double x : values(big)) {
    ASSERT_GE(x, 2.0);
    ASSERT_LT(x, 2.5);
  }
  TensorData none = run1(g, u, {{like, TensorData::zeros({0, 3}, DType::bool_)}});
  EXPECT_EQ(none.shape(), (Shape{0, 3}));
  // low == high gives low.
  Tensor c = random_uniform_like(like, i64_scalar(g, 1), -1.5, -1.5);
  testing::expect_equal(run1(g, c, {{like, TensorData::zeros({1, 3}, DType::bool_)}}),
                        {-1.5, -1.5, -1.5}, {1, 3});
}

TG_COVERS(error, random_uniform_like);
TEST(RandomUniformLike, Errors) {
  Graph g, other;
  Tensor like = g.constant(TensorData::zeros({2, 2}));
  Tensor key = i64_scalar(g, 0);
  EXPECT_TG_ERROR(random_uniform_like(like, g.constant(0.0)), ErrorCode::invalid_argument,
                  "[random_uniform_like] key must be an integer scalar");
  EXPECT_TG_ERROR(random_uniform_like(like, g.constant(TensorData::from_vector<int64_t>({1}, {1}))),
                  ErrorCode::invalid_argument, "[random_uniform_like]");
  EXPECT_TG_ERROR(random_uniform_like(like, g.constant(TensorData::scalar<bool>(true))),
                  ErrorCode::invalid_argument, "[random_uniform_like]");
  EXPECT_TG_ERROR(random_uniform_like(like, key, 0, 1, {0, DType::i64}), ErrorCode::dtype_mismatch,
                  "[random_uniform_like]");
  EXPECT_TG_ERROR(random_uniform_like(like, key, 1, 0), ErrorCode::invalid_argument,
                  "[random_uniform_like] low 1 must be <= high 0");
  EXPECT_TG_ERROR(random_uniform_like(like, key, 0, std::numeric_limits<double>::infinity()),
                  ErrorCode::invalid_argument, "[random_uniform_like]");
  EXPECT_TG_ERROR(random_uniform_like(like, key, 0, 1e5, {0, DType::f16}),
                  ErrorCode::invalid_argument, "[random_uniform_like]");
  EXPECT_TG_ERROR(random_uniform_like(Tensor(), key), ErrorCode::invalid_argument,
                  "[random_uniform_like]");
  EXPECT_TG_ERROR(random_uniform_like(like, Tensor()), ErrorCode::invalid_argument,
                  "[random_uniform_like]");
  EXPECT_TG_ERROR(random_uniform_like(like, i64_scalar(other, 0)), ErrorCode::invalid_argument,
                  "[random_uniform_like]");
}

}  // namespace
}  // namespace tg
