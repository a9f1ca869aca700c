// Value and error tests of select (where) and clamp (hand-computed expectations).
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

TG_COVERS(value, select);
TEST(Ternary, SelectPicksElementwise) {
  Graph g;
  Tensor c = vec<bool>(g, {true, false, false, true}, {2, 2});
  Tensor a = vec<float>(g, {1, 2, 3, 4}, {2, 2});
  Tensor b = vec<float>(g, {-1, -2, -3, -4}, {2, 2});
  expect_equal(run1(g, select(c, a, b)), {1, -2, -3, 4}, {2, 2});
  expect_equal(run1(g, select(c, a, g.constant(0.0, DType::f32))), {1, 0, 0, 4}, {2, 2});
  // NaN and inf pass through untouched.
  Tensor n = vec<double>(g, {kNaN, kInf}, {2});
  Tensor m = vec<double>(g, {0, 0}, {2});
  Tensor p = vec<bool>(g, {true, true}, {2});
  expect_equal(run1(g, select(p, n, m)), {kNaN, kInf}, {2});
}

TEST(Ternary, SelectBroadcastsAllThreeOperands) {
  Graph g;
  // condition [3,1], a [1,4], b [3,4] -> [3,4].
  Tensor c = vec<bool>(g, {true, false, true}, {3, 1});
  Tensor a = vec<int32_t>(g, {1, 2, 3, 4}, {1, 4});
  Tensor b = vec<int32_t>(g, {10, 11, 12, 13, 20, 21, 22, 23, 30, 31, 32, 33}, {3, 4});
  expect_equal(run1(g, select(c, a, b)), {1, 2, 3, 4, 20, 21, 22, 23, 1, 2, 3, 4}, {3, 4});
  // A rank-0 condition with rank-3 operands.
  Tensor t = g.constant(TensorData::scalar<bool>(false));
  Tensor x = vec<int64_t>(g, {0, 1, 2, 3, 4, 5, 6, 7}, {2, 2, 2});
  Tensor y = g.constant(TensorData::scalar<int64_t>(-1));
  expect_equal(run1(g, select(t, x, y)), {-1, -1, -1, -1, -1, -1, -1, -1}, {2, 2, 2});
  expect_equal(run1(g, select(t, y, x)), {0, 1, 2, 3, 4, 5, 6, 7}, {2, 2, 2});
  // Empty dims: [2,0] with [1] -> [2,0].
  Tensor e = g.constant(TensorData::zeros({2, 0}, DType::bool_));
  Tensor one = vec<float>(g, {1}, {1});
  expect_equal(run1(g, select(e, one, one)), {}, {2, 0});
}

TEST(Ternary, SelectOnEveryDtype) {
  Graph g;
  Tensor c = vec<bool>(g, {false, true}, {2});
  Tensor bt = vec<bool>(g, {true, true}, {2});
  Tensor bf = vec<bool>(g, {false, false}, {2});
  expect_equal(run1(g, select(c, bt, bf)), {0, 1}, {2});
  std::vector<f16_t> h = {f16_t(0.5f), f16_t(1.5f)};
  std::vector<bf16_t> hb = {bf16_t(-2.f), bf16_t(3.f)};
  Tensor th = g.constant(TensorData::from_vector<f16_t>(h, {2}));
  Tensor tb = g.constant(TensorData::from_vector<bf16_t>(hb, {2}));
  expect_equal(run1(g, select(c, th, g.constant(9.0, DType::f16))), {9, 1.5}, {2});
  expect_equal(run1(g, select(c, tb, g.constant(9.0, DType::bf16))), {9, 3}, {2});
  Tensor u = vec<uint8_t>(g, {7, 8}, {2});
  expect_equal(run1(g, select(c, u, g.constant(255.0, DType::u8))), {255, 8}, {2});
  Tensor i8 = vec<int8_t>(g, {-7, 8}, {2});
  expect_equal(run1(g, select(c, g.constant(-128.0, DType::i8), i8)), {-7, -128}, {2});
}

TG_COVERS(value, clamp);
TEST(Ternary, ClampFloatsWithSpecialValues) {
  Graph g;
  Tensor x = vec<float>(g, {-2, 0.5, 3, NAN, -INFINITY, INFINITY, 0, 1}, {8});
  Tensor lo = g.constant(0.0, DType::f32);
  Tensor hi = g.constant(1.0, DType::f32);
  expect_equal(run1(g, clamp(x, lo, hi)), {0, 0.5, 1, kNaN, 0, 1, 0, 1}, {8});
  // low > high gives high (numpy.clip); a NaN bound propagates.
  Tensor v = vec<double>(g, {0.5, 5, -5}, {3});
  expect_equal(run1(g, clamp(v, g.constant(2.0, DType::f64), g.constant(1.0, DType::f64))), {1, 1, 1}, {3});
  expect_equal(run1(g, clamp(v, g.constant(kNaN, DType::f64), g.constant(1.0, DType::f64))),
               {kNaN, kNaN, kNaN}, {3});
  expect_equal(run1(g, clamp(v, g.constant(0.0, DType::f64), g.constant(kNaN, DType::f64))),
               {kNaN, kNaN, kNaN}, {3});
  std::vector<f16_t> h = {f16_t(-1.f), f16_t(0.25f), f16_t(7.f)};
  Tensor th = g.constant(TensorData::from_vector<f16_t>(h, {3}));
  Tensor r = clamp(th, g.constant(0.0, DType::f16), g.constant(0.5, DType::f16));
  EXPECT_EQ(r.dtype(), DType::f16);
  expect_equal(run1(g, r), {0, 0.25, 0.5}, {3});
}

TEST(Ternary, ClampIntegersWithBroadcastBounds) {
  Graph g;
  // x [2,3], low [2,1] (per row), high [1,3] (per column).
  Tensor x = vec<int32_t>(g, {-5, 5, 15, -5, 5, 15}, {2, 3});
  Tensor lo = vec<int32_t>(g, {0, 6}, {2, 1});
  Tensor hi = vec<int32_t>(g, {10, 10, 12}, {1, 3});
  expect_equal(run1(g, clamp(x, lo, hi)), {0, 5, 12, 6, 6, 12}, {2, 3});
  Tensor u = vec<uint8_t>(g, {0, 100, 255}, {3});
  expect_equal(run1(g, clamp(u, g.constant(10.0, DType::u8), g.constant(200.0, DType::u8))), {10, 100, 200}, {3});
  Tensor l = vec<int64_t>(g, {std::numeric_limits<int64_t>::min(), 3}, {2});
  expect_equal(run1(g, clamp(l, g.constant(-4.0, DType::i64), g.constant(2.0, DType::i64))), {-4, 2}, {2});
}

TEST(Ternary, LargeTensorsAcrossParallelChunks) {
  Graph g;
  const int64_t rows = 301, cols = 257;
  std::vector<float> x(rows * cols);
  std::vector<uint8_t> mask_bytes(rows);
  std::vector<bool> mask(rows);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int64_t>(i % 97) - 48);
  for (int64_t r = 0; r < rows; ++r) mask[r] = r % 3 == 0;
  Tensor tx = g.constant(TensorData::from_vector<float>(x, {rows, cols}));
  Tensor tm = g.constant(TensorData::from_vector<bool>(mask, {rows, 1}));
  std::vector<double> clamped, selected;
  for (float v : x) clamped.push_back(v < -10 ? -10 : (v > 20 ? 20 : v));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) selected.push_back(mask[r] ? x[r * cols + c] : 0.0);
  Tensor lo = g.constant(-10.0, DType::f32), hi = g.constant(20.0, DType::f32);
  expect_equal(run1(g, clamp(tx, lo, hi)), clamped, {rows, cols});
  expect_equal(run1(g, select(tm, tx, g.constant(0.0, DType::f32))), selected, {rows, cols});
}

TG_COVERS(error, select);
TEST(Ternary, SelectErrors) {
  Graph g, other;
  Tensor c = g.placeholder({2}, DType::bool_, "c");
  Tensor f = g.placeholder({2}, DType::f32, "f");
  Tensor i = g.placeholder({2}, DType::i32, "i");
  Tensor f3 = g.placeholder({3}, DType::f32, "f3");
  EXPECT_TG_ERROR(select(f, f, f), ErrorCode::dtype_mismatch, "[select] condition must be bool, got f32[2]");
  EXPECT_TG_ERROR(select(i, f, f), ErrorCode::dtype_mismatch, "[select] condition must be bool, got i32[2]");
  EXPECT_TG_ERROR(select(c, f, i), ErrorCode::dtype_mismatch, "[select] operand dtypes differ: f32[2] and i32[2]");
  EXPECT_TG_ERROR(select(c, f3, f), ErrorCode::shape_mismatch,
                  "[select] shapes [2], [3] and [2] do not broadcast");
  EXPECT_TG_ERROR(select(c, f, f3), ErrorCode::shape_mismatch,
                  "[select] shapes [2], [2] and [3] do not broadcast");
  EXPECT_TG_ERROR(select(c, Tensor(), f), ErrorCode::invalid_argument, "[select] input 1 is an empty Tensor");
  EXPECT_TG_ERROR(select(c, f, other.placeholder({2}, DType::f32)), ErrorCode::invalid_argument,
                  "[select] input 2 belongs to another graph");
}

TG_COVERS(error, clamp);
TEST(Ternary, ClampErrors) {
  Graph g;
  Tensor b = g.placeholder({2}, DType::bool_, "b");
  Tensor f = g.placeholder({2}, DType::f32, "f");
  Tensor d = g.placeholder({2}, DType::f64, "d");
  Tensor f3 = g.placeholder({3}, DType::f32, "f3");
  EXPECT_TG_ERROR(clamp(b, b, b), ErrorCode::dtype_mismatch, "[clamp] needs numeric operands, got bool[2]");
  EXPECT_TG_ERROR(clamp(f, f, d), ErrorCode::dtype_mismatch, "[clamp] operand dtypes differ: f32[2] and f64[2]");
  EXPECT_TG_ERROR(clamp(f, f3, f), ErrorCode::shape_mismatch, "[clamp] shapes [2], [3] and [2] do not broadcast");
  EXPECT_TG_ERROR(clamp(Tensor(), f, f), ErrorCode::invalid_argument, "[clamp] input 0 is an empty Tensor");
}

}  // namespace
}  // namespace tg
