// Value and error tests of gather, gather_nd, gather_elements, scatter_nd and scatter_elements
// (hand-computed expectations; several are the examples of the ONNX operator specs).
#include <limits>

#include "test_util.h"

namespace tg {
namespace {

using testing::expect_close;
using testing::expect_equal;
using testing::run1;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
using SR = ScatterReduction;

template <typename T>
Tensor konst(Graph& g, const std::vector<T>& values, Shape shape) {
  return g.constant(TensorData::from_vector<T>(values, std::move(shape)));
}
Tensor i64s(Graph& g, const std::vector<int64_t>& v, Shape s) {
  return konst<int64_t>(g, v, std::move(s));
}
Tensor i32s(Graph& g, const std::vector<int32_t>& v, Shape s) {
  return konst<int32_t>(g, v, std::move(s));
}
Tensor f32s(Graph& g, const std::vector<float>& v, Shape s) {
  return konst<float>(g, v, std::move(s));
}

// ---------------------------------------------------------------------------------------------
// gather

TG_COVERS(value, gather);
TEST(Gather, Axis0AndAxis1) {
  Graph g;
  // ONNX Gather example 1.
  Tensor x = f32s(g, {1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f}, {3, 2});
  expect_close(run1(g, gather(x, i64s(g, {0, 1, 1, 2}, {2, 2}))),
               {1.0, 1.2, 2.3, 3.4, 2.3, 3.4, 4.5, 5.7}, {2, 2, 2});
  // ONNX Gather example 2 (axis 1), i32 indices.
  Tensor y = f32s(g, {1.0f, 1.2f, 1.9f, 2.3f, 3.4f, 3.9f, 4.5f, 5.7f, 5.9f}, {3, 3});
  expect_close(run1(g, gather(y, i32s(g, {0, 2}, {1, 2}), {.axis = 1})),
               {1.0, 1.9, 2.3, 3.9, 4.5, 5.9}, {3, 1, 2});
  // axis -1 is axis 1.
  expect_close(run1(g, gather(y, i32s(g, {1}, {1}), {.axis = -1})), {1.2, 3.4, 5.7}, {3, 1});
}

TEST(Gather, NegativeAndScalarIndices) {
  Graph g;
  Tensor x = i32s(g, {10, 20, 30, 40}, {4});
  expect_equal(run1(g, gather(x, i64s(g, {-1, 0, -4, 2}, {4}))), {40, 10, 10, 30}, {4});
  // A rank-0 index removes the axis.
  Tensor m = i64s(g, {1, 2, 3, 4, 5, 6}, {3, 2});
  expect_equal(run1(g, gather(m, g.constant(TensorData::scalar<int64_t>(2)))), {5, 6}, {2});
  expect_equal(run1(g, gather(m, g.constant(TensorData::scalar<int32_t>(-1)), {.axis = 1})),
               {2, 4, 6}, {3});
}

TEST(Gather, BatchDims) {
  Graph g;
  // out[b, i] = x[b, idx[b, i]]
  Tensor x = i32s(g, {1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor idx = i64s(g, {2, 0, 1, -2}, {2, 2});
  expect_equal(run1(g, gather(x, idx, {.axis = 1, .batch_dims = 1})), {3, 1, 5, 5}, {2, 2});
  // A dim between the batch dims and the axis: out[b, p, i] = x[b, p, idx[b, i]]; batch_dims -1
  // counts from the end of indices' rank (2 - 1 = 1).
  Tensor x3 = i32s(g, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {2, 2, 3});
  Tensor idx3 = i32s(g, {2, 0}, {2, 1});
  Tensor out = gather(x3, idx3, {.axis = 2, .batch_dims = -1});
  EXPECT_EQ(out.shape(), (Shape{2, 2, 1}));
  expect_equal(run1(g, out), {3, 6, 7, 10}, {2, 2, 1});
}

TEST(Gather, DtypesAndEmptyIndices) {
  Graph g;
  Tensor b = konst<bool>(g, {true, false, true}, {3});
  expect_equal(run1(g, gather(b, i32s(g, {1, 2, 1}, {3}))), {0, 1, 0}, {3});
  Tensor d = konst<double>(g, {0.1, 1e-300, -2.5}, {3});
  expect_equal(run1(g, gather(d, i64s(g, {1, 0}, {2}))), {1e-300, 0.1}, {2});
  Tensor h = konst<f16_t>(g, {f16_t(1.5f), f16_t(-2.f)}, {2});
  expect_equal(run1(g, gather(h, i64s(g, {1, 1, 0}, {3}))), {-2, -2, 1.5}, {3});
  Tensor i8 = konst<int8_t>(g, {-128, 127}, {2});
  expect_equal(run1(g, gather(i8, i64s(g, {1, 0}, {2}))), {127, -128}, {2});
  Tensor m = f32s(g, {1, 2, 3, 4, 5, 6}, {3, 2});
  expect_equal(run1(g, gather(m, i64s(g, {}, {0}))), {}, {0, 2});
  expect_equal(run1(g, gather(m, i64s(g, {}, {0}), {.axis = 1})), {}, {3, 0});
}

TEST(Gather, DynamicDimsPropagate) {
  Graph g;
  Tensor x = g.placeholder({-1, 3}, DType::f32, "x");
  Tensor idx = g.placeholder({-1}, DType::i32, "idx");
  Tensor out = gather(x, idx, {.axis = 1});
  EXPECT_EQ(out.shape(), (Shape{-1, -1}));
  EXPECT_EQ(gather(x, idx).shape(), (Shape{-1, 3}));
  TensorData xv = TensorData::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  TensorData iv = TensorData::from_vector<int32_t>({2, 0, 2, -3}, {4});
  expect_equal(run1(g, out, {{x, xv}, {idx, iv}}), {3, 1, 3, 1, 6, 4, 6, 4}, {2, 4});
}

TEST(Gather, LargeOutputRunsInParallel) {
  Graph g;
  const int64_t rows = 1000, cols = 64, n = 3000;
  std::vector<float> xv(rows * cols);
  for (int64_t i = 0; i < rows * cols; ++i) xv[static_cast<size_t>(i)] = static_cast<float>(i);
  std::vector<int64_t> iv(n);
  for (int64_t k = 0; k < n; ++k) iv[static_cast<size_t>(k)] = (k * 7) % rows - (k % 2 ? rows : 0);
  TensorData out = run1(g, gather(f32s(g, xv, {rows, cols}), i64s(g, iv, {n})));
  ASSERT_EQ(out.shape(), (Shape{n, cols}));
  const float* p = out.data<float>();
  for (int64_t k = 0; k < n; ++k) {
    int64_t row = (k * 7) % rows;  // the negative indices above wrap to the same row
    for (int64_t j = 0; j < cols; ++j)
      ASSERT_EQ(p[k * cols + j], static_cast<float>(row * cols + j)) << k;
  }
  // An out-of-range index deep in a large index tensor is still reported (the first one).
  iv[2500] = rows;
  iv[2900] = -rows - 1;
  EXPECT_TG_ERROR(
      run1(g, gather(f32s(g, xv, {rows, cols}), i64s(g, iv, {n}))), ErrorCode::out_of_range,
      "[gather] index 1000 at indices position [2500] is out of range for dim 0 of x (size 1000");
}

TEST(Gather, LargeIndexTensorsValidateInParallel) {
  Graph g;
  const int64_t n = 70000;
  std::vector<int32_t> iv(n);
  for (int64_t k = 0; k < n; ++k) iv[static_cast<size_t>(k)] = static_cast<int32_t>(k % 10);
  Tensor x = i64s(g, {0, 10, 20, 30, 40, 50, 60, 70, 80, 90}, {10});
  TensorData out = run1(g, gather(x, i32s(g, iv, {n})));
  const int64_t* p = out.data<int64_t>();
  for (int64_t k = 0; k < n; ++k) ASSERT_EQ(p[k], (k % 10) * 10) << k;
  // Several bad indices in different chunks: the first in row-major order is reported.
  iv[60000] = -11;
  iv[50001] = 10;
  EXPECT_TG_ERROR(run1(g, gather(x, i32s(g, iv, {n}))), ErrorCode::out_of_range,
                  "[gather] index 10 at indices position [50001]");
  // gather_elements over two long rows, reversing each: out[r][j] = x[r][19999 - j].
  const int64_t len = 20000;
  std::vector<float> xv(2 * len);
  std::vector<int64_t> rev(2 * len);
  for (int64_t i = 0; i < 2 * len; ++i) {
    xv[static_cast<size_t>(i)] = static_cast<float>(i);
    rev[static_cast<size_t>(i)] = len - 1 - i % len;
  }
  TensorData ge =
      run1(g, gather_elements(f32s(g, xv, {2, len}), i64s(g, rev, {2, len}), {.axis = 1}));
  const float* q = ge.data<float>();
  for (int64_t r = 0; r < 2; ++r) {
    for (int64_t j = 0; j < len; ++j)
      ASSERT_EQ(q[r * len + j], static_cast<float>(r * len + len - 1 - j));
  }
}

// ---------------------------------------------------------------------------------------------
// gather_nd

TG_COVERS(value, gather_nd);
TEST(GatherNd, OnnxExamplesBatchDims0) {
  Graph g;
  Tensor x = i32s(g, {0, 1, 2, 3}, {2, 2});
  expect_equal(run1(g, gather_nd(x, i64s(g, {0, 0, 1, 1}, {2, 2}))), {0, 3}, {2});     // example 1
  expect_equal(run1(g, gather_nd(x, i64s(g, {1, 0}, {2, 1}))), {2, 3, 0, 1}, {2, 2});  // example 2
  Tensor x3 = i32s(g, {0, 1, 2, 3, 4, 5, 6, 7}, {2, 2, 2});
  expect_equal(run1(g, gather_nd(x3, i32s(g, {0, 1, 1, 0}, {2, 2}))), {2, 3, 4, 5},
               {2, 2});  // example 3
  expect_equal(run1(g, gather_nd(x3, i64s(g, {0, 1, 1, 0}, {2, 1, 2}))), {2, 3, 4, 5},
               {2, 1, 2});  // 4
  // Full index with negative components: x3[-1, 0, -1] = x3[1, 0, 1] = 5, x3[0, -1, 0] = 2.
  expect_equal(run1(g, gather_nd(x3, i64s(g, {-1, 0, -1, 0, -1, 0}, {2, 3}))), {5, 2}, {2});
}

TEST(GatherNd, BatchDims) {
  Graph g;
  Tensor x3 = f32s(g, {0, 1, 2, 3, 4, 5, 6, 7}, {2, 2, 2});
  // ONNX example 5 (batch_dims 1), then the same with negative indices.
  expect_equal(run1(g, gather_nd(x3, i64s(g, {1, 0}, {2, 1}), {.batch_dims = 1})), {2, 3, 4, 5},
               {2, 2});
  expect_equal(run1(g, gather_nd(x3, i64s(g, {-1, -2}, {2, 1}), {.batch_dims = 1})), {2, 3, 4, 5},
               {2, 2});
  // Full index per batch: x3[0][1][1] = 3, x3[1][0][1] = 5.
  expect_equal(run1(g, gather_nd(x3, i32s(g, {1, 1, -2, -1}, {2, 1, 2}), {.batch_dims = 1})),
               {3, 5}, {2, 1});
  // batch_dims 2: out[b0, b1] = x3[b0, b1, idx[b0, b1, 0]].
  expect_equal(run1(g, gather_nd(x3, i64s(g, {1, 0, 0, -1}, {2, 2, 1}), {.batch_dims = 2})),
               {1, 2, 4, 7}, {2, 2});
}

TEST(GatherNd, DtypesEmptyAndDynamic) {
  Graph g;
  Tensor b = konst<bool>(g, {true, false, false, true}, {2, 2});
  expect_equal(run1(g, gather_nd(b, i64s(g, {0, 1, 1, 1}, {2, 2}))), {0, 1}, {2});
  Tensor d = konst<double>(g, {0.25, 1e-310, 3.0, -0.0}, {2, 2});
  expect_equal(run1(g, gather_nd(d, i32s(g, {1}, {1, 1}))), {3.0, -0.0}, {1, 2});
  expect_equal(run1(g, gather_nd(d, i32s(g, {}, {0, 2}))), {}, {0});
  Tensor x = g.placeholder({-1, -1, 2}, DType::f32, "x");
  Tensor idx = g.placeholder({-1, 3, 1}, DType::i64, "idx");
  Tensor out = gather_nd(x, idx, {.batch_dims = 1});
  EXPECT_EQ(out.shape(), (Shape{-1, 3, 2}));
  TensorData xv = TensorData::from_vector<float>({0, 1, 2, 3, 4, 5, 6, 7}, {2, 2, 2});
  TensorData iv = TensorData::from_vector<int64_t>({1, 0, 1, 0, 0, -1}, {2, 3, 1});
  expect_equal(run1(g, out, {{x, xv}, {idx, iv}}), {2, 3, 0, 1, 2, 3, 4, 5, 4, 5, 6, 7}, {2, 3, 2});
}

// ---------------------------------------------------------------------------------------------
// gather_elements

TG_COVERS(value, gather_elements);
TEST(GatherElements, TorchAndOnnxExamples) {
  Graph g;
  // torch.gather(t, 1, [[0, 0], [1, 0]]) = [[1, 1], [4, 3]].
  Tensor t = i32s(g, {1, 2, 3, 4}, {2, 2});
  expect_equal(run1(g, gather_elements(t, i64s(g, {0, 0, 1, 0}, {2, 2}), {.axis = 1})),
               {1, 1, 4, 3}, {2, 2});
  // ONNX GatherElements example 2 (axis 0).
  Tensor x = f32s(g, {1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3});
  expect_equal(run1(g, gather_elements(x, i32s(g, {1, 2, 0, 2, 0, 0}, {2, 3}))), {4, 8, 3, 7, 2, 3},
               {2, 3});
  // Negative indices, and indices smaller than x in a non-axis dim.
  expect_equal(run1(g, gather_elements(t, i64s(g, {-1, -2}, {2, 1}), {.axis = -1})), {2, 3},
               {2, 1});
  expect_equal(run1(g, gather_elements(x, i64s(g, {2, 1}, {1, 2}))), {7, 5}, {1, 2});
}

TEST(GatherElements, MiddleAxisDtypesAndEmpty) {
  Graph g;
  // x[a][b][c] = 6a + 2b + c; axis 1.
  Tensor x = konst<double>(g, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {2, 3, 2});
  expect_equal(run1(g, gather_elements(x, i64s(g, {2, 0, 1, -1}, {2, 1, 2}), {.axis = 1})),
               {4, 1, 8, 11}, {2, 1, 2});
  Tensor b = konst<bool>(g, {true, false}, {1, 2});
  expect_equal(run1(g, gather_elements(b, i32s(g, {1, 0, 1}, {1, 3}), {.axis = 1})), {0, 1, 0},
               {1, 3});
  expect_equal(run1(g, gather_elements(x, i32s(g, {}, {2, 0, 2}), {.axis = 1})), {}, {2, 0, 2});
}

// ---------------------------------------------------------------------------------------------
// scatter_nd

TG_COVERS(value, scatter_nd);
TEST(ScatterNd, OnnxExample1AndEmpty) {
  Graph g;
  Tensor data = f32s(g, {1, 2, 3, 4, 5, 6, 7, 8}, {8});
  Tensor upd = f32s(g, {9, 10, 11, 12}, {4});
  expect_equal(run1(g, scatter_nd(data, i64s(g, {4, 3, 1, 7}, {4, 1}), upd)),
               {1, 11, 3, 10, 9, 6, 7, 12}, {8});
  expect_equal(run1(g, scatter_nd(data, i32s(g, {-4, 3, -7, -1}, {4, 1}), upd)),
               {1, 11, 3, 10, 9, 6, 7, 12}, {8});
  // No updates: a copy of data.
  expect_equal(run1(g, scatter_nd(data, i64s(g, {}, {0, 1}), f32s(g, {}, {0}))),
               {1, 2, 3, 4, 5, 6, 7, 8}, {8});
}

TEST(ScatterNd, OnnxExample2SliceUpdates) {
  Graph g;
  const std::vector<float> a = {1, 2, 3, 4, 5, 6, 7, 8, 8, 7, 6, 5, 4, 3, 2, 1};
  const std::vector<float> b = {8, 7, 6, 5, 4, 3, 2, 1, 1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<float> dv;
  for (const auto* block : {&a, &a, &b, &b}) dv.insert(dv.end(), block->begin(), block->end());
  std::vector<float> uv;
  for (float v : {5, 6, 7, 8, 1, 2, 3, 4}) uv.insert(uv.end(), 4, v);
  Tensor out = scatter_nd(f32s(g, dv, {4, 4, 4}), i64s(g, {0, 2}, {2, 1}), f32s(g, uv, {2, 4, 4}));
  std::vector<double> want;
  for (float v : {5, 6, 7, 8}) want.insert(want.end(), 4, v);
  want.insert(want.end(), a.begin(), a.end());
  for (float v : {1, 2, 3, 4}) want.insert(want.end(), 4, v);
  want.insert(want.end(), b.begin(), b.end());
  expect_equal(run1(g, out), want, {4, 4, 4});
}

TEST(ScatterNd, ReductionsWithRepeatedIndices) {
  Graph g;
  Tensor data = f32s(g, {1, 2, 3, 4}, {4});
  Tensor idx = i64s(g, {1, 1, 3}, {3, 1});
  Tensor upd = f32s(g, {10, 20, 30}, {3});
  expect_equal(run1(g, scatter_nd(data, idx, upd)), {1, 20, 3, 30}, {4});  // the last update wins
  expect_equal(run1(g, scatter_nd(data, idx, upd, {SR::add})), {1, 32, 3, 34}, {4});
  expect_equal(run1(g, scatter_nd(data, idx, upd, {SR::mul})), {1, 400, 3, 120}, {4});
  Tensor upd2 = f32s(g, {10, 0.5f, -5}, {3});
  expect_equal(run1(g, scatter_nd(data, idx, upd2, {SR::min})), {1, 0.5, 3, -5}, {4});
  expect_equal(run1(g, scatter_nd(data, idx, upd2, {SR::max})), {1, 10, 3, 4}, {4});
  // Full index into a matrix, i32 indices, f64 data.
  Tensor m = konst<double>(g, {1, 2, 3, 4}, {2, 2});
  Tensor mi = i32s(g, {0, 1, -1, -1, 0, 1}, {3, 2});
  expect_equal(run1(g, scatter_nd(m, mi, konst<double>(g, {0.5, 0.25, 2}, {3}), {SR::mul})),
               {1, 2, 3, 1}, {2, 2});
}

TEST(ScatterNd, IntegerBoolAndNaN) {
  Graph g;
  // Integers wrap around: 100 + 100 + 100 = 300 = 44 (mod 256); 65536 * 65536 = 0 (mod 2^32).
  Tensor idx2 = i64s(g, {0, 0}, {2, 1});
  expect_equal(run1(g, scatter_nd(konst<int8_t>(g, {100}, {1}), idx2,
                                  konst<int8_t>(g, {100, 100}, {2}), {SR::add})),
               {44}, {1});
  expect_equal(
      run1(g, scatter_nd(i32s(g, {1}, {1}), idx2, i32s(g, {65536, 65536}, {2}), {SR::mul})), {0},
      {1});
  expect_equal(run1(g, scatter_nd(i64s(g, {5, 6}, {2}), i32s(g, {1, 1}, {2, 1}),
                                  i64s(g, {9, -7}, {2}), {SR::min})),
               {5, -7}, {2});
  // bool: add/max are logical or, mul/min logical and.
  Tensor bd = konst<bool>(g, {false, true, false}, {3});
  Tensor bi = i64s(g, {0, 1, 0}, {3, 1});
  Tensor bu = konst<bool>(g, {true, false, false}, {3});
  expect_equal(run1(g, scatter_nd(bd, bi, bu)), {0, 0, 0}, {3});
  expect_equal(run1(g, scatter_nd(bd, bi, bu, {SR::add})), {1, 1, 0}, {3});
  expect_equal(run1(g, scatter_nd(bd, bi, bu, {SR::max})), {1, 1, 0}, {3});
  expect_equal(run1(g, scatter_nd(bd, bi, bu, {SR::mul})), {0, 0, 0}, {3});
  expect_equal(run1(g, scatter_nd(bd, bi, bu, {SR::min})), {0, 0, 0}, {3});
  // Float min/max propagate NaN from either side.
  Tensor fd = f32s(g, {1, NAN}, {2});
  Tensor fu = f32s(g, {NAN, 0}, {2});
  expect_equal(run1(g, scatter_nd(fd, i64s(g, {0, 1}, {2, 1}), fu, {SR::min})), {kNaN, kNaN}, {2});
  expect_equal(run1(g, scatter_nd(fd, i64s(g, {0, 1}, {2, 1}), fu, {SR::max})), {kNaN, kNaN}, {2});
  // f16 accumulates in f32 per step.
  Tensor hd = konst<f16_t>(g, {f16_t(1.f), f16_t(2.f)}, {2});
  Tensor hu = konst<f16_t>(g, {f16_t(0.5f), f16_t(0.25f)}, {2});
  expect_equal(run1(g, scatter_nd(hd, i64s(g, {1, 1}, {2, 1}), hu, {SR::add})), {1, 2.75}, {2});
  Tensor bfd = konst<bf16_t>(g, {bf16_t(1.f), bf16_t(-3.f)}, {2});
  Tensor bfu = konst<bf16_t>(g, {bf16_t(0.5f), bf16_t(-2.f)}, {2});
  expect_equal(run1(g, scatter_nd(bfd, i64s(g, {0, 1}, {2, 1}), bfu, {SR::max})), {1, -2}, {2});
}

// ---------------------------------------------------------------------------------------------
// scatter_elements

TG_COVERS(value, scatter_elements);
TEST(ScatterElements, OnnxExamples) {
  Graph g;
  // Example 1 (axis 0).
  Tensor data = f32s(g, std::vector<float>(9, 0.f), {3, 3});
  Tensor idx = i64s(g, {1, 0, 2, 0, 2, 1}, {2, 3});
  Tensor upd = f32s(g, {1.0f, 1.1f, 1.2f, 2.0f, 2.1f, 2.2f}, {2, 3});
  expect_close(run1(g, scatter_elements(data, idx, upd)), {2.0, 1.1, 0, 1.0, 0, 2.2, 0, 2.1, 1.2},
               {3, 3});
  // Example 2 (axis 1), then the example with a negative index.
  Tensor row = f32s(g, {1, 2, 3, 4, 5}, {1, 5});
  Tensor u = f32s(g, {1.1f, 2.1f}, {1, 2});
  expect_close(run1(g, scatter_elements(row, i32s(g, {1, 3}, {1, 2}), u, {.axis = 1})),
               {1, 1.1, 3, 2.1, 5}, {1, 5});
  expect_close(run1(g, scatter_elements(row, i64s(g, {1, -3}, {1, 2}), u, {.axis = -1})),
               {1, 1.1, 2.1, 4, 5}, {1, 5});
}

TEST(ScatterElements, Reductions) {
  Graph g;
  // ScatterElements-18 examples: repeated index 1 along axis 1.
  Tensor row = konst<double>(g, {1, 2, 3, 4, 5}, {1, 5});
  Tensor idx = i64s(g, {1, 1}, {1, 2});
  Tensor u = konst<double>(g, {1.1, 2.1}, {1, 2});
  auto run = [&](SR r) {
    return run1(g, scatter_elements(row, idx, u, {.axis = 1, .reduction = r}));
  };
  expect_close(run(SR::none), {1, 2.1, 3, 4, 5}, {1, 5}, 1e-15);
  expect_close(run(SR::add), {1, 5.2, 3, 4, 5}, {1, 5}, 1e-15);
  expect_close(run(SR::mul), {1, 4.62, 3, 4, 5}, {1, 5}, 1e-15);
  expect_close(run(SR::min), {1, 1.1, 3, 4, 5}, {1, 5}, 1e-15);
  expect_close(run(SR::max), {1, 2.1, 3, 4, 5}, {1, 5}, 1e-15);
}

TEST(ScatterElements, IntBoolMiddleAxisAndEmpty) {
  Graph g;
  // data[a][b][c] = 0 (2x3x2), axis 1: updates land at [a, idx, c].
  Tensor data = i32s(g, std::vector<int32_t>(12, 0), {2, 3, 2});
  Tensor idx = i32s(g, {2, 0, 1, -1}, {2, 1, 2});
  Tensor upd = i32s(g, {7, 8, 9, 10}, {2, 1, 2});
  expect_equal(run1(g, scatter_elements(data, idx, upd, {.axis = 1, .reduction = SR::add})),
               {0, 8, 0, 0, 7, 0, 0, 0, 9, 0, 0, 10}, {2, 3, 2});
  Tensor b = konst<bool>(g, {true, true, false}, {3});
  Tensor bi = i64s(g, {0, 2, 2}, {3});
  Tensor bu = konst<bool>(g, {false, true, false}, {3});
  expect_equal(run1(g, scatter_elements(b, bi, bu)), {0, 1, 0}, {3});
  expect_equal(run1(g, scatter_elements(b, bi, bu, {.reduction = SR::max})), {1, 1, 1}, {3});
  expect_equal(run1(g, scatter_elements(b, bi, bu, {.reduction = SR::min})), {0, 1, 0}, {3});
  expect_equal(run1(g, scatter_elements(b, i64s(g, {}, {0}), konst<bool>(g, {}, {0}))), {1, 1, 0},
               {3});
}

// ---------------------------------------------------------------------------------------------
// Errors

TG_COVERS(error, gather);
TG_COVERS(error, gather_nd);
TG_COVERS(error, gather_elements);
TG_COVERS(error, scatter_nd);
TG_COVERS(error, scatter_elements);
TEST(GatherErrors, OutOfRangeIndexAtRunTime) {
  Graph g;
  constexpr auto oor = ErrorCode::out_of_range;
  Tensor x = f32s(g, {1, 2, 3}, {3});
  EXPECT_TG_ERROR(run1(g, gather(x, i64s(g, {0, 3}, {2}))), oor,
                  "[gather] index 3 at indices position [1] is out of range for dim 0 of x (size "
                  "3, valid [-3, 3))");
  EXPECT_TG_ERROR(run1(g, gather(x, i32s(g, {-4}, {1}))), oor, "[gather] index -4");
  Tensor m = f32s(g, {1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_TG_ERROR(
      run1(g, gather_nd(m, i64s(g, {0, 1, 1, 3}, {2, 2}))), oor,
      "[gather_nd] index 3 at indices position [1,1] is out of range for dim 1 of x (size 3");
  EXPECT_TG_ERROR(run1(g, gather_nd(m, i64s(g, {-3}, {1, 1}))), oor, "[gather_nd] index -3");
  EXPECT_TG_ERROR(run1(g, gather_nd(m, i64s(g, {0, 3}, {2, 1}), {.batch_dims = 1})), oor,
                  "[gather_nd] index 3 at indices position [1,0] is out of range for dim 1 of x");
  EXPECT_TG_ERROR(
      run1(g, gather_elements(m, i32s(g, {0, 2, 1}, {1, 3}))), oor,
      "[gather_elements] index 2 at indices position [0,1] is out of range for dim 0 of x (size 2");
  EXPECT_TG_ERROR(
      run1(g, scatter_nd(x, i64s(g, {0, 5}, {2, 1}), f32s(g, {1, 2}, {2}))), oor,
      "[scatter_nd] index 5 at indices position [1,0] is out of range for dim 0 of data (size 3");
  EXPECT_TG_ERROR(
      run1(g, scatter_elements(m, i64s(g, {-4}, {1, 1}), f32s(g, {1}, {1, 1}), {.axis = 1})), oor,
      "[scatter_elements] index -4 at indices position [0,0] is out of range for dim 1 of data");
  // Indexing an empty dim is always out of range.
  Tensor e = f32s(g, {}, {0, 2});
  EXPECT_TG_ERROR(run1(g, gather(e, i64s(g, {0}, {1}))), oor,
                  "for dim 0 of x (size 0, valid [0, 0))");
}

TEST(GatherErrors, BadIndexDtype) {
  Graph g;
  Tensor x = f32s(g, {1, 2, 3, 4}, {2, 2});
  Tensor fi = f32s(g, {0, 1}, {1, 2});
  Tensor bi = konst<bool>(g, {true, false}, {1, 2});
  Tensor ui = konst<uint8_t>(g, {0, 1}, {1, 2});
  constexpr auto dm = ErrorCode::dtype_mismatch;
  EXPECT_TG_ERROR(gather(x, fi), dm, "[gather] indices must be i32 or i64, got f32[1,2]");
  EXPECT_TG_ERROR(gather_nd(x, bi), dm, "[gather_nd] indices must be i32 or i64, got bool[1,2]");
  EXPECT_TG_ERROR(gather_elements(x, ui), dm, "[gather_elements] indices must be i32 or i64");
  EXPECT_TG_ERROR(scatter_nd(x, fi, f32s(g, {1, 2}, {1, 2})), dm,
                  "[scatter_nd] indices must be i32 or i64");
  EXPECT_TG_ERROR(scatter_elements(x, fi, fi), dm, "[scatter_elements] indices must be i32 or i64");
  // updates must have data's dtype.
  Tensor idx = i64s(g, {0, 1}, {1, 2});
  EXPECT_TG_ERROR(scatter_elements(x, idx, konst<double>(g, {1, 2}, {1, 2})), dm,
                  "[scatter_elements] updates dtype differs from data: f32[2,2] and f64[1,2]");
  EXPECT_TG_ERROR(scatter_nd(x, idx, i32s(g, {1}, {1})), dm, "[scatter_nd] updates dtype differs");
}

TEST(GatherErrors, ShapesAndAttributes) {
  Graph g;
  constexpr auto sm = ErrorCode::shape_mismatch;
  constexpr auto ia = ErrorCode::invalid_argument;
  Tensor x = f32s(g, {1, 2, 3, 4, 5, 6}, {2, 3});
  // Batch dims must match.
  EXPECT_TG_ERROR(gather(x, i64s(g, {0, 0, 0}, {3, 1}), {.axis = 1, .batch_dims = 1}), sm,
                  "[gather] batch dim 0 of x is 2 but of indices is 3");
  EXPECT_TG_ERROR(gather_nd(x, i64s(g, {0, 0, 0}, {3, 1}), {.batch_dims = 1}), sm,
                  "[gather_nd] batch dim 0 of x is 2 but of indices is 3");
  // Attribute ranges.
  EXPECT_TG_ERROR(gather(x, i64s(g, {0}, {1}), {.axis = 2}), ia,
                  "[gather] axis 2 is out of range for rank 2");
  EXPECT_TG_ERROR(gather(x, i64s(g, {0, 1}, {2, 1}), {.axis = 0, .batch_dims = 1}), ia,
                  "[gather] batch_dims 1");
  EXPECT_TG_ERROR(gather(x, i64s(g, {0, 1}, {2}), {.axis = 1, .batch_dims = 2}), ia,
                  "[gather] batch_dims 2 is out of range for indices rank 1");
  EXPECT_TG_ERROR(gather(g.constant(1.0), i64s(g, {0}, {1})), ia,
                  "[gather] axis 0 is out of range for rank 0");
  EXPECT_TG_ERROR(gather_nd(x, i64s(g, {0, 1}, {2, 1}), {.batch_dims = 2}), ia,
                  "[gather_nd] batch_dims 2");
  EXPECT_TG_ERROR(gather_nd(x, i64s(g, {0, 1}, {2, 1}), {.batch_dims = -1}), ia,
                  "[gather_nd] batch_dims -1");
  EXPECT_TG_ERROR(gather_elements(x, i64s(g, {0}, {1, 1}), {.axis = -3}), ia,
                  "[gather_elements] axis -3");
  EXPECT_TG_ERROR(scatter_elements(x, i64s(g, {0}, {1, 1}), f32s(g, {1}, {1, 1}), {.axis = 2}), ia,
                  "[scatter_elements] axis 2 is out of range for rank 2");
  // K too large.
  EXPECT_TG_ERROR(gather_nd(x, i64s(g, {0, 0, 0}, {1, 3})), sm,
                  "[gather_nd] indices.shape[-1] = 3 exceeds rank of x (2) minus batch_dims (0)");
  EXPECT_TG_ERROR(gather_nd(x, i64s(g, {0, 0}, {1, 2}), {.batch_dims = 1}), sm,
                  "[gather_nd] indices.shape[-1] = 2");
  EXPECT_TG_ERROR(scatter_nd(x, i64s(g, {0, 0, 0}, {1, 3}), f32s(g, {1}, {1})), sm,
                  "[scatter_nd] indices.shape[-1] = 3 exceeds the rank of data (2)");
  // Scalar indices and a dynamic index depth.
  EXPECT_TG_ERROR(gather_nd(x, g.constant(TensorData::scalar<int64_t>(0))), sm,
                  "[gather_nd] indices must have rank >= 1");
  EXPECT_TG_ERROR(scatter_nd(x, g.placeholder({2, -1}, DType::i64), f32s(g, {1, 2}, {2})), ia,
                  "[scatter_nd] the last dim of indices must be static");
}

TEST(GatherErrors, UpdatesAndElementShapes) {
  Graph g;
  constexpr auto sm = ErrorCode::shape_mismatch;
  Tensor x = f32s(g, {1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_TG_ERROR(
      scatter_nd(x, i64s(g, {0, 1}, {2, 1}), f32s(g, {1, 2, 3}, {3})), sm,
      "[scatter_nd] updates shape [3] must be indices.shape[:-1] + data.shape[1:] = [2,3]");
  EXPECT_TG_ERROR(scatter_nd(x, i64s(g, {0, 1}, {1, 2}), f32s(g, {1}, {1, 1})), sm,
                  "[scatter_nd] updates shape [1,1]");
  Tensor idx = i64s(g, {0, 1}, {1, 2});
  EXPECT_TG_ERROR(scatter_elements(x, idx, f32s(g, {1, 2}, {2, 1})), sm,
                  "[scatter_elements] indices and updates shapes differ: [1,2] and [2,1]");
  EXPECT_TG_ERROR(scatter_elements(x, i64s(g, {0, 1}, {2}), f32s(g, {1, 2}, {2})), sm,
                  "[scatter_elements] indices must have the rank of data (2), got 1");
  EXPECT_TG_ERROR(gather_elements(x, i64s(g, {0, 1}, {2})), sm,
                  "[gather_elements] indices must have the rank of x");
  EXPECT_TG_ERROR(gather_elements(x, i64s(g, {0, 0, 0, 0}, {1, 4})), sm,
                  "[gather_elements] dim 1 of indices is 4, larger than 3 of x");
  // Dynamic dims are checked again with the fed shapes.
  Tensor p = g.placeholder({-1, 3}, DType::f32, "p");
  Tensor pi = g.placeholder({-1, 1}, DType::i64, "pi");
  Tensor out = gather(p, pi, {.axis = 1, .batch_dims = 1});
  EXPECT_EQ(out.shape(), (Shape{-1, 1}));
  EXPECT_TG_ERROR(run1(g, out,
                       {{p, TensorData::zeros({2, 3})},
                        {pi, TensorData::from_vector<int64_t>({0, 0, 0}, {3, 1})}}),
                  sm, "[gather] batch dim 0 of x is 2 but of indices is 3");
}

}  // namespace
}  // namespace tg
