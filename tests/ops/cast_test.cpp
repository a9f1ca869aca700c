// Value and error tests of cast (hand-computed expectations).
#include <cstdint>
#include <limits>

#include "test_util.h"

namespace tg {
namespace {

using testing::expect_equal;
using testing::run1;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

template <typename T>
Tensor vec(Graph& g, std::initializer_list<T> v, Shape shape) {
  return g.constant(TensorData::from_vector<T>(v, std::move(shape)));
}

TG_COVERS(value, cast);
TEST(Cast, FloatToIntTruncatesTowardZeroAndSaturates) {
  Graph g;
  Tensor x = vec<float>(g, {1.9f, -1.9f, 0.5f, -0.5f, NAN, INFINITY, -INFINITY, 3e9f, -3e9f}, {9});
  Tensor y = cast(x, DType::i32);
  EXPECT_EQ(y.dtype(), DType::i32);
  EXPECT_EQ(run1(g, y).to_vector<int32_t>(),
            (std::vector<int32_t>{1, -1, 0, 0, 0, 2147483647, -2147483647 - 1, 2147483647, -2147483647 - 1}));
  Tensor u = vec<float>(g, {-1.5f, 255.9f, 256.f, 300.f, -0.5f, NAN, 7.99f}, {7});
  expect_equal(run1(g, cast(u, DType::u8)), {0, 255, 255, 255, 0, 0, 7}, {7});
  Tensor c = vec<float>(g, {127.9f, 128.f, -128.9f, -129.f, -200.f}, {5});
  expect_equal(run1(g, cast(c, DType::i8)), {127, 127, -128, -128, -128}, {5});
  Tensor d = vec<double>(g, {9.3e18, -9.3e18, 9.2e18, -0.99, kNaN, kInf}, {6});
  EXPECT_EQ(run1(g, cast(d, DType::i64)).to_vector<int64_t>(),
            (std::vector<int64_t>{std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(),
                                  9200000000000000000, 0, 0, std::numeric_limits<int64_t>::max()}));
  // f16/bf16 go through float.
  std::vector<f16_t> h = {f16_t(-3.75f), f16_t(INFINITY), f16_t(300.f)};
  Tensor th = g.constant(TensorData::from_vector<f16_t>(h, {3}));
  expect_equal(run1(g, cast(th, DType::i32)), {-3, 2147483647, 300}, {3});
  expect_equal(run1(g, cast(th, DType::u8)), {0, 255, 255}, {3});
}

TEST(Cast, IntToIntWrapsAndIntToFloatRounds) {
  Graph g;
  Tensor i = vec<int32_t>(g, {300, -129, 127, -1, 256, 257}, {6});
  expect_equal(run1(g, cast(i, DType::i8)), {44, 127, 127, -1, 0, 1}, {6});
  expect_equal(run1(g, cast(i, DType::u8)), {44, 127, 127, 255, 0, 1}, {6});
  Tensor l = vec<int64_t>(g, {(int64_t{1} << 32) + 5, -1, (int64_t{1} << 53) + 1}, {3});
  expect_equal(run1(g, cast(l, DType::i32)), {5, -1, 1}, {3});
  // 2^53 + 1 is not a double: it rounds to 2^53; 2^24 + 1 is not a float.
  EXPECT_EQ(run1(g, cast(l, DType::f64)).to_vector<double>()[2], 9007199254740992.0);
  Tensor big = vec<int32_t>(g, {16777217, -16777217}, {2});
  expect_equal(run1(g, cast(big, DType::f32)), {16777216, -16777216}, {2});
  Tensor u = vec<uint8_t>(g, {255, 0}, {2});
  expect_equal(run1(g, cast(u, DType::i8)), {-1, 0}, {2});
  expect_equal(run1(g, cast(u, DType::i64)), {255, 0}, {2});
  expect_equal(run1(g, cast(u, DType::f16)), {255, 0}, {2});
  // An int too large for f16 becomes inf; bf16 keeps 8 significant bits.
  Tensor m = vec<int32_t>(g, {70000, 257}, {2});
  expect_equal(run1(g, cast(m, DType::f16)), {kInf, 257}, {2});
  expect_equal(run1(g, cast(m, DType::bf16)), {70144, 256}, {2});
}

TEST(Cast, ToAndFromBool) {
  Graph g;
  Tensor f = vec<float>(g, {0.f, -0.f, 0.1f, NAN, -INFINITY}, {5});
  expect_equal(run1(g, cast(f, DType::bool_)), {0, 0, 1, 1, 1}, {5});
  Tensor i = vec<int32_t>(g, {0, 2, -1}, {3});
  expect_equal(run1(g, cast(i, DType::bool_)), {0, 1, 1}, {3});
  std::vector<f16_t> h = {f16_t(0.f), f16_t(0.5f)};
  expect_equal(run1(g, cast(g.constant(TensorData::from_vector<f16_t>(h, {2})), DType::bool_)), {0, 1}, {2});
  Tensor b = vec<bool>(g, {true, false}, {2});
  for (DType t : {DType::i8, DType::u8, DType::i32, DType::i64, DType::f16, DType::bf16, DType::f32, DType::f64}) {
    Tensor y = cast(b, t);
    EXPECT_EQ(y.dtype(), t);
    expect_equal(run1(g, y), {1, 0}, {2});
  }
}

TEST(Cast, FloatToFloatRounding) {
  Graph g;
  Tensor f = vec<float>(g, {65504.f, 65520.f, 1e-8f, 0.1f, -70000.f, NAN}, {6});
  // f16 max is 65504; 65520 is the midpoint to 65536 and rounds (to even) to inf.
  expect_equal(run1(g, cast(f, DType::f16)), {65504, kInf, 0, 0.0999755859375, -kInf, kNaN}, {6});
  // bf16: ties go to the even neighbour; NaN stays NaN.
  Tensor t = vec<float>(g, {1.00390625f, 1.01171875f, NAN, 3e38f}, {4});
  expect_equal(run1(g, cast(t, DType::bf16)), {1, 1.015625, kNaN, 3.00405527047391e38}, {4});
  Tensor d = vec<double>(g, {1e300, 1.0 / 3, -1e-300}, {3});
  TensorData r = run1(g, cast(d, DType::f32));
  expect_equal(r, {kInf, static_cast<double>(1.0f / 3.0f), 0}, {3});
  EXPECT_TRUE(std::signbit(r.element_as_double(2)));
  std::vector<bf16_t> hb = {bf16_t(1.5f), bf16_t(1e10f)};
  expect_equal(run1(g, cast(g.constant(TensorData::from_vector<bf16_t>(hb, {2})), DType::f16)), {1.5, kInf}, {2});
}

TEST(Cast, RoundTripsAreExact) {
  Graph g;
  const int32_t kMin = std::numeric_limits<int32_t>::min(), kMax = std::numeric_limits<int32_t>::max();
  Tensor i = vec<int32_t>(g, {kMin, -1, 0, kMax}, {4});
  expect_equal(run1(g, cast(cast(i, DType::f64), DType::i32)), {kMin, -1, 0, kMax}, {4});
  std::vector<f16_t> h = {f16_t(0.1f), f16_t(-65504.f), f16_t(6.1e-5f), f16_t(1e-7f)};
  Tensor th = g.constant(TensorData::from_vector<f16_t>(h, {4}));
  TensorData back = run1(g, cast(cast(th, DType::f32), DType::f16));
  std::vector<f16_t> got = back.to_vector<f16_t>();
  for (size_t k = 0; k < h.size(); ++k) EXPECT_EQ(got[k].bits, h[k].bits) << k;
  std::vector<bf16_t> hb = {bf16_t(0.1f), bf16_t(-3e38f)};
  Tensor tb = g.constant(TensorData::from_vector<bf16_t>(hb, {2}));
  std::vector<bf16_t> gotb = run1(g, cast(cast(tb, DType::f64), DType::bf16)).to_vector<bf16_t>();
  for (size_t k = 0; k < hb.size(); ++k) EXPECT_EQ(gotb[k].bits, hb[k].bits) << k;
  Tensor f = vec<float>(g, {0.1f, -1e-30f}, {2});
  EXPECT_EQ(run1(g, cast(cast(f, DType::f64), DType::f32)).to_vector<float>(), (std::vector<float>{0.1f, -1e-30f}));
  Tensor u = vec<uint8_t>(g, {0, 128, 255}, {3});
  expect_equal(run1(g, cast(cast(u, DType::i64), DType::u8)), {0, 128, 255}, {3});
  Tensor b = vec<bool>(g, {true, false}, {2});
  expect_equal(run1(g, cast(cast(b, DType::i32), DType::bool_)), {1, 0}, {2});
}

TEST(Cast, EveryPairOfDtypes) {
  Graph g;
  Tensor src = vec<double>(g, {0, 1, 100}, {3});
  for (DType from : kAllDTypes) {
    Tensor x = cast(src, from);
    for (DType to : kAllDTypes) {
      Tensor y = cast(x, to);
      EXPECT_EQ(y.dtype(), to);
      bool via_bool = from == DType::bool_ || to == DType::bool_;
      std::vector<double> expected = via_bool ? std::vector<double>{0, 1, 1} : std::vector<double>{0, 1, 100};
      SCOPED_TRACE(std::string(dtype_name(from)) + " -> " + std::string(dtype_name(to)));
      expect_equal(run1(g, y), expected, {3});
    }
  }
}

TEST(Cast, SameDtypeEmptyAndLarge) {
  Graph g;
  Tensor x = vec<float>(g, {1.5f, -2.f}, {2});
  expect_equal(run1(g, cast(x, DType::f32)), {1.5, -2}, {2});
  Tensor e = g.constant(TensorData::zeros({0, 3}));
  expect_equal(run1(g, cast(e, DType::i8)), {}, {0, 3});
  std::vector<float> big(70001);
  std::vector<double> expected;
  for (size_t k = 0; k < big.size(); ++k) {
    big[k] = static_cast<float>(k) * 0.5f - 1000.25f;
    expected.push_back(static_cast<double>(static_cast<int64_t>(big[k])));  // truncation
  }
  expect_equal(run1(g, cast(g.constant(TensorData::from_vector<float>(big, {70001})), DType::i32)), expected,
               {70001});
}

TG_COVERS(error, cast);
TEST(Cast, Errors) {
  Graph g;
  Tensor x = g.placeholder({2}, DType::f32, "x");
  EXPECT_TG_ERROR(cast(Tensor(), DType::f32), ErrorCode::invalid_argument, "[cast] input 0 is an empty Tensor");
  EXPECT_TG_ERROR(cast(x, static_cast<DType>(42)), ErrorCode::invalid_argument, "[cast] unknown dtype 42");
}

}  // namespace
}  // namespace tg
