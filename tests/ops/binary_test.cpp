// Value and error tests of the elementwise binary ops and the arithmetic operators
// (hand-computed expectations).
#include <cmath>
#include <cstdint>
#include <limits>

#include "test_util.h"

namespace tg {
namespace {

using testing::expect_close;
using testing::expect_equal;
using testing::run1;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kPi = 3.14159265358979323846;

template <typename T>
Tensor vec(Graph& g, std::initializer_list<T> v, Shape shape) {
  return g.constant(TensorData::from_vector<T>(v, std::move(shape)));
}

std::vector<f16_t> halves(std::initializer_list<float> v) { return {v.begin(), v.end()}; }

TG_COVERS(value, add);
TG_COVERS(value, sub);
TG_COVERS(value, mul);
TG_COVERS(value, div);
TEST(Binary, ArithmeticWithRowBroadcast) {
  Graph g;
  Tensor a = vec<float>(g, {1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = vec<float>(g, {10, 20, 30}, {3});
  expect_equal(run1(g, add(a, b)), {11, 22, 33, 14, 25, 36}, {2, 3});
  expect_equal(run1(g, sub(a, b)), {-9, -18, -27, -6, -15, -24}, {2, 3});
  expect_equal(run1(g, mul(a, b)), {10, 40, 90, 40, 100, 180}, {2, 3});
  expect_close(run1(g, div(a, b)), {0.1, 0.1, 0.1, 0.4, 0.25, 0.2}, {2, 3});
  expect_equal(run1(g, sub(b, a)), {9, 18, 27, 6, 15, 24}, {2, 3});
}

TEST(Binary, BroadcastSizeOneAndSizeZeroDims) {
  Graph g;
  Tensor col = vec<int32_t>(g, {1, 2, 3}, {3, 1});
  Tensor row = vec<int32_t>(g, {10, 20, 30, 40}, {1, 4});
  expect_equal(run1(g, add(col, row)), {11, 21, 31, 41, 12, 22, 32, 42, 13, 23, 33, 43}, {3, 4});
  expect_equal(run1(g, sub(row, col)), {9, 19, 29, 39, 8, 18, 28, 38, 7, 17, 27, 37}, {3, 4});
  // A dim of 0 broadcasts against 1 and gives 0.
  Tensor empty = g.constant(TensorData::zeros({2, 0}));
  Tensor one = vec<float>(g, {5}, {1});
  EXPECT_EQ(add(empty, one).shape(), (Shape{2, 0}));
  expect_equal(run1(g, add(empty, one)), {}, {2, 0});
  expect_equal(run1(g, mul(one, empty)), {}, {2, 0});
  Tensor e01 = g.constant(TensorData::zeros({1, 0}));
  Tensor e31 = g.constant(TensorData::zeros({3, 1}));
  expect_equal(run1(g, add(e01, e31)), {}, {3, 0});
}

TEST(Binary, RankZeroWithRankThreeAndMiddleDimBroadcast) {
  Graph g;
  Tensor s = g.constant(TensorData::scalar<double>(100.0));
  Tensor x = vec<double>(g, {0, 1, 2, 3, 4, 5, 6, 7}, {2, 2, 2});
  expect_equal(run1(g, add(s, x)), {100, 101, 102, 103, 104, 105, 106, 107}, {2, 2, 2});
  expect_equal(run1(g, sub(x, s)), {-100, -99, -98, -97, -96, -95, -94, -93}, {2, 2, 2});
  expect_equal(run1(g, add(s, s)), {200}, {});
  // [2,1,3] + [4,1] -> [2,4,3]: out[i][j][k] = a[i][0][k] + b[j][0].
  Tensor a = vec<int64_t>(g, {0, 1, 2, 3, 4, 5}, {2, 1, 3});
  Tensor b = vec<int64_t>(g, {0, 10, 20, 30}, {4, 1});
  expect_equal(run1(g, add(a, b)),
               {0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32,
                3, 4, 5, 13, 14, 15, 23, 24, 25, 33, 34, 35},
               {2, 4, 3});
}

// Bigger than one parallel chunk, with chunk borders inside rows, so that the chunk start
// indexing and the odometer over outer dims are exercised.
TEST(Binary, LargeBroadcastAcrossParallelChunks) {
  Graph g;
  const int64_t d0 = 40, d1 = 31, d2 = 53;
  std::vector<float> a(d0 * d1 * d2), b(d0 * d2);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 1000);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i) * 1000.0f;
  Tensor ta = g.constant(TensorData::from_vector<float>(a, {d0, d1, d2}));
  Tensor tb = g.constant(TensorData::from_vector<float>(b, {d0, 1, d2}));
  std::vector<double> expected;
  for (int64_t i = 0; i < d0; ++i)
    for (int64_t j = 0; j < d1; ++j)
      for (int64_t k = 0; k < d2; ++k) {
        expected.push_back(static_cast<double>(a[(i * d1 + j) * d2 + k]) + b[i * d2 + k]);
      }
  expect_equal(run1(g, add(ta, tb)), expected, {d0, d1, d2});
  // Same-shape contiguous fast path.
  std::vector<double> twice;
  for (float v : a) twice.push_back(2.0 * v);
  expect_equal(run1(g, add(ta, ta)), twice, {d0, d1, d2});
}

TEST(Binary, IntegerArithmeticTruncatesAndWraps) {
  Graph g;
  Tensor a = vec<int32_t>(g, {-7, 7, -7, 7, 6, -6}, {6});
  Tensor b = vec<int32_t>(g, {3, -3, -3, 3, 3, 3}, {6});
  expect_equal(run1(g, div(a, b)), {-2, -2, 2, 2, 2, -2}, {6});
  const int32_t kMin = std::numeric_limits<int32_t>::min(), kMax = std::numeric_limits<int32_t>::max();
  Tensor big = vec<int32_t>(g, {kMax, kMin, kMin}, {3});
  Tensor d = vec<int32_t>(g, {1, -1, -1}, {3});
  expect_equal(run1(g, add(big, d)), {kMin, kMax, kMax}, {3});  // wraps modulo 2^32
  expect_equal(run1(g, div(big, d)), {kMax, kMin, kMin}, {3});  // INT_MIN / -1 wraps to INT_MIN
  Tensor i8 = vec<int8_t>(g, {-128, 100}, {2});
  Tensor m1 = vec<int8_t>(g, {-1, 2}, {2});
  expect_equal(run1(g, div(i8, m1)), {-128, 50}, {2});
  expect_equal(run1(g, mul(i8, m1)), {-128, -56}, {2});  // 200 wraps to -56
  Tensor u = vec<uint8_t>(g, {250, 3, 200}, {3});
  Tensor v = vec<uint8_t>(g, {10, 5, 7}, {3});
  expect_equal(run1(g, add(u, v)), {4, 3 + 5, 207}, {3});
  expect_equal(run1(g, sub(u, v)), {240, 254, 193}, {3});
  expect_equal(run1(g, div(u, v)), {25, 0, 28}, {3});
  Tensor l = vec<int64_t>(g, {int64_t{1} << 40, -9}, {2});
  Tensor r = vec<int64_t>(g, {3, 2}, {2});
  expect_equal(run1(g, mul(l, r)), {3.0 * (int64_t{1} << 40), -18}, {2});
  expect_equal(run1(g, div(l, r)), {366503875925.0, -4}, {2});
}

TG_COVERS(value, mod);
TG_COVERS(value, floor_mod);
TG_COVERS(value, floor_div);
TEST(Binary, ModAndFloorSignRulesOnIntegers) {
  Graph g;
  Tensor a = vec<int32_t>(g, {-7, 7, -7, 7, 6, -6}, {6});
  Tensor b = vec<int32_t>(g, {3, -3, -3, 3, 3, 3}, {6});
  expect_equal(run1(g, mod(a, b)), {-1, 1, -1, 1, 0, 0}, {6});        // sign of the dividend
  expect_equal(run1(g, floor_mod(a, b)), {2, -2, -1, 1, 0, 0}, {6});  // sign of the divisor
  expect_equal(run1(g, floor_div(a, b)), {-3, -3, 2, 2, 2, -2}, {6}); // toward -inf
  Tensor c = vec<int64_t>(g, {-7, 7, -1, 0}, {4});
  Tensor two = g.constant(TensorData::scalar<int64_t>(2));
  expect_equal(run1(g, floor_div(c, two)), {-4, 3, -1, 0}, {4});
  expect_equal(run1(g, floor_mod(c, two)), {1, 1, 1, 0}, {4});
  expect_equal(run1(g, mod(c, two)), {-1, 1, -1, 0}, {4});
  Tensor i8 = vec<int8_t>(g, {-128, -128, -128, 127}, {4});
  Tensor d8 = vec<int8_t>(g, {-1, 3, -3, -128}, {4});
  expect_equal(run1(g, mod(i8, d8)), {0, -2, -2, 127}, {4});
  expect_equal(run1(g, floor_mod(i8, d8)), {0, 1, -2, -1}, {4});
  expect_equal(run1(g, floor_div(i8, d8)), {-128, -43, 42, -1}, {4});
  Tensor u = vec<uint8_t>(g, {255, 7}, {2});
  Tensor w = vec<uint8_t>(g, {16, 3}, {2});
  expect_equal(run1(g, mod(u, w)), {15, 1}, {2});
  expect_equal(run1(g, floor_mod(u, w)), {15, 1}, {2});
  expect_equal(run1(g, floor_div(u, w)), {15, 2}, {2});
}

TEST(Binary, ModAndFloorOnFloats) {
  Graph g;
  Tensor a = vec<double>(g, {-7, 7, -7, 7, 5.5, 1, 5, -1}, {8});
  Tensor b = vec<double>(g, {3, -3, -3, 3, 2, 0, kInf, kInf}, {8});
  expect_equal(run1(g, mod(a, b)), {-1, 1, -1, 1, 1.5, kNaN, 5, -1}, {8});
  expect_equal(run1(g, floor_mod(a, b)), {2, -2, -1, 1, 1.5, kNaN, 5, kInf}, {8});
  // floor(a/b): -1 / inf is -0.0, whose floor is -0.0 (Python's -1.0 // inf gives -1.0).
  expect_equal(run1(g, floor_div(a, b)), {-3, -3, 2, 2, 2, kInf, 0, -0.0}, {8});
  // An exact zero remainder: mod keeps the dividend's sign, floor_mod takes the divisor's.
  Tensor z = vec<float>(g, {-6, 6}, {2});
  Tensor zb = vec<float>(g, {3, -3}, {2});
  TensorData m = run1(g, mod(z, zb)), fm = run1(g, floor_mod(z, zb));
  expect_equal(m, {0, 0}, {2});
  expect_equal(fm, {0, 0}, {2});
  EXPECT_TRUE(std::signbit(m.element_as_double(0)));
  EXPECT_FALSE(std::signbit(m.element_as_double(1)));
  EXPECT_FALSE(std::signbit(fm.element_as_double(0)));
  EXPECT_TRUE(std::signbit(fm.element_as_double(1)));
}

TG_COVERS(value, maximum);
TG_COVERS(value, minimum);
TEST(Binary, MaximumMinimumPropagateNaN) {
  Graph g;
  Tensor a = vec<float>(g, {1, NAN, 3, NAN, -INFINITY, 2}, {6});
  Tensor b = vec<float>(g, {2, 1, NAN, NAN, 0, INFINITY}, {6});
  expect_equal(run1(g, maximum(a, b)), {2, kNaN, kNaN, kNaN, 0, kInf}, {6});
  expect_equal(run1(g, minimum(a, b)), {1, kNaN, kNaN, kNaN, -kInf, 2}, {6});
  expect_equal(run1(g, maximum(b, a)), {2, kNaN, kNaN, kNaN, 0, kInf}, {6});
  expect_equal(run1(g, minimum(b, a)), {1, kNaN, kNaN, kNaN, -kInf, 2}, {6});
  Tensor i = vec<int32_t>(g, {-5, 0, 7}, {3});
  Tensor zero = g.constant(TensorData::scalar<int32_t>(0));
  expect_equal(run1(g, maximum(i, zero)), {0, 0, 7}, {3});
  expect_equal(run1(g, minimum(i, zero)), {-5, 0, 0}, {3});
  Tensor u = vec<uint8_t>(g, {0, 200}, {2});
  Tensor v = vec<uint8_t>(g, {255, 100}, {2});
  expect_equal(run1(g, maximum(u, v)), {255, 200}, {2});
  expect_equal(run1(g, minimum(u, v)), {0, 100}, {2});
  Tensor h = g.constant(TensorData::from_vector<f16_t>(halves({1.5f, NAN}), {2}));
  Tensor k = g.constant(TensorData::from_vector<f16_t>(halves({-2.f, 0.f}), {2}));
  expect_equal(run1(g, maximum(h, k)), {1.5, kNaN}, {2});
  expect_equal(run1(g, minimum(h, k)), {-2, kNaN}, {2});
}

TEST(Binary, InfinityArithmetic) {
  Graph g;
  Tensor a = vec<double>(g, {kInf, kInf, 1, -1, 0, kInf, 2}, {7});
  Tensor b = vec<double>(g, {-kInf, 0, 0, 0, 0, kInf, kInf}, {7});
  expect_equal(run1(g, add(a, b)), {kNaN, kInf, 1, -1, 0, kInf, kInf}, {7});
  expect_equal(run1(g, mul(a, b)), {-kInf, kNaN, 0, 0, 0, kInf, kInf}, {7});
  expect_equal(run1(g, div(a, b)), {kNaN, kInf, kInf, -kInf, kNaN, kNaN, 0}, {7});
  expect_equal(run1(g, sub(a, b)), {kInf, kInf, 1, -1, 0, kNaN, -kInf}, {7});
}

TG_COVERS(value, pow);
TG_COVERS(value, atan2);
TEST(Binary, PowAndAtan2SpecialCases) {
  Graph g;
  Tensor x = vec<double>(g, {2, -2, -8, 0, -0.0, kNaN, 1, 4, -1, 0.5, 2, 0, kInf}, {13});
  Tensor y = vec<double>(g, {10, 3, 1.0 / 3, -1, -1, 0, kNaN, 0.5, kInf, -kInf, -kInf, 0, -1}, {13});
  expect_equal(run1(g, pow(x, y)), {1024, -8, kNaN, kInf, -kInf, 1, 1, 2, 1, kInf, 0, 1, 0}, {13});
  Tensor f = vec<float>(g, {3, 2}, {2});
  Tensor e = vec<float>(g, {2, -1}, {2});
  expect_equal(run1(g, pow(f, e)), {9, 0.5}, {2});
  Tensor yy = vec<double>(g, {1, 1, -1, 0, -0.0, 1, 0}, {7});
  Tensor xx = vec<double>(g, {1, -1, -1, -1, -1, 0, 0}, {7});
  expect_close(run1(g, atan2(yy, xx)), {kPi / 4, 3 * kPi / 4, -3 * kPi / 4, kPi, -kPi, kPi / 2, 0},
               {7}, 1e-15);
}

TEST(Binary, HalfPrecisionResultsAreRounded) {
  Graph g;
  Tensor h = g.constant(TensorData::from_vector<f16_t>(halves({1000.f, 60000.f, 1.f, 1.5f}), {4}));
  Tensor k = g.constant(TensorData::from_vector<f16_t>(halves({0.3f, 10000.f, 3.f, 0.25f}), {4}));
  EXPECT_EQ(add(h, k).dtype(), DType::f16);
  // f16 spacing near 1000 is 0.5: 1000 + 0.2999 rounds to 1000.5; 70000 overflows f16 to inf.
  expect_equal(run1(g, add(h, k)), {1000.5, kInf, 4, 1.75}, {4});
  EXPECT_EQ(run1(g, div(h, k)).element_as_double(2), 0.333251953125);  // f16(1/3)
  expect_equal(run1(g, less(h, k)), {0, 0, 1, 0}, {4});
  std::vector<bf16_t> bv = {bf16_t(256.f), bf16_t(2.f)};
  std::vector<bf16_t> cv = {bf16_t(1.5f), bf16_t(3.f)};
  Tensor b = g.constant(TensorData::from_vector<bf16_t>(bv, {2}));
  Tensor c = g.constant(TensorData::from_vector<bf16_t>(cv, {2}));
  EXPECT_EQ(mul(b, c).dtype(), DType::bf16);
  // bf16 spacing near 256 is 2: 257.5 rounds to 258.
  expect_equal(run1(g, add(b, c)), {258, 5}, {2});
  expect_equal(run1(g, mul(b, c)), {384, 6}, {2});
  expect_equal(run1(g, floor_mod(b, c)), {1, 2}, {2});
}

TG_COVERS(value, equal);
TG_COVERS(value, not_equal);
TG_COVERS(value, less);
TG_COVERS(value, less_equal);
TG_COVERS(value, greater);
TG_COVERS(value, greater_equal);
TEST(Binary, ComparisonsOnFloatsWithNaN) {
  Graph g;
  Tensor a = vec<float>(g, {1, 2, NAN, 3}, {4});
  Tensor b = vec<float>(g, {2, 2, NAN, 1}, {4});
  EXPECT_EQ(less(a, b).dtype(), DType::bool_);
  expect_equal(run1(g, equal(a, b)), {0, 1, 0, 0}, {4});
  expect_equal(run1(g, not_equal(a, b)), {1, 0, 1, 1}, {4});
  expect_equal(run1(g, less(a, b)), {1, 0, 0, 0}, {4});
  expect_equal(run1(g, less_equal(a, b)), {1, 1, 0, 0}, {4});
  expect_equal(run1(g, greater(a, b)), {0, 0, 0, 1}, {4});
  expect_equal(run1(g, greater_equal(a, b)), {0, 1, 0, 1}, {4});
}

TEST(Binary, ComparisonsOnIntsAndBools) {
  Graph g;
  Tensor i = vec<int32_t>(g, {-3, 0, 5}, {3});
  Tensor zero = g.constant(TensorData::scalar<int32_t>(0));
  expect_equal(run1(g, less(i, zero)), {1, 0, 0}, {3});
  expect_equal(run1(g, greater_equal(i, zero)), {0, 1, 1}, {3});
  expect_equal(run1(g, equal(zero, i)), {0, 1, 0}, {3});
  Tensor u = vec<uint8_t>(g, {0, 255}, {2});
  Tensor v = vec<uint8_t>(g, {255, 0}, {2});
  expect_equal(run1(g, greater(u, v)), {0, 1}, {2});
  Tensor l = vec<int64_t>(g, {int64_t{1} << 62, -1}, {2});
  Tensor r = vec<int64_t>(g, {(int64_t{1} << 62) + 1, -1}, {2});
  expect_equal(run1(g, less(l, r)), {1, 0}, {2});
  expect_equal(run1(g, equal(l, r)), {0, 1}, {2});
  Tensor p = vec<bool>(g, {false, false, true, true}, {4});
  Tensor q = vec<bool>(g, {false, true, false, true}, {4});
  expect_equal(run1(g, equal(p, q)), {1, 0, 0, 1}, {4});
  expect_equal(run1(g, not_equal(p, q)), {0, 1, 1, 0}, {4});
  expect_equal(run1(g, less(p, q)), {0, 1, 0, 0}, {4});
  expect_equal(run1(g, less_equal(p, q)), {1, 1, 0, 1}, {4});
  expect_equal(run1(g, greater(p, q)), {0, 0, 1, 0}, {4});
  expect_equal(run1(g, greater_equal(p, q)), {1, 0, 1, 1}, {4});
}

TG_COVERS(value, logical_and);
TG_COVERS(value, logical_or);
TG_COVERS(value, logical_xor);
TEST(Binary, LogicalOpsWithBroadcast) {
  Graph g;
  Tensor p = vec<bool>(g, {false, true}, {2, 1});
  Tensor q = vec<bool>(g, {false, true}, {1, 2});
  expect_equal(run1(g, logical_and(p, q)), {0, 0, 0, 1}, {2, 2});
  expect_equal(run1(g, logical_or(p, q)), {0, 1, 1, 1}, {2, 2});
  expect_equal(run1(g, logical_xor(p, q)), {0, 1, 1, 0}, {2, 2});
  EXPECT_EQ(logical_or(p, q).dtype(), DType::bool_);
}

TEST(Binary, OperatorsWithTensorsAndScalars) {
  Graph g;
  Tensor x = vec<float>(g, {1, 2, 4}, {3});
  Tensor y = vec<float>(g, {4, 4, 4}, {3});
  expect_equal(run1(g, x + y), {5, 6, 8}, {3});
  expect_equal(run1(g, x - y), {-3, -2, 0}, {3});
  expect_equal(run1(g, x * y), {4, 8, 16}, {3});
  expect_equal(run1(g, x / y), {0.25, 0.5, 1}, {3});
  expect_equal(run1(g, -x), {-1, -2, -4}, {3});
  expect_equal(run1(g, x + 2), {3, 4, 6}, {3});
  expect_equal(run1(g, 2 + x), {3, 4, 6}, {3});
  expect_equal(run1(g, x - 2), {-1, 0, 2}, {3});
  expect_equal(run1(g, 2 - x), {1, 0, -2}, {3});
  expect_equal(run1(g, x * 3), {3, 6, 12}, {3});
  expect_equal(run1(g, 3 * x), {3, 6, 12}, {3});
  expect_equal(run1(g, x / 4), {0.25, 0.5, 1}, {3});
  expect_equal(run1(g, 4 / x), {4, 2, 1}, {3});
  // The scalar takes the tensor's dtype.
  Tensor i = vec<int32_t>(g, {7, -7}, {2});
  EXPECT_EQ((i + 2).dtype(), DType::i32);
  EXPECT_EQ((2.0 * i).dtype(), DType::i32);
  expect_equal(run1(g, i + 2), {9, -5}, {2});
  expect_equal(run1(g, 2 - i), {-5, 9}, {2});
  expect_equal(run1(g, i / 2), {3, -3}, {2});  // integer division truncates
  expect_equal(run1(g, 10 / i), {1, -1}, {2});
  Tensor u = vec<uint8_t>(g, {250}, {1});
  expect_equal(run1(g, u + 10), {4}, {1});
  Tensor h = g.constant(TensorData::from_vector<f16_t>(halves({1.f}), {1}));
  EXPECT_EQ((h * 0.1).dtype(), DType::f16);
  expect_equal(run1(g, h * 0.1), {static_cast<float>(f16_t(0.1f))}, {1});
}

TEST(Binary, DynamicDimsAreCheckedWithFeedShapes) {
  Graph g;
  Tensor p = g.placeholder({-1, 3}, DType::f32, "p");
  Tensor q = vec<float>(g, {1, 2, 3}, {3});
  Tensor s = add(p, q);
  EXPECT_EQ(s.shape(), (Shape{-1, 3}));
  expect_equal(run1(g, s, {{p, TensorData::from_vector<float>({0, 0, 0, 1, 1, 1}, {2, 3})}}),
               {1, 2, 3, 2, 3, 4}, {2, 3});
  Tensor r = g.placeholder({-1}, DType::f32, "r");
  Tensor t = mul(r, q);
  EXPECT_EQ(t.shape(), (Shape{3}));
  expect_equal(run1(g, t, {{r, TensorData::from_vector<float>({2}, {1})}}), {2, 4, 6}, {3});
  EXPECT_TG_ERROR(run1(g, t, {{r, TensorData::from_vector<float>({1, 2}, {2})}}),
                  ErrorCode::shape_mismatch, "[mul]");
}

// ---- errors -----------------------------------------------------------------------------------

TG_COVERS(error, add);
TG_COVERS(error, sub);
TG_COVERS(error, mul);
TG_COVERS(error, div);
TG_COVERS(error, pow);
TG_COVERS(error, maximum);
TG_COVERS(error, minimum);
TG_COVERS(error, mod);
TG_COVERS(error, floor_mod);
TG_COVERS(error, floor_div);
TG_COVERS(error, atan2);
TG_COVERS(error, equal);
TG_COVERS(error, not_equal);
TG_COVERS(error, less);
TG_COVERS(error, less_equal);
TG_COVERS(error, greater);
TG_COVERS(error, greater_equal);
TG_COVERS(error, logical_and);
TG_COVERS(error, logical_or);
TG_COVERS(error, logical_xor);

using BinaryFn = Tensor (*)(Tensor, Tensor);
const std::pair<const char*, BinaryFn> kAllBinary[] = {
    {"add", add}, {"sub", sub}, {"mul", mul}, {"div", div}, {"pow", pow},
    {"maximum", maximum}, {"minimum", minimum}, {"mod", mod}, {"floor_mod", floor_mod},
    {"floor_div", floor_div}, {"atan2", atan2}, {"equal", equal}, {"not_equal", not_equal},
    {"less", less}, {"less_equal", less_equal}, {"greater", greater},
    {"greater_equal", greater_equal}, {"logical_and", logical_and}, {"logical_or", logical_or},
    {"logical_xor", logical_xor}};

TEST(Binary, DtypeMismatchShapeMismatchAndEmptyTensor) {
  Graph g, other;
  Tensor f = g.placeholder({2, 3}, DType::f32, "f");
  Tensor i = g.placeholder({2, 3}, DType::i32, "i");
  Tensor f4 = g.placeholder({4}, DType::f32, "f4");
  Tensor b = g.placeholder({2, 3}, DType::bool_, "b");
  Tensor b4 = g.placeholder({4}, DType::bool_, "b4");
  Tensor elsewhere = other.placeholder({2, 3}, DType::f32, "x");
  for (const auto& [name, fn] : kAllBinary) {
    const std::string tag = std::string("[") + name + "]";
    EXPECT_TG_ERROR(fn(f, i), ErrorCode::dtype_mismatch, tag + " operand dtypes differ: f32[2,3] and i32[2,3]");
    bool logical = tag.find("logical") != std::string::npos;
    EXPECT_TG_ERROR(logical ? fn(b, b4) : fn(f, f4), ErrorCode::shape_mismatch,
                    tag + " shapes [2,3] and [4] do not broadcast");
    EXPECT_TG_ERROR(fn(Tensor(), f), ErrorCode::invalid_argument, tag + " input 0 is an empty Tensor");
    EXPECT_TG_ERROR(fn(f, elsewhere), ErrorCode::invalid_argument, tag + " input 1 belongs to another graph");
  }
}

TEST(Binary, DtypeRulesPerOp) {
  Graph g;
  Tensor f = g.placeholder({2}, DType::f32, "f");
  Tensor i = g.placeholder({2}, DType::i32, "i");
  Tensor b = g.placeholder({2}, DType::bool_, "b");
  // The first 11 ops (add ... atan2) reject bool; comparisons accept it.
  for (size_t k = 0; k < 11; ++k) {
    const auto& [name, fn] = kAllBinary[k];
    EXPECT_TG_ERROR(fn(b, b), ErrorCode::dtype_mismatch, std::string("[") + name + "] needs");
  }
  EXPECT_TG_ERROR(add(b, b), ErrorCode::dtype_mismatch, "[add] needs numeric operands, got bool[2]");
  EXPECT_TG_ERROR(floor_div(b, b), ErrorCode::dtype_mismatch, "[floor_div] needs numeric operands, got bool[2]");
  EXPECT_TG_ERROR(pow(i, i), ErrorCode::dtype_mismatch, "[pow] needs floating operands, got i32[2]");
  EXPECT_TG_ERROR(atan2(i, i), ErrorCode::dtype_mismatch, "[atan2] needs floating operands, got i32[2]");
  EXPECT_TG_ERROR(logical_and(f, f), ErrorCode::dtype_mismatch, "[logical_and] needs bool operands, got f32[2]");
  EXPECT_TG_ERROR(logical_or(i, i), ErrorCode::dtype_mismatch, "[logical_or] needs bool operands, got i32[2]");
  EXPECT_TG_ERROR(logical_xor(f, f), ErrorCode::dtype_mismatch, "[logical_xor] needs bool operands, got f32[2]");
  EXPECT_TG_ERROR(less(b, i), ErrorCode::dtype_mismatch, "[less] operand dtypes differ");
}

TEST(Binary, IntegerDivisionByZeroRaisesAtRunTime) {
  Graph g;
  Tensor a = vec<int32_t>(g, {7, 8}, {2});
  Tensor d = g.placeholder({2}, DType::i32, "d");
  Feeds zero = {{d, TensorData::from_vector<int32_t>({1, 0}, {2})}};
  EXPECT_TG_ERROR(run1(g, div(a, d), zero), ErrorCode::invalid_argument, "[div] integer division by zero");
  EXPECT_TG_ERROR(run1(g, mod(a, d), zero), ErrorCode::invalid_argument, "[mod] integer division by zero");
  EXPECT_TG_ERROR(run1(g, floor_mod(a, d), zero), ErrorCode::invalid_argument,
                  "[floor_mod] integer division by zero");
  EXPECT_TG_ERROR(run1(g, floor_div(a, d), zero), ErrorCode::invalid_argument,
                  "[floor_div] integer division by zero");
  expect_equal(run1(g, div(a, d), {{d, TensorData::from_vector<int32_t>({2, -4}, {2})}}), {3, -2}, {2});
  // Other integer dtypes, a broadcast scalar zero, and a zero deep inside a parallel run.
  Tensor u = vec<uint8_t>(g, {1, 2}, {2});
  EXPECT_TG_ERROR(run1(g, div(u, g.constant(0.0, DType::u8))), ErrorCode::invalid_argument,
                  "[div] integer division by zero");
  std::vector<int64_t> big(100000, 3);
  big[77777] = 0;
  Tensor l = g.constant(TensorData::from_vector<int64_t>(big, {100000}));
  EXPECT_TG_ERROR(run1(g, floor_div(l, l)), ErrorCode::invalid_argument, "[floor_div] integer division by zero");
  // Floating division by zero is IEEE, not an error.
  Tensor f = vec<float>(g, {1}, {1});
  expect_equal(run1(g, div(f, g.constant(0.0, DType::f32))), {kInf}, {1});
}

TEST(Binary, OperatorScalarMustFitAnIntegerDtype) {
  Graph g;
  Tensor i = g.placeholder({2}, DType::i32, "i");
  Tensor u = g.placeholder({2}, DType::u8, "u");
  Tensor c = g.placeholder({2}, DType::i8, "c");
  EXPECT_TG_ERROR(i + 0.5, ErrorCode::invalid_argument, "[add] scalar 0.5 is not representable as i32");
  EXPECT_TG_ERROR(u - (-1.0), ErrorCode::invalid_argument, "[sub] scalar -1 is not representable as u8");
  EXPECT_TG_ERROR(200.0 * c, ErrorCode::invalid_argument, "[mul] scalar 200 is not representable as i8");
  EXPECT_TG_ERROR(i / kNaN, ErrorCode::invalid_argument, "[div] scalar nan is not representable as i32");
  EXPECT_TG_ERROR(i + 2147483648.0, ErrorCode::invalid_argument, "[add] scalar");
  EXPECT_TG_ERROR(Tensor() + 1.0, ErrorCode::invalid_argument, "[add] input 0 is an empty Tensor");
  EXPECT_TG_ERROR(1.0 - Tensor(), ErrorCode::invalid_argument, "[sub] input 1 is an empty Tensor");
  Tensor b = g.placeholder({2}, DType::bool_, "b");
  EXPECT_TG_ERROR(b + 1.0, ErrorCode::dtype_mismatch, "[add] needs numeric operands, got bool[2]");
  EXPECT_TG_ERROR(-b, ErrorCode::dtype_mismatch, "[neg]");
  EXPECT_EQ((i + -2147483648.0).dtype(), DType::i32);
}

}  // namespace
}  // namespace tg
