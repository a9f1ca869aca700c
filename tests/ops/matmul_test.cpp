// Value and error tests of matmul (hand-computed expectations; larger cases against a naive
// triple loop written here in double).
#include <cstdint>
#include <vector>

#include "test_util.h"

namespace tg {
namespace {

using testing::expect_close;
using testing::expect_equal;
using testing::run1;

// A = [[1,2,3],[4,5,6]], B = [[7,8],[9,10],[11,12]]: A @ B = [[58,64],[139,154]].
const std::vector<double> kA = {1, 2, 3, 4, 5, 6};
const std::vector<double> kAt = {1, 4, 2, 5, 3, 6};  // A^T stored as [3,2]
const std::vector<double> kB = {7, 8, 9, 10, 11, 12};
const std::vector<double> kBt = {7, 9, 11, 8, 10, 12};  // B^T stored as [2,3]
const std::vector<double> kAB = {58, 64, 139, 154};

template <typename T>
Tensor make(Graph& g, const std::vector<double>& v, Shape shape) {
  return g.constant(TensorData::from_vector<T>(std::vector<T>(v.begin(), v.end()), std::move(shape)));
}

// C = op(A) op(B) for one [m,k] x [k,n] product, in double, from row-major storage.
std::vector<double> naive(const std::vector<double>& a, const std::vector<double>& b, int64_t m,
                          int64_t k, int64_t n, bool ta, bool tb) {
  std::vector<double> c(static_cast<size_t>(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t p = 0; p < k; ++p)
        c[i * n + j] += (ta ? a[p * m + i] : a[i * k + p]) * (tb ? b[j * k + p] : b[p * n + j]);
  return c;
}

std::vector<double> values(const TensorData& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.num_elements(); ++i) v.push_back(t.element_as_double(i));
  return v;
}

TG_COVERS(value, matmul);
TEST(Matmul, TwoByThreeTimesThreeByTwoAllTransposes) {
  Graph g;
  expect_close(run1(g, matmul(make<float>(g, kA, {2, 3}), make<float>(g, kB, {3, 2}))), kAB, {2, 2});
  expect_close(run1(g, matmul(make<float>(g, kAt, {3, 2}), make<float>(g, kB, {3, 2}), {true, false})),
               kAB, {2, 2});
  expect_close(run1(g, matmul(make<float>(g, kA, {2, 3}), make<float>(g, kBt, {2, 3}), {false, true})),
               kAB, {2, 2});
  expect_close(run1(g, matmul(make<float>(g, kAt, {3, 2}), make<float>(g, kBt, {2, 3}), {true, true})),
               kAB, {2, 2});
  // B @ A is [3,3].
  expect_close(run1(g, matmul(make<float>(g, kB, {3, 2}), make<float>(g, kA, {2, 3}))),
               {39, 54, 69, 49, 68, 87, 59, 82, 105}, {3, 3});
}

TEST(Matmul, F64AndI32Paths) {
  Graph g;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      Tensor a64 = make<double>(g, ta ? kAt : kA, ta ? Shape{3, 2} : Shape{2, 3});
      Tensor b64 = make<double>(g, tb ? kBt : kB, tb ? Shape{2, 3} : Shape{3, 2});
      expect_equal(run1(g, matmul(a64, b64, {ta, tb})), kAB, {2, 2});
      Tensor a32 = make<int32_t>(g, ta ? kAt : kA, ta ? Shape{3, 2} : Shape{2, 3});
      Tensor b32 = make<int32_t>(g, tb ? kBt : kB, tb ? Shape{2, 3} : Shape{3, 2});
      TensorData c = run1(g, matmul(a32, b32, {ta, tb}));
      EXPECT_EQ(c.dtype(), DType::i32);
      expect_equal(c, kAB, {2, 2});
    }
  }
  // Negative integers and i8 wrap-around: 100 * 2 + 100 * 1 = 300 -> 44 in i8.
  expect_equal(run1(g, matmul(make<int64_t>(g, {-3, 2}, {1, 2}), make<int64_t>(g, {5, 7}, {2, 1}))), {-1}, {1, 1});
  expect_equal(run1(g, matmul(make<int8_t>(g, {100, 100}, {2}), make<int8_t>(g, {2, 1}, {2}))), {44}, {});
}

TEST(Matmul, HalfPrecisionComputesInF32) {
  Graph g;
  Tensor a = cast(make<float>(g, kA, {2, 3}), DType::f16);
  Tensor b = cast(make<float>(g, kB, {3, 2}), DType::bf16);
  EXPECT_EQ(matmul(a, a, {false, true}).dtype(), DType::f16);
  expect_close(run1(g, matmul(a, cast(b, DType::f16))), kAB, {2, 2}, 0, 0);
  // bf16 has 8 significant bits: 58, 64, 139 and 154 are all exact.
  expect_close(run1(g, matmul(cast(a, DType::bf16), b)), kAB, {2, 2}, 0, 0);
}

TEST(Matmul, BatchedWithBroadcasting) {
  Graph g;
  // a[p,0] = (p+1) A, b[q] = (q+1) B: out[p,q] = (p+1)(q+1) AB; out is [2,3,2,2].
  std::vector<double> a, b, expected;
  for (int p = 0; p < 2; ++p)
    for (double v : kA) a.push_back((p + 1) * v);
  for (int q = 0; q < 3; ++q)
    for (double v : kB) b.push_back((q + 1) * v);
  for (int p = 0; p < 2; ++p)
    for (int q = 0; q < 3; ++q)
      for (double v : kAB) expected.push_back((p + 1) * (q + 1) * v);
  expect_close(run1(g, matmul(make<float>(g, a, {2, 1, 2, 3}), make<float>(g, b, {3, 3, 2}))), expected,
               {2, 3, 2, 2});
  expect_equal(run1(g, matmul(make<double>(g, a, {2, 1, 2, 3}), make<double>(g, b, {3, 3, 2}))), expected,
               {2, 3, 2, 2});
  expect_equal(run1(g, matmul(make<int32_t>(g, a, {2, 1, 2, 3}), make<int32_t>(g, b, {3, 3, 2}))), expected,
               {2, 3, 2, 2});
  // A single matrix broadcast against a batch: [3,2] x [2,2,3] -> [2,3,3] (B @ (p+1) A).
  std::vector<double> ba = {39, 54, 69, 49, 68, 87, 59, 82, 105}, expected2;
  for (int p = 0; p < 2; ++p)
    for (double v : ba) expected2.push_back((p + 1) * v);
  expect_close(run1(g, matmul(make<float>(g, kB, {3, 2}), make<float>(g, a, {2, 2, 3}))), expected2, {2, 3, 3});
}

TEST(Matmul, RankOneOperands) {
  Graph g;
  Tensor v = make<float>(g, {1, 2, 3}, {3});
  expect_close(run1(g, matmul(v, make<float>(g, kB, {3, 2}))), {58, 64}, {2});
  expect_close(run1(g, matmul(make<float>(g, kA, {2, 3}), v)), {14, 32}, {2});
  expect_close(run1(g, matmul(v, v)), {14}, {});
  EXPECT_EQ(matmul(v, v).shape(), Shape{});
  // Transpose flags do not apply to a vector; they still apply to the matrix operand.
  expect_close(run1(g, matmul(v, make<float>(g, kBt, {2, 3}), {true, true})), {58, 64}, {2});
  // Batched matrix @ vector: [2,2,3] @ [3] -> [2,2].
  std::vector<double> a2 = kA;
  for (double x : kA) a2.push_back(-x);
  expect_close(run1(g, matmul(make<float>(g, a2, {2, 2, 3}), v)), {14, 32, -14, -32}, {2, 2});
  expect_equal(run1(g, matmul(make<int32_t>(g, {1, 2, 3}, {3}), make<int32_t>(g, kB, {3, 2}))), {58, 64}, {2});
  expect_equal(run1(g, matmul(make<double>(g, kA, {2, 3}), make<double>(g, {1, 2, 3}, {3}))), {14, 32}, {2});
}

TEST(Matmul, EmptyContractionGivesZerosAndEmptyDimsGiveEmpty) {
  Graph g;
  expect_equal(run1(g, matmul(g.constant(TensorData::zeros({2, 0})), g.constant(TensorData::zeros({0, 3})))),
               {0, 0, 0, 0, 0, 0}, {2, 3});
  expect_equal(run1(g, matmul(g.constant(TensorData::zeros({2, 0}, DType::f64)),
                              g.constant(TensorData::zeros({0, 2}, DType::f64)))),
               {0, 0, 0, 0}, {2, 2});
  expect_equal(run1(g, matmul(g.constant(TensorData::zeros({0, 4})), g.constant(TensorData::zeros({4, 3})))),
               {}, {0, 3});
  expect_equal(run1(g, matmul(g.constant(TensorData::zeros({0, 2, 4})), g.constant(TensorData::zeros({4, 3})))),
               {}, {0, 2, 3});
}

TEST(Matmul, F32AgainstF64Reference64x64) {
  Graph g;
  TensorData a = TensorData::random_uniform({64, 64}, -1, 1, 7);
  TensorData b = TensorData::random_uniform({64, 64}, -1, 1, 8);
  std::vector<double> ref = naive(values(a), values(b), 64, 64, 64, false, false);
  // |terms| <= 1: the f32 result is within 64 * 2^-24 * 64 of the exact value.
  expect_close(run1(g, matmul(g.constant(a), g.constant(b))), ref, {64, 64}, 0, 1e-4);
  std::vector<double> ref_t = naive(values(a), values(b), 64, 64, 64, true, true);
  expect_close(run1(g, matmul(g.constant(a), g.constant(b), {true, true})), ref_t, {64, 64}, 0, 1e-4);
}

TEST(Matmul, F64BlockedLoopOnOddSizes) {
  Graph g;
  // Sizes straddle the kernel's blocks (32 rows, 256 columns, 128 deep).
  const int64_t m = 70, k = 130, n = 300;
  TensorData a = TensorData::random_uniform({m, k}, -1, 1, 11, DType::f64);
  TensorData bt = TensorData::random_uniform({n, k}, -1, 1, 12, DType::f64);
  std::vector<double> ref = naive(values(a), values(bt), m, k, n, false, true);
  expect_close(run1(g, matmul(g.constant(a), g.constant(bt), {false, true})), ref, {m, n}, 1e-12, 1e-12);
  TensorData at = TensorData::random_uniform({k, m}, -1, 1, 13, DType::f64);
  std::vector<double> ref2 = naive(values(at), values(bt), m, k, n, true, true);
  expect_close(run1(g, matmul(g.constant(at), g.constant(bt), {true, true})), ref2, {m, n}, 1e-12, 1e-12);
}

TEST(Matmul, ManySmallF32Batches) {
  Graph g;
  const int64_t batch = 300, m = 5, k = 7, n = 3;
  TensorData a = TensorData::random_uniform({batch, m, k}, -1, 1, 21);
  TensorData b = TensorData::random_uniform({batch, k, n}, -1, 1, 22);
  std::vector<double> va = values(a), vb = values(b), expected;
  for (int64_t i = 0; i < batch; ++i) {
    std::vector<double> ai(va.begin() + i * m * k, va.begin() + (i + 1) * m * k);
    std::vector<double> bi(vb.begin() + i * k * n, vb.begin() + (i + 1) * k * n);
    std::vector<double> ci = naive(ai, bi, m, k, n, false, false);
    expected.insert(expected.end(), ci.begin(), ci.end());
  }
  expect_close(run1(g, matmul(g.constant(a), g.constant(b))), expected, {batch, m, n}, 0, 1e-5);
}

TG_COVERS(error, matmul);
TEST(Matmul, Errors) {
  Graph g;
  Tensor a = g.placeholder({2, 3}, DType::f32, "a");
  Tensor b = g.placeholder({4, 2}, DType::f32, "b");
  EXPECT_TG_ERROR(matmul(a, b), ErrorCode::shape_mismatch, "[matmul] contraction dims differ: a gives K=3, b gives K=4");
  EXPECT_TG_ERROR(matmul(a, a), ErrorCode::shape_mismatch, "[matmul] contraction dims differ");
  EXPECT_TG_ERROR(matmul(a, a, {true, true}), ErrorCode::shape_mismatch, "a gives K=2, b gives K=3");
  EXPECT_TG_ERROR(matmul(a, g.placeholder({2}, DType::f32)), ErrorCode::shape_mismatch, "[matmul]");
  Tensor x = g.placeholder({2, 2, 3}, DType::f32, "x");
  Tensor y = g.placeholder({3, 3, 2}, DType::f32, "y");
  EXPECT_TG_ERROR(matmul(x, y), ErrorCode::shape_mismatch, "[matmul] batch dims [2] and [3] do not broadcast");
  EXPECT_TG_ERROR(matmul(a, g.placeholder({3, 2}, DType::f64)), ErrorCode::dtype_mismatch,
                  "[matmul] operand dtypes differ: f32[2,3] and f64[3,2]");
  EXPECT_TG_ERROR(matmul(g.placeholder({2, 2}, DType::bool_), g.placeholder({2, 2}, DType::bool_)),
                  ErrorCode::dtype_mismatch, "[matmul] needs numeric operands");
  EXPECT_TG_ERROR(matmul(g.constant(2.0), a), ErrorCode::invalid_argument, "[matmul] operands must have rank >= 1");
  EXPECT_TG_ERROR(matmul(a, g.constant(2.0)), ErrorCode::invalid_argument, "[matmul]");
  EXPECT_TG_ERROR(matmul(a, Tensor()), ErrorCode::invalid_argument, "[matmul] input 1 is an empty Tensor");
}

TEST(Matmul, DynamicDims) {
  Graph g;
  Tensor a = g.placeholder({-1, 3}, DType::f32, "a");
  Tensor b = g.placeholder({3, -1}, DType::f32, "b");
  Tensor c = matmul(a, b);
  EXPECT_EQ(c.shape(), (Shape{-1, -1}));
  Tensor d = g.placeholder({2, -1}, DType::f32, "d");
  EXPECT_EQ(matmul(d, b).shape(), (Shape{2, -1}));
  TensorData av = TensorData::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  TensorData bv = TensorData::from_vector<float>({7, 8, 9, 10, 11, 12}, {3, 2});
  expect_close(run1(g, c, {{a, av}, {b, bv}}), kAB, {2, 2});
  // K only known at run time: the mismatch is caught when compiling for the feeds.
  Tensor e = matmul(d, b);
  EXPECT_TG_ERROR(run1(g, e, {{d, TensorData::zeros({2, 4})}, {b, bv}}), ErrorCode::shape_mismatch, "[matmul]");
}

}  // namespace
}  // namespace tg
