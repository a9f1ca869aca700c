// Value and error tests of the reductions, argmax/argmin and the mean/variance composites
// (hand-computed expectations).
#include <cstdint>
#include <limits>
#include <numeric>

#include "test_util.h"

namespace tg {
namespace {

using testing::expect_close;
using testing::expect_equal;
using testing::run1;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// [2,3,4] holding 0..23 (element (i,j,k) = 12i + 4j + k).
Tensor iota24(Graph& g, DType dtype = DType::f32) {
  std::vector<float> v(24);
  std::iota(v.begin(), v.end(), 0.f);
  return cast(g.constant(TensorData::from_vector<float>(v, {2, 3, 4})), dtype);
}

TG_COVERS(value, reduce_sum);
TEST(Reduce, SumSingleAxisNegativeAxisAndKeepDims) {
  Graph g;
  Tensor x = g.constant(TensorData::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}));
  expect_close(run1(g, reduce_sum(x, {{0}})), {5, 7, 9}, {3});
  expect_close(run1(g, reduce_sum(x, {{1}})), {6, 15}, {2});
  expect_close(run1(g, reduce_sum(x, {{-1}})), {6, 15}, {2});
  expect_close(run1(g, reduce_sum(x, {{-2}, true})), {5, 7, 9}, {1, 3});
  expect_close(run1(g, reduce_sum(x, {{1}, true})), {6, 15}, {2, 1});
  expect_close(run1(g, reduce_sum(x)), {21}, {});
  expect_close(run1(g, reduce_sum(x, {{}, true})), {21}, {1, 1});
  EXPECT_EQ(reduce_sum(x, {{1}, true}).shape(), (Shape{2, 1}));
}

TEST(Reduce, SumMultipleAxes) {
  Graph g;
  Tensor x = iota24(g);
  // Over i and k: sum of 12i + 4j + k = 32j + 60.
  expect_close(run1(g, reduce_sum(x, {{0, 2}})), {60, 92, 124}, {3});
  expect_close(run1(g, reduce_sum(x, {{2, -3}, true})), {60, 92, 124}, {1, 3, 1});
  // Over i and j (leading axes): 60 + 6k.
  expect_close(run1(g, reduce_sum(x, {{0, 1}})), {60, 66, 72, 78}, {4});
  // Over j and k (trailing axes): 144i + 66.
  expect_close(run1(g, reduce_sum(x, {{1, 2}})), {66, 210}, {2});
  // Over j only (middle axis): 12i*3 + 12 + 3k.
  expect_close(run1(g, reduce_sum(x, {{1}})), {12, 15, 18, 21, 48, 51, 54, 57}, {2, 4});
  expect_close(run1(g, reduce_sum(x, {{0, 1, 2}})), {276}, {});
  // Size-1 dims between reduced groups are skipped correctly.
  Tensor y = reshape(x, {2, 1, 3, 1, 4});
  expect_close(run1(g, reduce_sum(y, {{0, 4}})), {60, 92, 124}, {1, 3, 1});
}

TG_COVERS(value, reduce_prod);
TG_COVERS(value, reduce_max);
TG_COVERS(value, reduce_min);
TEST(Reduce, ProdMaxMinOnFloatsAndInts) {
  Graph g;
  Tensor x = g.constant(TensorData::from_vector<float>({1, -2, 3, 4, 5, -6}, {2, 3}));
  expect_close(run1(g, reduce_prod(x, {{1}})), {-6, -120}, {2});
  expect_close(run1(g, reduce_prod(x)), {720}, {});
  expect_close(run1(g, reduce_max(x, {{0}})), {4, 5, 3}, {3});
  expect_close(run1(g, reduce_min(x, {{1}})), {-2, -6}, {2});
  expect_close(run1(g, reduce_max(x)), {5}, {});
  Tensor i = g.constant(TensorData::from_vector<int32_t>({7, -3, 2, 0, -9, 4}, {3, 2}));
  expect_equal(run1(g, reduce_sum(i, {{0}})), {0, 1}, {2});
  expect_equal(run1(g, reduce_prod(i, {{1}})), {-21, 0, -36}, {3});
  expect_equal(run1(g, reduce_max(i, {{0}})), {7, 4}, {2});
  expect_equal(run1(g, reduce_min(i)), {-9}, {});
  EXPECT_EQ(reduce_sum(i).dtype(), DType::i32);
  Tensor l = g.constant(TensorData::from_vector<int64_t>({int64_t{1} << 40, 3}, {2}));
  expect_equal(run1(g, reduce_sum(l)), {static_cast<double>((int64_t{1} << 40) + 3)}, {});
  Tensor u = g.constant(TensorData::from_vector<uint8_t>({200, 7, 13}, {3}));
  expect_equal(run1(g, reduce_max(u)), {200}, {});
  expect_equal(run1(g, reduce_min(u)), {7}, {});
}

TEST(Reduce, IntegerSumsWrapInTheirType) {
  Graph g;
  Tensor x = g.constant(TensorData::from_vector<int8_t>({100, 100, 7}, {3}));
  expect_equal(run1(g, reduce_sum(x)), {-49}, {});  // 207 - 256
  Tensor y = g.constant(TensorData::from_vector<int32_t>({2147483647, 1}, {2}));
  expect_equal(run1(g, reduce_sum(y)), {-2147483648.0}, {});
}

TG_COVERS(value, reduce_and);
TG_COVERS(value, reduce_or);
TEST(Reduce, AndOrOnBool) {
  Graph g;
  Tensor b = g.constant(TensorData::from_vector<bool>({true, true, false, true, false, false}, {2, 3}));
  expect_equal(run1(g, reduce_and(b, {{1}})), {0, 0}, {2});
  expect_equal(run1(g, reduce_or(b, {{1}})), {1, 1}, {2});
  expect_equal(run1(g, reduce_and(b, {{0}})), {1, 0, 0}, {3});
  expect_equal(run1(g, reduce_or(b, {{0}, true})), {1, 1, 0}, {1, 3});
  expect_equal(run1(g, reduce_and(b)), {0}, {});
  EXPECT_EQ(reduce_or(b).dtype(), DType::bool_);
}

TEST(Reduce, EmptyDimsGiveTheIdentity) {
  Graph g;
  Tensor x = g.constant(TensorData::zeros({2, 0}));
  expect_close(run1(g, reduce_sum(x, {{1}})), {0, 0}, {2});
  expect_close(run1(g, reduce_prod(x, {{1}})), {1, 1}, {2});
  expect_close(run1(g, reduce_max(x, {{1}})), {-kInf, -kInf}, {2});
  expect_close(run1(g, reduce_min(x, {{-1}, true})), {kInf, kInf}, {2, 1});
  expect_close(run1(g, reduce_sum(x)), {0}, {});
  expect_close(run1(g, reduce_sum(x, {{0}})), {}, {0});
  Tensor i = g.constant(TensorData::zeros({0, 3}, DType::i32));
  expect_equal(run1(g, reduce_max(i, {{0}})), {-2147483648.0, -2147483648.0, -2147483648.0}, {3});
  expect_equal(run1(g, reduce_min(i, {{0}})), {2147483647, 2147483647, 2147483647}, {3});
  Tensor u = g.constant(TensorData::zeros({0}, DType::u8));
  expect_equal(run1(g, reduce_max(u)), {0}, {});
  expect_equal(run1(g, reduce_min(u)), {255}, {});
  Tensor b = g.constant(TensorData::zeros({0}, DType::bool_));
  expect_equal(run1(g, reduce_and(b)), {1}, {});
  expect_equal(run1(g, reduce_or(b)), {0}, {});
}

TEST(Reduce, ScalarInputIsUnchanged) {
  Graph g;
  Tensor s = g.constant(2.5, DType::f32);
  expect_close(run1(g, reduce_sum(s)), {2.5}, {});
  expect_close(run1(g, reduce_max(s, {{}, true})), {2.5}, {});
}

TEST(Reduce, MaxMinPropagateNaN) {
  Graph g;
  Tensor x = g.constant(TensorData::from_vector<float>({1, NAN, 3, NAN, 0, 2, 5, 6, NAN}, {3, 3}));
  expect_close(run1(g, reduce_max(x, {{1}})), {kNaN, kNaN, kNaN}, {3});
  expect_close(run1(g, reduce_min(x, {{0}})), {kNaN, kNaN, kNaN}, {3});
  Tensor y = g.constant(TensorData::from_vector<double>({1, 4, NAN, 2, -1, 7}, {3, 2}));
  expect_close(run1(g, reduce_max(y, {{0}})), {kNaN, 7}, {2});
  expect_close(run1(g, reduce_min(y, {{1}})), {1, kNaN, -1}, {3});
  // A NaN after more than one pairwise block of a long row still wins.
  std::vector<float> v(1000, 1.f);
  v[999] = NAN;
  Tensor z = g.constant(TensorData::from_vector<float>(v, {1000}));
  expect_close(run1(g, reduce_max(z)), {kNaN}, {});
  expect_close(run1(g, reduce_min(z)), {kNaN}, {});
}

TEST(Reduce, F64Accuracy) {
  Graph g;
  // 1 + 1000 * 1e-10: an f32 accumulator would lose the small terms entirely.
  std::vector<double> v(1001, 1e-10);
  v[0] = 1.0;
  Tensor x = g.constant(TensorData::from_vector<double>(v, {1001}));
  expect_close(run1(g, reduce_sum(x)), {1.0000001}, {}, 1e-15, 0);
  Tensor y = g.constant(TensorData::from_vector<double>({0.1, 0.2, 0.3, 1e-20}, {2, 2}));
  expect_close(run1(g, reduce_sum(y, {{0}})), {0.4, 0.2}, {2}, 1e-15, 0);
}

TEST(Reduce, LargeSumsMatchClosedForms) {
  Graph g;
  const int64_t n = int64_t{1} << 20;
  std::vector<float> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0.f);  // exact in f32 (< 2^24)
  Tensor x = g.constant(TensorData::from_vector<float>(v, {n}));
  double total = static_cast<double>(n) * (n - 1) / 2;  // 549755289600
  expect_close(run1(g, reduce_sum(x)), {total}, {}, 1e-7, 0);
  // Few long rows (split over chunks of the reduced dim): row r sums r*h*h + h(h-1)/2.
  const double h = static_cast<double>(n / 2);
  expect_close(run1(g, reduce_sum(reshape(x, {2, n / 2}), {{1}})),
               {h * (h - 1) / 2, h * h + h * (h - 1) / 2}, {2}, 1e-7, 0);
  // Leading axis with two columns: column c sums 2i + c over i < n/2.
  expect_close(run1(g, reduce_sum(reshape(x, {n / 2, 2}), {{0}})), {h * (h - 1), h * (h - 1) + h},
               {2}, 1e-7, 0);
  // 1024 x 1024 both ways: column c sums 1024 i + c; row r sums 1024^2 r + 1024*1023/2.
  Tensor m = reshape(x, {1024, 1024});
  TensorData cols = run1(g, reduce_sum(m, {{0}}));
  TensorData rows = run1(g, reduce_sum(m, {{1}}));
  for (int64_t c : {0, 1, 511, 512, 1023}) {
    EXPECT_NEAR(cols.element_as_double(c), 1024.0 * 523776 + 1024.0 * c, 1e-7 * 6e8) << c;
    EXPECT_NEAR(rows.element_as_double(c), 1048576.0 * c + 523776, 1e-7 * 1.2e9) << c;
  }
  // 0.1f a million times: a float accumulator drifts by ~1%, ours stays exact to f32 rounding.
  Tensor tenth = g.constant(TensorData::full({n}, DType::f32, 0.1));
  expect_close(run1(g, reduce_sum(tenth)), {n * static_cast<double>(0.1f)}, {}, 1e-7, 0);
}

TEST(Reduce, HalfPrecisionAccumulatesInF32) {
  Graph g;
  // 4096 ones: an f16 accumulator would stop at 2048.
  Tensor x = cast(g.constant(TensorData::full({4096}, DType::f32, 1.0)), DType::f16);
  expect_close(run1(g, reduce_sum(x)), {4096}, {}, 0, 0);
  Tensor b = cast(g.constant(TensorData::from_vector<float>({1, 2, 3, 4}, {2, 2})), DType::bf16);
  expect_close(run1(g, reduce_max(b, {{1}})), {2, 4}, {2}, 0, 0);
  EXPECT_EQ(reduce_sum(x).dtype(), DType::f16);
}

TG_COVERS(value, argmax);
TG_COVERS(value, argmin);
TEST(Reduce, ArgmaxArgminTiesAndAxes) {
  Graph g;
  Tensor x = g.constant(TensorData::from_vector<float>({1, 3, 3, 2, 2, 1}, {2, 3}));
  expect_equal(run1(g, argmax(x, {1})), {1, 0}, {2});
  expect_equal(run1(g, argmin(x, {-1})), {0, 2}, {2});
  expect_equal(run1(g, argmax(x, {0})), {1, 0, 0}, {3});
  expect_equal(run1(g, argmin(x, {0, true})), {0, 1, 1}, {1, 3});
  EXPECT_EQ(argmax(x).dtype(), DType::i64);
  Tensor i = g.constant(TensorData::from_vector<int32_t>({-5, 9, 9, -5}, {4}));
  expect_equal(run1(g, argmax(i)), {1}, {});
  expect_equal(run1(g, argmin(i)), {0}, {});
  Tensor inf = g.constant(TensorData::from_vector<float>({-INFINITY, -INFINITY, INFINITY, INFINITY}, {2, 2}));
  expect_equal(run1(g, argmax(inf, {1})), {0, 0}, {2});
  expect_equal(run1(g, argmin(inf, {1})), {0, 0}, {2});
  Tensor b = g.constant(TensorData::from_vector<bool>({false, true, true}, {3}));
  expect_equal(run1(g, argmax(b)), {1}, {});
}

TEST(Reduce, ArgmaxArgminFirstNaNWins) {
  Graph g;
  Tensor x = g.constant(TensorData::from_vector<double>({1, NAN, 5, NAN}, {4}));
  expect_equal(run1(g, argmax(x)), {1}, {});
  expect_equal(run1(g, argmin(x)), {1}, {});
  Tensor y = g.constant(TensorData::from_vector<float>({1, 2, 9, NAN, 0, NAN}, {3, 2}));
  expect_equal(run1(g, argmax(y, {0})), {1, 1}, {2});
  expect_equal(run1(g, argmin(y, {0})), {2, 1}, {2});
}

TEST(Reduce, ArgmaxLongRowKeepsTheFirstOfTiesAcrossChunks) {
  Graph g;
  const int64_t n = int64_t{1} << 20;
  std::vector<float> v(static_cast<size_t>(n), 0.f);
  v[500000] = 5.f;
  v[900000] = 5.f;
  v[300000] = -5.f;
  v[800000] = -5.f;
  Tensor x = g.constant(TensorData::from_vector<float>(v, {n}));
  expect_equal(run1(g, argmax(x)), {500000}, {});
  expect_equal(run1(g, argmin(x)), {300000}, {});
  // Leading axis of [n/4, 4]: column 0 holds v[4i].
  expect_equal(run1(g, argmax(reshape(x, {n / 4, 4}), {0})), {125000, 0, 0, 0}, {4});
}

TEST(Reduce, LeadingAxisOfNarrowAndWideRows) {
  Graph g;
  // [1000, 3]: column 0 is 1, column 1 is 2, column 2 is the row index; max 9 at row 777 of
  // column 0, NaN in the last row of column 1 and in row 500 of column 2.
  std::vector<float> v(3000);
  for (int r = 0; r < 1000; ++r) {
    v[3 * r] = 1;
    v[3 * r + 1] = 2;
    v[3 * r + 2] = static_cast<float>(r);
  }
  Tensor x = g.constant(TensorData::from_vector<float>(v, {1000, 3}));
  expect_close(run1(g, reduce_sum(x, {{0}})), {1000, 2000, 499500}, {3});
  v[3 * 777] = 9;
  v[3 * 999 + 1] = NAN;
  v[3 * 500 + 2] = NAN;
  Tensor y = g.constant(TensorData::from_vector<float>(v, {1000, 3}));
  expect_close(run1(g, reduce_max(y, {{0}})), {9, kNaN, kNaN}, {3});
  expect_close(run1(g, reduce_min(y, {{0}})), {1, kNaN, kNaN}, {3});
  // [300, 40] (rows span several row blocks): 7 at rows 200 (even columns) and 150, 250 (odd
  // columns); column 39 holds NaN at rows 260 and 270.
  std::vector<double> w(300 * 40, 0.0);
  for (int j = 0; j < 40; ++j) {
    if (j % 2 == 0) {
      w[200 * 40 + j] = 7;
    } else {
      w[150 * 40 + j] = 7;
      w[250 * 40 + j] = 7;
    }
  }
  w[260 * 40 + 39] = NAN;
  w[270 * 40 + 39] = NAN;
  Tensor z = g.constant(TensorData::from_vector<double>(w, {300, 40}));
  std::vector<double> amax, amin;
  for (int j = 0; j < 40; ++j) {
    amax.push_back(j == 39 ? 260 : j % 2 == 0 ? 200 : 150);
    amin.push_back(j == 39 ? 260 : 0);
  }
  expect_equal(run1(g, argmax(z, {0})), amax, {40});
  expect_equal(run1(g, argmin(z, {0})), amin, {40});
}

TEST(Reduce, MeanAndVariance) {
  Graph g;
  Tensor x = g.constant(TensorData::from_vector<float>({1, 2, 3, 4}, {2, 2}));
  expect_close(run1(g, reduce_mean(x, {{0}})), {2, 3}, {2});
  expect_close(run1(g, mean(x)), {2.5}, {});
  expect_close(run1(g, reduce_mean(x, {{1}, true})), {1.5, 3.5}, {2, 1});
  expect_close(run1(g, reduce_variance(x)), {1.25}, {});
  expect_close(run1(g, reduce_variance(x, {{0}, true})), {1, 1}, {1, 2});
  // Stable for a large offset (E[x^2] - E[x]^2 would cancel catastrophically).
  Tensor big = g.constant(TensorData::from_vector<double>({1e9 + 1, 1e9 + 2, 1e9 + 3, 1e9 + 4}, {4}));
  expect_close(run1(g, reduce_variance(big)), {1.25}, {}, 1e-12);
  expect_close(run1(g, reduce_mean(big)), {1e9 + 2.5}, {}, 1e-15);
  // f16: the sum (6e4 * 4) would overflow f16, the mean does not.
  Tensor h = cast(g.constant(TensorData::full({4}, DType::f32, 60000.0)), DType::f16);
  EXPECT_EQ(reduce_mean(h).dtype(), DType::f16);
  expect_close(run1(g, reduce_mean(h)), {60000}, {}, 1e-3);
  expect_close(run1(g, reduce_variance(h)), {0}, {});
  // Mean of nothing is NaN (0 / 0), as numpy.
  Tensor e = g.constant(TensorData::zeros({0, 2}));
  expect_close(run1(g, reduce_mean(e, {{0}})), {kNaN, kNaN}, {2});
}

TEST(Reduce, MeanWithDynamicDims) {
  Graph g;
  Tensor p = g.placeholder({-1, 2}, DType::f32, "p");
  Tensor m = reduce_mean(p, {{0}});
  Tensor v = reduce_variance(p);
  TensorData feed = TensorData::from_vector<float>({1, 10, 3, 20, 5, 30}, {3, 2});
  expect_close(run1(g, m, {{p, feed}}), {3, 20}, {2});
  // Mean 11.5; squared deviations 110.25, 2.25, 72.25, 72.25, 42.25, 342.25 -> 641.5 / 6.
  expect_close(run1(g, v, {{p, feed}}), {641.5 / 6}, {}, 1e-6);
}

TG_COVERS(error, reduce_sum);
TG_COVERS(error, reduce_prod);
TG_COVERS(error, reduce_max);
TG_COVERS(error, reduce_min);
TG_COVERS(error, reduce_and);
TG_COVERS(error, reduce_or);
TEST(Reduce, AxisAndDtypeErrorsNameTheOp) {
  Graph g;
  Tensor f = g.placeholder({2, 3}, DType::f32, "f");
  Tensor b = g.placeholder({2, 3}, DType::bool_, "b");
  using Fn = Tensor (*)(Tensor, ReduceDesc);
  const std::pair<const char*, Fn> numeric[] = {{"reduce_sum", reduce_sum}, {"reduce_prod", reduce_prod},
                                                {"reduce_max", reduce_max}, {"reduce_min", reduce_min},
                                                {"reduce_mean", reduce_mean}, {"reduce_variance", reduce_variance}};
  for (const auto& [name, fn] : numeric) {
    std::string tag = std::string("[") + name + "]";
    EXPECT_TG_ERROR(fn(f, {{2}}), ErrorCode::invalid_argument, tag + " axis 2 is out of range for rank 2");
    EXPECT_TG_ERROR(fn(f, {{-3}}), ErrorCode::invalid_argument, tag);
    EXPECT_TG_ERROR(fn(f, {{1, -1}}), ErrorCode::invalid_argument, tag + " axes [1,-1] name a dim twice");
    EXPECT_TG_ERROR(fn(b, {}), ErrorCode::dtype_mismatch, tag);
    EXPECT_TG_ERROR(fn(Tensor(), {}), ErrorCode::invalid_argument, tag);
  }
  const std::pair<const char*, Fn> logical[] = {{"reduce_and", reduce_and}, {"reduce_or", reduce_or}};
  for (const auto& [name, fn] : logical) {
    EXPECT_TG_ERROR(fn(f, {}), ErrorCode::dtype_mismatch, std::string("[") + name + "] needs a bool input, got f32[2,3]");
    EXPECT_TG_ERROR(fn(b, {{0, 0}}), ErrorCode::invalid_argument, std::string("[") + name + "]");
  }
  Tensor i = g.placeholder({2}, DType::i32, "i");
  EXPECT_TG_ERROR(reduce_mean(i), ErrorCode::dtype_mismatch, "[reduce_mean] needs a floating input, got i32[2]");
  EXPECT_TG_ERROR(reduce_variance(i), ErrorCode::dtype_mismatch, "[reduce_variance] needs a floating input");
}

TG_COVERS(error, argmax);
TG_COVERS(error, argmin);
TEST(Reduce, ArgReduceErrors) {
  Graph g;
  Tensor f = g.placeholder({2, 0}, DType::f32, "f");
  for (auto [name, fn] : {std::pair{"argmax", &argmax}, std::pair{"argmin", &argmin}}) {
    std::string tag = std::string("[") + name + "]";
    EXPECT_TG_ERROR(fn(f, {2, false}), ErrorCode::invalid_argument, tag + " axis 2 is out of range for rank 2");
    EXPECT_TG_ERROR(fn(f, {1, false}), ErrorCode::invalid_argument, tag + " cannot reduce the empty axis 1 (input f32[2,0])");
    EXPECT_TG_ERROR(fn(f, {-1, true}), ErrorCode::invalid_argument, tag + " cannot reduce the empty axis 1");
    EXPECT_TG_ERROR(fn(g.constant(1.0), {0, false}), ErrorCode::invalid_argument, tag);
  }
  // A dynamic dim that turns out empty is caught when the graph is compiled for the feed.
  Tensor p = g.placeholder({-1}, DType::f32, "p");
  Tensor a = argmax(p);
  EXPECT_TG_ERROR(run1(g, a, {{p, TensorData::zeros({0})}}), ErrorCode::invalid_argument, "[argmax]");
}

}  // namespace
}  // namespace tg
