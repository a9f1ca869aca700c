// Value and error tests of the shape / data-movement ops (hand-computed expectations).
#include <numeric>

#include "test_util.h"

namespace tg {
namespace {

using testing::expect_equal;
using testing::run1;

/// 0, 1, ..., n-1 as f32 of `shape`.
Tensor range_f32(Graph& g, Shape shape) {
  std::vector<float> v(static_cast<size_t>(num_elements(shape)));
  std::iota(v.begin(), v.end(), 0.f);
  return g.constant(TensorData::from_vector<float>(v, shape));
}

std::vector<double> seq(int n) {
  std::vector<double> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0.0);
  return v;
}

// ---- broadcast_to ------------------------------------------------------------------------------

TG_COVERS(value, broadcast_to);
TEST(ShapeOps, BroadcastTo) {
  Graph g;
  Tensor row = g.constant(TensorData::from_vector<float>({1, 2, 3}, {3}));
  expect_equal(run1(g, broadcast_to(row, {2, 3})), {1, 2, 3, 1, 2, 3}, {2, 3});
  Tensor col = g.constant(TensorData::from_vector<int64_t>({1, 2}, {2, 1}));
  expect_equal(run1(g, broadcast_to(col, {2, 3})), {1, 1, 1, 2, 2, 2}, {2, 3});
  expect_equal(run1(g, broadcast_to(col, {2, 2, 2})), {1, 1, 2, 2, 1, 1, 2, 2}, {2, 2, 2});
  // -1 keeps x's dim.
  expect_equal(run1(g, broadcast_to(col, {-1, 4})), {1, 1, 1, 1, 2, 2, 2, 2}, {2, 4});
  // A 0-d value fills the whole shape.
  Tensor s = g.constant(TensorData::scalar<bool>(true));
  expect_equal(run1(g, broadcast_to(s, {2, 2})), {1, 1, 1, 1}, {2, 2});
  // Size-0 dims: a target dim of 0 against 1, and an input that is already empty.
  expect_equal(run1(g, broadcast_to(row, {0, 3})), {}, {0, 3});
  Tensor empty = g.constant(TensorData::zeros({1, 0}));
  expect_equal(run1(g, broadcast_to(empty, {4, 0})), {}, {4, 0});
  // Identity broadcast.
  expect_equal(run1(g, broadcast_to(row, {3})), {1, 2, 3}, {3});
}

TEST(ShapeOps, BroadcastToLargeRunsInParallel) {
  Graph g;
  Tensor row = range_f32(g, {300});
  TensorData y = run1(g, broadcast_to(row, {200, 300}));
  ASSERT_EQ(y.shape(), (Shape{200, 300}));
  const float* p = y.data<float>();
  for (int i = 0; i < 200; ++i) {
    for (int j = 0; j < 300; ++j) ASSERT_EQ(p[i * 300 + j], static_cast<float>(j)) << i << "," << j;
  }
}

TG_COVERS(error, broadcast_to);
TEST(ShapeOps, BroadcastToErrors) {
  Graph g;
  Tensor x = g.placeholder({2, 3}, DType::f32, "x");
  EXPECT_TG_ERROR(broadcast_to(x, {3, 3}), ErrorCode::shape_mismatch,
                  "[broadcast_to] cannot broadcast [2,3] to [3,3]");
  EXPECT_TG_ERROR(broadcast_to(x, {3}), ErrorCode::shape_mismatch,
                  "[broadcast_to] cannot broadcast [2,3] to [3]");
  EXPECT_TG_ERROR(broadcast_to(x, {-1, 2, 3}), ErrorCode::invalid_argument, "[broadcast_to]");
  EXPECT_TG_ERROR(broadcast_to(x, {2, -2}), ErrorCode::invalid_argument, "[broadcast_to]");
  EXPECT_TG_ERROR(broadcast_to(Tensor(), {2}), ErrorCode::invalid_argument,
                  "[broadcast_to] input 0 is an empty Tensor");
  // More elements than int64 counts: refused when built (3 * 6148914691236517206 wrapped to 2,
  // and a reduce_sum over it returned 2).
  Tensor one = g.constant(1.0, DType::f32);
  EXPECT_TG_ERROR(broadcast_to(one, {3, 6148914691236517206}), ErrorCode::invalid_argument,
                  "[broadcast_to] output 0 of shape [3,6148914691236517206] (f32) has more than 2^63-1 bytes");
  EXPECT_TG_ERROR(broadcast_to(one, {int64_t{1} << 32, int64_t{1} << 32}), ErrorCode::invalid_argument,
                  "2^63-1 bytes");
  EXPECT_TG_ERROR(g.placeholder({int64_t{1} << 62, 4}, DType::f32, "huge"), ErrorCode::invalid_argument,
                  "[placeholder] output 0");
  // A size-0 dim makes any shape empty: accepted, wherever it stands.
  EXPECT_EQ(broadcast_to(one, {0, int64_t{1} << 62, 4}).shape(), (Shape{0, int64_t{1} << 62, 4}));
  EXPECT_EQ(broadcast_to(one, {int64_t{1} << 62, 8, 0}).shape(), (Shape{int64_t{1} << 62, 8, 0}));
}

// ---- reshape -----------------------------------------------------------------------------------

TG_COVERS(value, reshape);
TEST(ShapeOps, Reshape) {
  Graph g;
  Tensor x = range_f32(g, {2, 3});
  EXPECT_EQ(reshape(x, {3, -1}).shape(), (Shape{3, 2}));
  expect_equal(run1(g, reshape(x, {3, -1})), {0, 1, 2, 3, 4, 5}, {3, 2});
  expect_equal(run1(g, reshape(x, {-1})), {0, 1, 2, 3, 4, 5}, {6});
  expect_equal(run1(g, reshape(x, {1, 2, 1, 3})), {0, 1, 2, 3, 4, 5}, {1, 2, 1, 3});
  Tensor one = g.constant(TensorData::from_vector<int64_t>({-5}, {1, 1}));
  expect_equal(run1(g, reshape(one, {})), {-5}, {});
  Tensor empty = g.constant(TensorData::zeros({0, 3}));
  expect_equal(run1(g, reshape(empty, {3, 0, 2})), {}, {3, 0, 2});
  expect_equal(run1(g, reshape(empty, {-1, 3})), {}, {0, 3});
  // The result is a view: the input stays usable by another consumer.
  Tensor b = g.constant(TensorData::from_vector<bool>({true, false, false, true}, {4}));
  auto both = testing::run_cpu(g, {reshape(b, {2, 2}), b});
  expect_equal(both[0], {1, 0, 0, 1}, {2, 2});
  expect_equal(both[1], {1, 0, 0, 1}, {4});
}

TG_COVERS(error, reshape);
TEST(ShapeOps, ReshapeErrors) {
  Graph g;
  Tensor x = g.placeholder({2, 3}, DType::f32, "x");
  EXPECT_TG_ERROR(reshape(x, {4}), ErrorCode::shape_mismatch,
                  "[reshape] cannot reshape [2,3] (6 elements) to [4] (4 elements)");
  EXPECT_TG_ERROR(reshape(x, {4, -1}), ErrorCode::shape_mismatch,
                  "[reshape] cannot reshape [2,3] (6 elements) to [4,-1]");
  EXPECT_TG_ERROR(reshape(x, {-1, -1}), ErrorCode::invalid_argument,
                  "[reshape] shape [-1,-1] has more than one -1");
  EXPECT_TG_ERROR(reshape(x, {-2, -3}), ErrorCode::invalid_argument, "[reshape]");
  Tensor empty = g.placeholder({0, 3}, DType::f32, "e");
  EXPECT_TG_ERROR(reshape(empty, {-1, 0}), ErrorCode::invalid_argument,
                  "[reshape] cannot infer the -1");
}

// ---- transpose ---------------------------------------------------------------------------------

TG_COVERS(value, transpose);
TEST(ShapeOps, Transpose3D) {
  Graph g;
  Tensor x = range_f32(g, {2, 3, 4});  // x[j][k][i] = 12j + 4k + i
  // out[i][j][k] = x[j][k][i]
  expect_equal(run1(g, transpose(x, {2, 0, 1})), {0, 4, 8,  12, 16, 20, 1, 5, 9,  13, 17, 21,
                                                  2, 6, 10, 14, 18, 22, 3, 7, 11, 15, 19, 23},
               {4, 2, 3});
  // Empty perm reverses the dims: out[i][j][k] = x[k][j][i].
  expect_equal(run1(g, transpose(x)), {0, 12, 4, 16, 8,  20, 1, 13, 5, 17, 9,  21,
                                       2, 14, 6, 18, 10, 22, 3, 15, 7, 19, 11, 23},
               {4, 3, 2});
  // out[j][i][k] = x[i][j][k]: the innermost dim stays, rows are copied whole.
  expect_equal(run1(g, transpose(x, {1, 0, 2})), {0,  1,  2,  3,  12, 13, 14, 15, 4,  5,  6,  7,
                                                  16, 17, 18, 19, 8,  9,  10, 11, 20, 21, 22, 23},
               {3, 2, 4});
  expect_equal(run1(g, transpose(x, {0, 1, 2})), seq(24), {2, 3, 4});
  // Negative perm entries count from the end.
  Tensor b =
      g.constant(TensorData::from_vector<bool>({true, false, false, true, true, false}, {2, 3}));
  expect_equal(run1(g, transpose(b, {-1, 0})), {1, 1, 0, 1, 0, 0}, {3, 2});
  Tensor s = g.constant(TensorData::scalar<int64_t>(7));
  expect_equal(run1(g, transpose(s)), {7}, {});
  Tensor e = g.constant(TensorData::zeros({0, 2}));
  expect_equal(run1(g, transpose(e)), {}, {2, 0});
}

TEST(ShapeOps, TransposeLargeEveryElementSize) {
  Graph g;
  const int a = 2, b = 70, c = 300;  // 42000 elements: tiled and parallel
  std::vector<double> v(a * b * c);
  std::iota(v.begin(), v.end(), 0.0);
  Tensor x64 = g.constant(TensorData::from_vector<double>(v, {a, b, c}));
  std::vector<int8_t> v8(v.size());
  std::vector<f16_t> v16(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    v8[i] = static_cast<int8_t>(i % 101);
    v16[i] = f16_t(static_cast<float>(i % 1000));
  }
  Tensor x8 = g.constant(TensorData::from_vector<int8_t>(v8, {a, b, c}));
  Tensor x16 = g.constant(TensorData::from_vector<f16_t>(v16, {a, b, c}));
  auto out = testing::run_cpu(
      g, {transpose(x64, {2, 1, 0}), transpose(x8, {2, 0, 1}), transpose(x16, {0, 2, 1})});
  ASSERT_EQ(out[0].shape(), (Shape{c, b, a}));
  ASSERT_EQ(out[1].shape(), (Shape{c, a, b}));
  ASSERT_EQ(out[2].shape(), (Shape{a, c, b}));
  const double* p64 = out[0].data<double>();
  const int8_t* p8 = out[1].data<int8_t>();
  const f16_t* p16 = out[2].data<f16_t>();
  for (int i = 0; i < a; ++i) {
    for (int j = 0; j < b; ++j) {
      for (int k = 0; k < c; ++k) {
        const int src = (i * b + j) * c + k;
        ASSERT_EQ(p64[(k * b + j) * a + i], src);
        ASSERT_EQ(p8[(k * a + i) * b + j], src % 101);
        ASSERT_EQ(static_cast<float>(p16[(i * c + k) * b + j]), static_cast<float>(src % 1000));
      }
    }
  }
}

TG_COVERS(error, transpose);
TEST(ShapeOps, TransposeErrors) {
  Graph g;
  Tensor x = g.placeholder({2, 3, 4}, DType::f32, "x");
  EXPECT_TG_ERROR(transpose(x, {0, 1}), ErrorCode::invalid_argument,
                  "[transpose] perm [0,1] is not a permutation of the 3 dims");
  EXPECT_TG_ERROR(transpose(x, {0, 1, 1}), ErrorCode::invalid_argument, "[transpose] perm [0,1,1]");
  EXPECT_TG_ERROR(transpose(x, {0, -1, 2}), ErrorCode::invalid_argument,
                  "[transpose] perm [0,-1,2]");
  EXPECT_TG_ERROR(transpose(x, {0, 1, -4}), ErrorCode::invalid_argument,
                  "[transpose] perm [0,1,-4]");
  EXPECT_EQ(transpose(x, {0, -1, 1}).shape(), (Shape{2, 4, 3}));
  EXPECT_TG_ERROR(transpose(x, {0, 1, 3}), ErrorCode::invalid_argument, "[transpose] perm [0,1,3]");
}

// ---- slice -------------------------------------------------------------------------------------

TG_COVERS(value, slice);
TEST(ShapeOps, SlicePythonSemantics) {
  Graph g;
  Tensor x = range_f32(g, {10});
  auto s = [&](int64_t b, int64_t e, int64_t st) { return run1(g, slice(x, {{b}, {e}, {st}})); };
  expect_equal(s(-3, kSliceEnd, 1), {7, 8, 9}, {3});                         // x[-3:]
  expect_equal(s(8, 2, -2), {8, 6, 4}, {3});                                 // x[8:2:-2]
  expect_equal(s(-1, kSliceEnd, -1), {9, 8, 7, 6, 5, 4, 3, 2, 1, 0}, {10});  // x[::-1]
  expect_equal(s(-100, 100, 1), seq(10), {10});                              // clamped both ways
  expect_equal(s(5, 100, 3), {5, 8}, {2});                                   // x[5:100:3]
  expect_equal(s(100, kSliceEnd, -3), {9, 6, 3, 0}, {4});                    // x[100::-3]
  expect_equal(s(9, -100, -1), {9, 8, 7, 6, 5, 4, 3, 2, 1, 0}, {10});        // x[9:-100:-1]
  expect_equal(s(-100, kSliceEnd, -1), {}, {0});                             // x[-100::-1]
  expect_equal(s(5, 2, 1), {}, {0});                                         // x[5:2]
  expect_equal(s(-4, -1, 1), {6, 7, 8}, {3});                                // x[-4:-1]
  expect_equal(s(1, 2, std::numeric_limits<int64_t>::max()), {1}, {1});
  expect_equal(s(9, kSliceEnd, std::numeric_limits<int64_t>::min()), {9}, {1});
  // strides left empty mean 1.
  expect_equal(run1(g, slice(x, {.begin = {2}, .end = {4}})), {2, 3}, {2});
}

TEST(ShapeOps, SliceAxesAndRanks) {
  Graph g;
  Tensor x = range_f32(g, {3, 4});
  // x[:, 1:3]
  expect_equal(run1(g, slice(x, {.begin = {1}, .end = {3}, .axes = {-1}})), {1, 2, 5, 6, 9, 10},
               {3, 2});
  // x[::-1, 3::-2]
  expect_equal(run1(g, slice(x, {{kSliceEnd, 3}, {kSliceEnd, kSliceEnd}, {-1, -2}})),
               {11, 9, 7, 5, 3, 1}, {3, 2});
  // axes in any order: x[0:2, 1:2]
  expect_equal(run1(g, slice(x, {.begin = {1, 0}, .end = {2, 2}, .axes = {1, 0}})), {1, 5}, {2, 1});
  // Only leading axes given: x[1:]
  expect_equal(run1(g, slice(x, {{1}, {kSliceEnd}})), {4, 5, 6, 7, 8, 9, 10, 11}, {2, 4});
  Tensor big = g.constant(
      TensorData::from_vector<int64_t>({int64_t{1} << 40, -3, int64_t{-1} << 50, 9}, {4}));
  expect_equal(run1(g, slice(big, {{0}, {kSliceEnd}, {2}})), {1099511627776.0, -1125899906842624.0},
               {2});
  Tensor b = g.constant(TensorData::from_vector<bool>({true, false, true}, {3}));
  expect_equal(run1(g, slice(b, {{1}, {kSliceEnd}})), {0, 1}, {2});
}

TG_COVERS(error, slice);
TEST(ShapeOps, SliceErrors) {
  Graph g;
  Tensor x = g.placeholder({3, 4}, DType::f32, "x");
  EXPECT_TG_ERROR(slice(x, {{0}, {2}, {0}}), ErrorCode::invalid_argument,
                  "[slice] strides [0] contain 0");
  EXPECT_TG_ERROR(slice(x, {{0, 1}, {2}}), ErrorCode::invalid_argument,
                  "[slice] begin, end, strides and axes");
  EXPECT_TG_ERROR(slice(x, {{0}, {2}, {1, 1}}), ErrorCode::invalid_argument, "[slice]");
  EXPECT_TG_ERROR(slice(x, {{0, 0, 0}, {1, 1, 1}}), ErrorCode::invalid_argument,
                  "[slice] 3 begin values for an input of rank 2");
  EXPECT_TG_ERROR(slice(x, {.begin = {0}, .end = {1}, .axes = {2}}), ErrorCode::invalid_argument,
                  "[slice] axis 2 is out of range for rank 2");
  EXPECT_TG_ERROR(slice(x, {.begin = {0, 0}, .end = {1, 1}, .axes = {1, -1}}),
                  ErrorCode::invalid_argument, "[slice] axes [1,1] name a dim twice");
}

// ---- pad ---------------------------------------------------------------------------------------

TensorData pad1(Graph& g, Tensor x, int64_t before, int64_t after, PadMode mode, double value = 0) {
  return run1(g, pad(x, {{before}, {after}, mode, value}));
}

TG_COVERS(value, pad);
TEST(ShapeOps, PadModesNearTheEdge) {
  Graph g;
  Tensor x = g.constant(TensorData::from_vector<float>({1, 2, 3}, {3}));
  expect_equal(pad1(g, x, 2, 2, PadMode::constant, 9), {9, 9, 1, 2, 3, 9, 9}, {7});
  expect_equal(pad1(g, x, 2, 2, PadMode::reflect), {3, 2, 1, 2, 3, 2, 1}, {7});
  expect_equal(pad1(g, x, 2, 2, PadMode::symmetric), {2, 1, 1, 2, 3, 3, 2}, {7});
  expect_equal(pad1(g, x, 2, 2, PadMode::edge), {1, 1, 1, 2, 3, 3, 3}, {7});
  expect_equal(pad1(g, x, 2, 2, PadMode::periodic), {2, 3, 1, 2, 3, 1, 2}, {7});
  expect_equal(pad1(g, x, 0, 1, PadMode::reflect), {1, 2, 3, 2}, {4});
  expect_equal(pad1(g, x, 0, 0, PadMode::reflect), {1, 2, 3}, {3});
}

TEST(ShapeOps, PadWiderThanTheDimKeepsMirroring) {
  // numpy.pad([1, 2, 3], (5, 5), mode) for each mode.
  Graph g;
  Tensor x = g.constant(TensorData::from_vector<double>({1, 2, 3}, {3}));
  expect_equal(pad1(g, x, 5, 5, PadMode::reflect), {2, 1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3, 2}, {13});
  expect_equal(pad1(g, x, 5, 5, PadMode::symmetric), {2, 3, 3, 2, 1, 1, 2, 3, 3, 2, 1, 1, 2}, {13});
  expect_equal(pad1(g, x, 5, 5, PadMode::periodic), {2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2}, {13});
  expect_equal(pad1(g, x, 5, 5, PadMode::edge), {1, 1, 1, 1, 1, 1, 2, 3, 3, 3, 3, 3, 3}, {13});
  expect_equal(pad1(g, x, 5, 5, PadMode::constant), {0, 0, 0, 0, 0, 1, 2, 3, 0, 0, 0, 0, 0}, {13});
  // Two elements: reflect alternates, symmetric repeats pairs.
  Tensor two = g.constant(TensorData::from_vector<int32_t>({7, 8}, {2}));
  expect_equal(pad1(g, two, 3, 4, PadMode::reflect), {8, 7, 8, 7, 8, 7, 8, 7, 8}, {9});
  expect_equal(pad1(g, two, 3, 4, PadMode::symmetric), {8, 8, 7, 7, 8, 8, 7, 7, 8}, {9});
  // A single element: every non-reflect mode repeats it.
  Tensor one = g.constant(TensorData::from_vector<int32_t>({5}, {1}));
  expect_equal(pad1(g, one, 2, 1, PadMode::symmetric), {5, 5, 5, 5}, {4});
  expect_equal(pad1(g, one, 2, 1, PadMode::periodic), {5, 5, 5, 5}, {4});
  expect_equal(pad1(g, one, 2, 1, PadMode::edge), {5, 5, 5, 5}, {4});
}

TEST(ShapeOps, Pad2DAndDtypes) {
  Graph g;
  Tensor x = g.constant(TensorData::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}));
  // rows map to [1, 0, 1, 0, 1], columns to [2, 1, 0, 1, 2, 1].
  expect_equal(
      run1(g, pad(x, {{1, 2}, {2, 1}, PadMode::reflect})),
      {6, 5, 4, 5, 6, 5, 3, 2, 1, 2, 3, 2, 6, 5, 4, 5, 6, 5, 3, 2, 1, 2, 3, 2, 6, 5, 4, 5, 6, 5},
      {5, 6});
  Tensor y = g.constant(TensorData::from_vector<int64_t>({1, 2, 3, 4}, {2, 2}));
  expect_equal(run1(g, pad(y, {{1, 0}, {0, 2}, PadMode::edge})),
               {1, 2, 2, 2, 1, 2, 2, 2, 3, 4, 4, 4}, {3, 4});
  expect_equal(run1(g, pad(y, {{0, 1}, {1, 0}, PadMode::constant, -7})),
               {-7, 1, 2, -7, 3, 4, -7, -7, -7}, {3, 3});
  expect_equal(run1(g, pad(y, {{1, 0}, {1, 0}, PadMode::periodic})), {3, 4, 1, 2, 3, 4, 1, 2},
               {4, 2});
  Tensor b = g.constant(TensorData::from_vector<bool>({true, false}, {2}));
  expect_equal(pad1(g, b, 1, 1, PadMode::constant, 1), {1, 1, 0, 1}, {4});
  expect_equal(pad1(g, b, 1, 2, PadMode::symmetric), {1, 1, 0, 0, 1}, {5});
  // Constant padding of an empty dim, and an empty dim left unpadded in another mode.
  Tensor e = g.constant(TensorData::zeros({0}));
  expect_equal(pad1(g, e, 1, 2, PadMode::constant, 7), {7, 7, 7}, {3});
  Tensor e2 = g.constant(TensorData::zeros({0, 2}));
  expect_equal(run1(g, pad(e2, {{0, 1}, {0, 1}, PadMode::reflect})), {}, {0, 4});
  Tensor s = g.constant(TensorData::scalar<float>(4));
  expect_equal(run1(g, pad(s, {{}, {}})), {4}, {});
}

TG_COVERS(error, pad);
TEST(ShapeOps, PadErrors) {
  Graph g;
  Tensor x = g.placeholder({1, 3}, DType::f32, "x");
  EXPECT_TG_ERROR(pad(x, {{0, -1}, {0, 0}}), ErrorCode::invalid_argument, "[pad] negative padding");
  EXPECT_TG_ERROR(pad(x, {{0}, {0}}), ErrorCode::invalid_argument,
                  "[pad] before [0] and after [0] need one entry per dim of [1,3]");
  EXPECT_TG_ERROR(pad(x, {{1, 0}, {0, 0}, PadMode::reflect}), ErrorCode::invalid_argument,
                  "[pad] reflect padding of dim 0 needs size >= 2, input is [1,3]");
  Tensor e = g.placeholder({0}, DType::f32, "e");
  for (PadMode m : {PadMode::edge, PadMode::symmetric, PadMode::periodic}) {
    EXPECT_TG_ERROR(pad(e, {{0}, {1}, m}), ErrorCode::invalid_argument,
                    "needs size >= 1, input is [0]");
  }
  Tensor i8 = g.placeholder({2}, DType::i8, "i8");
  EXPECT_TG_ERROR(pad(i8, {{1}, {1}, PadMode::constant, 300}), ErrorCode::invalid_argument,
                  "[pad] value 300 does not fit i8");
  // A dynamic dim is checked when its size is known.
  Tensor d = g.placeholder({-1}, DType::f32, "d");
  Tensor y = pad(d, {{1}, {1}, PadMode::reflect});
  EXPECT_EQ(y.shape(), (Shape{-1}));
  EXPECT_TG_ERROR(run1(g, y, {{d, TensorData::from_vector<float>({1}, {1})}}),
                  ErrorCode::invalid_argument, "[pad] reflect padding of dim 0 needs size >= 2");
}

// ---- concat ------------------------------------------------------------------------------------

TG_COVERS(value, concat);
TEST(ShapeOps, Concat) {
  Graph g;
  Tensor a = g.constant(TensorData::from_vector<float>({1, 2, 3, 4}, {2, 2}));
  Tensor z = g.constant(TensorData::zeros({2, 0}));
  Tensor c = g.constant(TensorData::from_vector<float>({5, 6}, {2, 1}));
  expect_equal(run1(g, concat({a, z, c}, 1)), {1, 2, 5, 3, 4, 6}, {2, 3});
  expect_equal(run1(g, concat({a, z, c}, -1)), {1, 2, 5, 3, 4, 6}, {2, 3});
  expect_equal(run1(g, concat({a, a}, 0)), {1, 2, 3, 4, 1, 2, 3, 4}, {4, 2});
  expect_equal(run1(g, concat({a}, 0)), {1, 2, 3, 4}, {2, 2});
  Tensor r0 = g.constant(TensorData::from_vector<int64_t>({1, 2}, {1, 2}));
  Tensor e = g.constant(TensorData::from_vector<int64_t>({}, {0, 2}));
  Tensor r1 = g.constant(TensorData::from_vector<int64_t>({3, int64_t{1} << 33}, {1, 2}));
  expect_equal(run1(g, concat({r0, e, r1}, 0)), {1, 2, 3, 8589934592.0}, {2, 2});
  expect_equal(run1(g, concat({e, e}, 0)), {}, {0, 2});
  Tensor b = g.constant(TensorData::from_vector<bool>({true, false}, {2}));
  expect_equal(run1(g, concat({b, b, b}, 0)), {1, 0, 1, 0, 1, 0}, {6});
}

TG_COVERS(error, concat);
TEST(ShapeOps, ConcatErrors) {
  Graph g;
  Tensor a = g.placeholder({2, 3}, DType::f32, "a");
  Tensor b = g.placeholder({2, 4}, DType::f32, "b");
  EXPECT_TG_ERROR(concat({a, a, b}, 0), ErrorCode::shape_mismatch,
                  "[concat] dim 1 of input 2 is 4, expected 3 (inputs [2,3], [2,3], [2,4])");
  Tensor i = g.placeholder({2, 3}, DType::i32, "i");
  EXPECT_TG_ERROR(concat({a, i}, 0), ErrorCode::dtype_mismatch, "[concat]");
  Tensor r = g.placeholder({2, 3, 1}, DType::f32, "r");
  EXPECT_TG_ERROR(concat({a, r}, 0), ErrorCode::shape_mismatch,
                  "[concat] input 1 has rank 3, expected 2");
  EXPECT_TG_ERROR(concat({}, 0), ErrorCode::invalid_argument, "[concat] needs at least one tensor");
  EXPECT_TG_ERROR(concat({a, b}, 2), ErrorCode::invalid_argument,
                  "[concat] axis 2 is out of range for rank 2");
  Tensor s = g.placeholder({}, DType::f32, "s");
  EXPECT_TG_ERROR(concat({s, s}, 0), ErrorCode::invalid_argument,
                  "[concat] cannot concatenate 0-d tensors");
  EXPECT_TG_ERROR(concat({a, Tensor()}, 0), ErrorCode::invalid_argument,
                  "[concat] input 1 is an empty Tensor");
}

// ---- reverse -----------------------------------------------------------------------------------

TG_COVERS(value, reverse);
TEST(ShapeOps, Reverse) {
  Graph g;
  Tensor x = range_f32(g, {2, 3});
  expect_equal(run1(g, reverse(x, {0})), {3, 4, 5, 0, 1, 2}, {2, 3});
  expect_equal(run1(g, reverse(x, {1})), {2, 1, 0, 5, 4, 3}, {2, 3});
  expect_equal(run1(g, reverse(x, {-1})), {2, 1, 0, 5, 4, 3}, {2, 3});
  expect_equal(run1(g, reverse(x, {0, 1})), {5, 4, 3, 2, 1, 0}, {2, 3});
  expect_equal(run1(g, reverse(x, {})), {0, 1, 2, 3, 4, 5}, {2, 3});
  Tensor i = g.constant(TensorData::from_vector<int64_t>({int64_t{1} << 45, 2, 3}, {3}));
  expect_equal(run1(g, reverse(i, {0})), {3, 2, 35184372088832.0}, {3});
  Tensor e = g.constant(TensorData::zeros({0, 2}));
  expect_equal(run1(g, reverse(e, {0, 1})), {}, {0, 2});
}

TG_COVERS(error, reverse);
TEST(ShapeOps, ReverseErrors) {
  Graph g;
  Tensor x = g.placeholder({2, 3}, DType::f32, "x");
  EXPECT_TG_ERROR(reverse(x, {0, -2}), ErrorCode::invalid_argument,
                  "[reverse] axes [0,-2] name a dim twice");
  EXPECT_TG_ERROR(reverse(x, {2}), ErrorCode::invalid_argument,
                  "[reverse] axis 2 is out of range for rank 2");
}

// ---- tile --------------------------------------------------------------------------------------

TG_COVERS(value, tile);
TEST(ShapeOps, Tile) {
  Graph g;
  Tensor x = g.constant(TensorData::from_vector<float>({1, 2}, {2}));
  expect_equal(run1(g, tile(x, {3})), {1, 2, 1, 2, 1, 2}, {6});
  Tensor m = g.constant(TensorData::from_vector<int64_t>({1, 2, 3, 4}, {2, 2}));
  expect_equal(run1(g, tile(m, {2, 3})),
               {1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4, 1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4}, {4, 6});
  expect_equal(run1(g, tile(m, {1, 1})), {1, 2, 3, 4}, {2, 2});
  expect_equal(run1(g, tile(m, {0, 2})), {}, {0, 4});
  Tensor b = g.constant(TensorData::from_vector<bool>({true, false}, {2, 1}));
  expect_equal(run1(g, tile(b, {1, 2})), {1, 1, 0, 0}, {2, 2});
}

TG_COVERS(error, tile);
TEST(ShapeOps, TileErrors) {
  Graph g;
  Tensor x = g.placeholder({2, 3}, DType::f32, "x");
  EXPECT_TG_ERROR(tile(x, {2}), ErrorCode::invalid_argument,
                  "[tile] multiples [2] need one entry per dim of [2,3]");
  EXPECT_TG_ERROR(tile(x, {2, -1}), ErrorCode::invalid_argument,
                  "[tile] multiples [2,-1] has a negative entry");
}

// ---- composites: split, expand_dims, squeeze ---------------------------------------------------

TEST(ShapeOps, Split) {
  Graph g;
  Tensor x = range_f32(g, {5});
  std::vector<Tensor> p = split(x, {2, 0, 3}, 0);
  ASSERT_EQ(p.size(), 3u);
  expect_equal(run1(g, p[0]), {0, 1}, {2});
  expect_equal(run1(g, p[1]), {}, {0});
  expect_equal(run1(g, p[2]), {2, 3, 4}, {3});
  Tensor m = range_f32(g, {2, 6});
  std::vector<Tensor> q = split(m, 3, -1);
  ASSERT_EQ(q.size(), 3u);
  expect_equal(run1(g, q[0]), {0, 1, 6, 7}, {2, 2});
  expect_equal(run1(g, q[1]), {2, 3, 8, 9}, {2, 2});
  expect_equal(run1(g, q[2]), {4, 5, 10, 11}, {2, 2});
  std::vector<Tensor> rows = split(m, 2, 0);
  expect_equal(run1(g, rows[1]), {6, 7, 8, 9, 10, 11}, {1, 6});
}

TEST(ShapeOps, SplitErrors) {
  Graph g;
  Tensor x = g.placeholder({2, 6}, DType::f32, "x");
  EXPECT_TG_ERROR(split(x, {2, 3}, 1), ErrorCode::invalid_argument,
                  "[split] sizes [2,3] sum to 5, but dim 1 of [2,6] is 6");
  EXPECT_TG_ERROR(split(x, {7, -1}, 1), ErrorCode::invalid_argument,
                  "[split] sizes [7,-1] has a negative entry");
  EXPECT_TG_ERROR(split(x, std::vector<int64_t>{}, 1), ErrorCode::invalid_argument,
                  "[split] sizes is empty");
  EXPECT_TG_ERROR(split(x, 4, 1), ErrorCode::invalid_argument,
                  "[split] dim 1 of [2,6] (6) is not divisible by 4");
  EXPECT_TG_ERROR(split(x, 0, 1), ErrorCode::invalid_argument, "[split] num 0 must be positive");
  EXPECT_TG_ERROR(split(x, 2, 2), ErrorCode::invalid_argument,
                  "[split] axis 2 is out of range for rank 2");
}

TEST(ShapeOps, ExpandDimsAndSqueeze) {
  Graph g;
  Tensor x = range_f32(g, {2, 3});
  EXPECT_EQ(expand_dims(x, 0).shape(), (Shape{1, 2, 3}));
  EXPECT_EQ(expand_dims(x, 2).shape(), (Shape{2, 3, 1}));
  EXPECT_EQ(expand_dims(x, -1).shape(), (Shape{2, 3, 1}));
  EXPECT_EQ(expand_dims(x, -2).shape(), (Shape{2, 1, 3}));
  EXPECT_EQ(expand_dims(x, -3).shape(), (Shape{1, 2, 3}));
  expect_equal(run1(g, expand_dims(x, 1)), seq(6), {2, 1, 3});
  Tensor y = range_f32(g, {1, 2, 1, 3});
  EXPECT_EQ(squeeze(y).shape(), (Shape{2, 3}));
  EXPECT_EQ(squeeze(y, {-2}).shape(), (Shape{1, 2, 3}));
  EXPECT_EQ(squeeze(y, {0, -2}).shape(), (Shape{2, 3}));
  expect_equal(run1(g, squeeze(y, {0})), seq(6), {2, 1, 3});
  Tensor s = g.constant(TensorData::from_vector<bool>({true}, {1, 1}));
  expect_equal(run1(g, squeeze(s)), {1}, {});
  expect_equal(run1(g, expand_dims(squeeze(s), 0)), {1}, {1});
}

TEST(ShapeOps, ExpandDimsAndSqueezeErrors) {
  Graph g;
  Tensor x = g.placeholder({1, 2, 1, 3}, DType::f32, "x");
  EXPECT_TG_ERROR(squeeze(x, {1}), ErrorCode::invalid_argument,
                  "[squeeze] dim 1 of [1,2,1,3] is 2, not 1");
  EXPECT_TG_ERROR(squeeze(x, {4}), ErrorCode::invalid_argument,
                  "[squeeze] axis 4 is out of range for rank 4");
  EXPECT_TG_ERROR(squeeze(x, {0, -4}), ErrorCode::invalid_argument,
                  "[squeeze] axes [0,-4] name a dim twice");
  EXPECT_TG_ERROR(expand_dims(x, 5), ErrorCode::invalid_argument,
                  "[expand_dims] axis 5 is out of range [-5, 4] for input rank 4");
  EXPECT_TG_ERROR(expand_dims(x, -6), ErrorCode::invalid_argument,
                  "[expand_dims] axis -6 is out of range");
  Tensor d = g.placeholder({-1, -1}, DType::f32, "d");
  EXPECT_TG_ERROR(expand_dims(d, 0), ErrorCode::unsupported,
                  "[expand_dims] input [?,?] has more than one dynamic dim");
  EXPECT_TG_ERROR(squeeze(d, {0}), ErrorCode::unsupported,
                  "[squeeze] cannot squeeze dynamic dim 0");
  Tensor z = g.placeholder({-1, 0}, DType::f32, "z");
  EXPECT_TG_ERROR(expand_dims(z, 0), ErrorCode::unsupported,
                  "[expand_dims] input [?,0] has a dynamic dim beside a dim of size 0");
}

// ---- dynamic shapes ----------------------------------------------------------------------------

TEST(ShapeOps, DynamicPlaceholderResolvedByTheFeed) {
  Graph g;
  Tensor p = g.placeholder({-1, 3}, DType::f32, "p");
  Tensor flat = reshape(p, {-1});
  Tensor rows = reshape(p, {3, -1});
  Tensor flipped = slice(p, {{-1}, {kSliceEnd}, {-1}});
  Tensor tail = slice(p, {.begin = {1}, .end = {kSliceEnd}, .axes = {1}});
  Tensor twice = concat({p, p}, 0);
  Tensor t = transpose(p);
  Tensor padded = pad(p, {{1, 0}, {0, 1}, PadMode::edge});
  Tensor tiled = tile(p, {2, 1});
  Tensor wide = broadcast_to(p, {2, -1, 3});
  Tensor e = expand_dims(p, 1);
  Tensor sq = squeeze(e, {1});
  EXPECT_EQ(flat.shape(), (Shape{-1}));
  EXPECT_EQ(rows.shape(), (Shape{3, -1}));
  EXPECT_EQ(flipped.shape(), (Shape{-1, 3}));
  EXPECT_EQ(tail.shape(), (Shape{-1, 2}));
  EXPECT_EQ(twice.shape(), (Shape{-1, 3}));
  EXPECT_EQ(t.shape(), (Shape{3, -1}));
  EXPECT_EQ(padded.shape(), (Shape{-1, 4}));
  EXPECT_EQ(tiled.shape(), (Shape{-1, 3}));
  EXPECT_EQ(wide.shape(), (Shape{2, -1, 3}));
  EXPECT_EQ(e.shape(), (Shape{-1, 1, 3}));
  EXPECT_EQ(sq.shape(), (Shape{-1, 3}));
  Feeds feeds = {{p, TensorData::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3})}};
  auto out =
      testing::run_cpu(g, {flat, rows, flipped, tail, twice, t, padded, tiled, wide, e, sq}, feeds);
  expect_equal(out[0], {1, 2, 3, 4, 5, 6}, {6});
  expect_equal(out[1], {1, 2, 3, 4, 5, 6}, {3, 2});
  expect_equal(out[2], {4, 5, 6, 1, 2, 3}, {2, 3});
  expect_equal(out[3], {2, 3, 5, 6}, {2, 2});
  expect_equal(out[4], {1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6}, {4, 3});
  expect_equal(out[5], {1, 4, 2, 5, 3, 6}, {3, 2});
  expect_equal(out[6], {1, 2, 3, 3, 1, 2, 3, 3, 4, 5, 6, 6}, {3, 4});
  expect_equal(out[7], {1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6}, {4, 3});
  expect_equal(out[8], {1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6}, {2, 2, 3});
  expect_equal(out[9], {1, 2, 3, 4, 5, 6}, {2, 1, 3});
  expect_equal(out[10], {1, 2, 3, 4, 5, 6}, {2, 3});
  // Another feed size reuses the graph.
  expect_equal(run1(g, t, {{p, TensorData::from_vector<float>({1, 2, 3}, {1, 3})}}), {1, 2, 3},
               {3, 1});
  // A reshape whose count can only be checked with the feed.
  Tensor halves = reshape(p, {2, -1});
  EXPECT_TG_ERROR(run1(g, halves, {{p, TensorData::from_vector<float>({1, 2, 3}, {1, 3})}}),
                  ErrorCode::shape_mismatch,
                  "[reshape] cannot reshape [1,3] (3 elements) to [2,-1]");
  // A dynamic dim broadcast to a static one: checked with the feed.
  Tensor v = g.placeholder({-1}, DType::i32, "v");
  Tensor vb = broadcast_to(v, {2, 3});
  EXPECT_EQ(vb.shape(), (Shape{2, 3}));
  expect_equal(run1(g, vb, {{v, TensorData::from_vector<int32_t>({4}, {1})}}), {4, 4, 4, 4, 4, 4},
               {2, 3});
  expect_equal(run1(g, vb, {{v, TensorData::from_vector<int32_t>({1, 2, 3}, {3})}}),
               {1, 2, 3, 1, 2, 3}, {2, 3});
  EXPECT_TG_ERROR(run1(g, vb, {{v, TensorData::from_vector<int32_t>({1, 2}, {2})}}),
                  ErrorCode::shape_mismatch, "[broadcast_to] cannot broadcast [2] to [2,3]");
  Tensor fixed = reshape(p, {4});
  EXPECT_TG_ERROR(run1(g, fixed, {{p, TensorData::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3})}}),
                  ErrorCode::shape_mismatch, "[reshape] cannot reshape [2,3] (6 elements) to [4]");
}

}  // namespace
}  // namespace tg
