// Value and error tests of the elementwise unary ops (hand-computed expectations).
#include <limits>

#include "test_util.h"

namespace tg {
namespace {

using testing::expect_close;
using testing::expect_equal;
using testing::run1;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

TG_COVERS(value, neg);
TG_COVERS(value, abs);
TG_COVERS(value, sign);
TG_COVERS(value, square);
TEST(Unary, NumericOpsOnFloatsAndInts) {
  Graph g;
  Tensor x = g.constant(TensorData::from_vector<float>({-2.5f, 0.f, 3.f, NAN}, {2, 2}));
  Tensor i = g.constant(TensorData::from_vector<int32_t>({-7, 0, 5}, {3}));
  expect_close(run1(g, neg(x)), {2.5, 0, -3, kNaN}, {2, 2});
  expect_close(run1(g, abs(x)), {2.5, 0, 3, kNaN}, {2, 2});
  expect_close(run1(g, sign(x)), {-1, 0, 1, kNaN}, {2, 2});
  expect_close(run1(g, square(x)), {6.25, 0, 9, kNaN}, {2, 2});
  expect_equal(run1(g, neg(i)), {7, 0, -5}, {3});
  expect_equal(run1(g, abs(i)), {7, 0, 5}, {3});
  expect_equal(run1(g, sign(i)), {-1, 0, 1}, {3});
  expect_equal(run1(g, square(i)), {49, 0, 25}, {3});
  expect_equal(run1(g, -i), {7, 0, -5}, {3});
}

TG_COVERS(value, exp);
TG_COVERS(value, log);
TG_COVERS(value, log1p);
TG_COVERS(value, expm1);
TG_COVERS(value, sqrt);
TG_COVERS(value, rsqrt);
TG_COVERS(value, reciprocal);
TEST(Unary, ExpLogFamilyWithSpecialValues) {
  Graph g;
  Tensor x = g.constant(TensorData::from_vector<double>({0.0, 1.0, 4.0, -1.0, kInf}, {5}));
  expect_close(run1(g, exp(x)), {1, std::exp(1.0), std::exp(4.0), std::exp(-1.0), kInf}, {5}, 1e-15);
  expect_close(run1(g, log(x)), {-kInf, 0, std::log(4.0), kNaN, kInf}, {5}, 1e-15);
  expect_close(run1(g, log1p(x)), {0, std::log(2.0), std::log(5.0), -kInf, kInf}, {5}, 1e-15);
  expect_close(run1(g, expm1(x)), {0, std::exp(1.0) - 1, std::exp(4.0) - 1, std::exp(-1.0) - 1, kInf},
               {5}, 1e-15);
  expect_close(run1(g, sqrt(x)), {0, 1, 2, kNaN, kInf}, {5}, 1e-15);
  expect_close(run1(g, rsqrt(x)), {kInf, 1, 0.5, kNaN, 0}, {5}, 1e-15);
  expect_close(run1(g, reciprocal(x)), {kInf, 1, 0.25, -1, 0}, {5}, 1e-15);
  // log1p and expm1 keep precision for tiny arguments where log(1+x) would not.
  Tensor tiny = g.constant(TensorData::from_vector<float>({1e-10f}, {1}));
  expect_close(run1(g, log1p(tiny)), {1e-10}, {1}, 1e-6, 0);
  expect_close(run1(g, expm1(tiny)), {1e-10}, {1}, 1e-6, 0);
}

TG_COVERS(value, sin);
TG_COVERS(value, cos);
TG_COVERS(value, tan);
TG_COVERS(value, tanh);
TG_COVERS(value, sigmoid);
TG_COVERS(value, erf);
TEST(Unary, TrigAndActivations) {
  Graph g;
  const double pi = 3.14159265358979323846;
  Tensor x = g.constant(TensorData::from_vector<double>({0.0, pi / 6, pi / 4, -1.0}, {4}));
  expect_close(run1(g, sin(x)), {0, 0.5, std::sqrt(0.5), std::sin(-1.0)}, {4}, 1e-14, 1e-15);
  expect_close(run1(g, cos(x)), {1, std::sqrt(3.0) / 2, std::sqrt(0.5), std::cos(-1.0)}, {4}, 1e-14);
  expect_close(run1(g, tan(x)), {0, 1 / std::sqrt(3.0), 1, std::tan(-1.0)}, {4}, 1e-14, 1e-15);
  expect_close(run1(g, tanh(x)), {0, std::tanh(pi / 6), std::tanh(pi / 4), -0.7615941559557649}, {4}, 1e-14);
  expect_close(run1(g, erf(x)), {0, std::erf(pi / 6), std::erf(pi / 4), -0.8427007929497149}, {4}, 1e-14);
  Tensor s = g.constant(TensorData::from_vector<float>({0.f, 1000.f, -1000.f, 2.f}, {4}));
  expect_close(run1(g, sigmoid(s)), {0.5, 1, 0, 1 / (1 + std::exp(-2.0))}, {4}, 1e-6);
}

TG_COVERS(value, floor);
TG_COVERS(value, ceil);
TG_COVERS(value, round);
TEST(Unary, RoundingHalfToEven) {
  Graph g;
  Tensor x = g.constant(TensorData::from_vector<float>({-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f, 2.7f, -2.7f}, {8}));
  expect_equal(run1(g, round(x)), {-2, -2, -0.0, 0, 2, 2, 3, -3}, {8});
  expect_equal(run1(g, floor(x)), {-3, -2, -1, 0, 1, 2, 2, -3}, {8});
  expect_equal(run1(g, ceil(x)), {-2, -1, -0.0, 1, 2, 3, 3, -2}, {8});
}

TG_COVERS(value, logical_not);
TG_COVERS(value, is_nan);
TG_COVERS(value, is_inf);
TEST(Unary, LogicalAndClassification) {
  Graph g;
  Tensor b = g.constant(TensorData::from_vector<bool>({true, false}, {2}));
  expect_equal(run1(g, logical_not(b)), {0, 1}, {2});
  Tensor x = g.constant(TensorData::from_vector<float>({1.f, NAN, INFINITY, -INFINITY}, {4}));
  expect_equal(run1(g, is_nan(x)), {0, 1, 0, 0}, {4});
  expect_equal(run1(g, is_inf(x)), {0, 0, 1, 1}, {4});
  EXPECT_EQ(is_nan(x).dtype(), DType::bool_);
}

TEST(Unary, HalfPrecisionComputesInF32) {
  Graph g;
  Tensor h = cast(g.constant(TensorData::from_vector<float>({0.f, 1.f, -1.f}, {3})), DType::f16);
  EXPECT_EQ(exp(h).dtype(), DType::f16);
  // f16 has 11 significant bits: relative error <= 2^-11.
  expect_close(run1(g, exp(h)), {1, std::exp(1.0), std::exp(-1.0)}, {3}, 1.0 / 2048, 0);
  Tensor b = cast(g.constant(TensorData::from_vector<float>({4.f, 9.f}, {2})), DType::bf16);
  expect_close(run1(g, sqrt(b)), {2, 3}, {2}, 1.0 / 128, 0);
}

TEST(Unary, EmptyTensor) {
  Graph g;
  Tensor x = g.constant(TensorData::zeros({0, 3}));
  expect_close(run1(g, exp(x)), {}, {0, 3});
}

TG_COVERS(error, neg);
TG_COVERS(error, abs);
TG_COVERS(error, sign);
TG_COVERS(error, square);
TG_COVERS(error, exp);
TG_COVERS(error, log);
TG_COVERS(error, log1p);
TG_COVERS(error, expm1);
TG_COVERS(error, sqrt);
TG_COVERS(error, rsqrt);
TG_COVERS(error, reciprocal);
TG_COVERS(error, sin);
TG_COVERS(error, cos);
TG_COVERS(error, tan);
TG_COVERS(error, tanh);
TG_COVERS(error, sigmoid);
TG_COVERS(error, erf);
TG_COVERS(error, floor);
TG_COVERS(error, ceil);
TG_COVERS(error, round);
TG_COVERS(error, logical_not);
TG_COVERS(error, is_nan);
TG_COVERS(error, is_inf);
TEST(Unary, DtypeErrorsNameTheOp) {
  Graph g;
  Tensor i = g.placeholder({2}, DType::i32, "i");
  Tensor b = g.placeholder({2}, DType::bool_, "b");
  Tensor f = g.placeholder({2}, DType::f32, "f");
  using Fn = Tensor (*)(Tensor);
  const std::pair<const char*, Fn> float_only[] = {
      {"exp", exp},   {"log", log},   {"log1p", log1p}, {"expm1", expm1},     {"sqrt", sqrt},
      {"rsqrt", rsqrt}, {"reciprocal", reciprocal}, {"sin", sin}, {"cos", cos}, {"tan", tan},
      {"tanh", tanh}, {"sigmoid", sigmoid}, {"erf", erf}, {"floor", floor}, {"ceil", ceil},
      {"round", round}, {"is_nan", is_nan}, {"is_inf", is_inf}};
  for (const auto& [name, fn] : float_only) {
    EXPECT_TG_ERROR(fn(i), ErrorCode::dtype_mismatch, std::string("[") + name + "]");
  }
  const std::pair<const char*, Fn> numeric[] = {{"neg", neg}, {"abs", abs}, {"sign", sign}, {"square", square}};
  for (const auto& [name, fn] : numeric) {
    EXPECT_TG_ERROR(fn(b), ErrorCode::dtype_mismatch, std::string("[") + name + "] needs a numeric input, got bool[2]");
  }
  EXPECT_TG_ERROR(logical_not(f), ErrorCode::dtype_mismatch, "[logical_not] needs a bool input, got f32[2]");
  EXPECT_TG_ERROR(exp(Tensor()), ErrorCode::invalid_argument, "[exp] input 0 is an empty Tensor");
}

}  // namespace
}  // namespace tg
