// Gradients of the shape family: finite-difference checks of every op (TG_GRAD_CASE, run by
// GradCheck) and hand-computed gradients (pad copies, negative strides, dynamic dims, f16/bf16).
#include <functional>
#include <numeric>

#include "autodiff/gradcheck.h"
#include "test_util.h"

namespace tg {
namespace {

using testing::expect_close;
using Xs = std::vector<Tensor>;

// ---- finite-difference checks ------------------------------------------------------------------
// clang-format off
TG_GRAD_CASE({.name = "broadcast_to/row", .op = "broadcast_to", .input_shapes = {{3}},
              .fn = [](const Xs& x) { return broadcast_to(x[0], {2, 3}); }});
TG_GRAD_CASE({.name = "broadcast_to/stretch_and_lead", .op = "broadcast_to",
              .input_shapes = {{2, 1}},
              .fn = [](const Xs& x) { return broadcast_to(x[0], {3, 2, 4}); }});
TG_GRAD_CASE({.name = "broadcast_to/scalar", .op = "broadcast_to", .input_shapes = {{}},
              .fn = [](const Xs& x) { return broadcast_to(x[0], {2, 2}); }});

TG_GRAD_CASE({.name = "reshape/2d", .op = "reshape", .input_shapes = {{2, 3}},
              .fn = [](const Xs& x) { return reshape(x[0], {3, 2}); }});
TG_GRAD_CASE({.name = "reshape/infer", .op = "reshape", .input_shapes = {{2, 3, 2}},
              .fn = [](const Xs& x) { return reshape(x[0], {-1, 4}); }});

TG_GRAD_CASE({.name = "transpose/default", .op = "transpose", .input_shapes = {{2, 3}},
              .fn = [](const Xs& x) { return transpose(x[0]); }});
TG_GRAD_CASE({.name = "transpose/3d", .op = "transpose", .input_shapes = {{2, 3, 4}},
              .fn = [](const Xs& x) { return transpose(x[0], {2, 0, 1}); }});
TG_GRAD_CASE({.name = "transpose/3d_negative_perm", .op = "transpose",
              .input_shapes = {{2, 3, 2}},
              .fn = [](const Xs& x) { return transpose(x[0], {-2, -1, 0}); }});

TG_GRAD_CASE({.name = "slice/stride1", .op = "slice", .input_shapes = {{4, 5}},
              .fn = [](const Xs& x) { return slice(x[0], {.begin = {1, 0}, .end = {3, -1}}); }});
TG_GRAD_CASE({.name = "slice/strided", .op = "slice", .input_shapes = {{5, 7}},
              .fn = [](const Xs& x) {
                return slice(x[0], {.begin = {0, 1}, .end = {5, 7}, .strides = {2, 3}});
              }});
TG_GRAD_CASE({.name = "slice/negative_strides", .op = "slice", .input_shapes = {{5, 6}},
              .fn = [](const Xs& x) {
                return slice(x[0], {.begin = {kSliceEnd, 4}, .end = {kSliceEnd, 0},
                                    .strides = {-1, -2}});
              }});
TG_GRAD_CASE({.name = "slice/axes_subset_negative_axis", .op = "slice",
              .input_shapes = {{3, 4, 5}},
              .fn = [](const Xs& x) {
                return slice(x[0], {.begin = {-2}, .end = {0}, .strides = {-2}, .axes = {-1}});
              }});
TG_GRAD_CASE({.name = "slice/axes_subset_clamped", .op = "slice", .input_shapes = {{3, 4, 2}},
              .fn = [](const Xs& x) {
                return slice(x[0], {.begin = {-10, 1}, .end = {10, 3}, .axes = {1, 0}});
              }});
TG_GRAD_CASE({.name = "slice/empty", .op = "slice", .input_shapes = {{3, 4}},
              .fn = [](const Xs& x) {
                return concat({slice(x[0], {.begin = {2}, .end = {2}, .axes = {1}}), x[0]}, 1);
              }});

TG_GRAD_CASE({.name = "pad/constant", .op = "pad", .input_shapes = {{2, 3}},
              .fn = [](const Xs& x) {
                return pad(x[0], {{1, 0}, {2, 3}, PadMode::constant, 1.5});
              }});
TG_GRAD_CASE({.name = "pad/reflect", .op = "pad", .input_shapes = {{3, 2}},
              .fn = [](const Xs& x) { return pad(x[0], {{2, 1}, {1, 0}, PadMode::reflect}); }});
TG_GRAD_CASE({.name = "pad/reflect_wider_than_dim", .op = "pad", .input_shapes = {{3, 2}},
              .fn = [](const Xs& x) { return pad(x[0], {{5, 4}, {3, 6}, PadMode::reflect}); }});
TG_GRAD_CASE({.name = "pad/symmetric_wider_than_dim", .op = "pad", .input_shapes = {{2, 3}},
              .fn = [](const Xs& x) { return pad(x[0], {{3, 5}, {7, 4}, PadMode::symmetric}); }});
TG_GRAD_CASE({.name = "pad/edge_wider_than_dim", .op = "pad", .input_shapes = {{2, 3}},
              .fn = [](const Xs& x) { return pad(x[0], {{4, 0}, {2, 5}, PadMode::edge}); }});
TG_GRAD_CASE({.name = "pad/periodic_wider_than_dim", .op = "pad", .input_shapes = {{2, 3}},
              .fn = [](const Xs& x) { return pad(x[0], {{5, 3}, {0, 7}, PadMode::periodic}); }});
TG_GRAD_CASE({.name = "pad/symmetric_dim1", .op = "pad", .input_shapes = {{1, 2}},
              .fn = [](const Xs& x) { return pad(x[0], {{2, 3}, {1, 1}, PadMode::symmetric}); }});

TG_GRAD_CASE({.name = "concat/three_inputs", .op = "concat",
              .input_shapes = {{2, 1}, {2, 3}, {2, 2}},
              .fn = [](const Xs& x) { return concat({x[0], x[1], x[2]}, 1); }});
TG_GRAD_CASE({.name = "concat/negative_axis_3d", .op = "concat",
              .input_shapes = {{2, 2, 2}, {2, 1, 2}, {2, 3, 2}},
              .fn = [](const Xs& x) { return concat({x[0], x[1], x[2]}, -2); }});
TG_GRAD_CASE({.name = "concat/same_input_twice", .op = "concat", .input_shapes = {{3}, {2}},
              .fn = [](const Xs& x) { return concat({x[0], x[1], x[0]}, 0); }, .wrt = {0}});

TG_GRAD_CASE({.name = "reverse/two_axes", .op = "reverse", .input_shapes = {{2, 3, 2}},
              .fn = [](const Xs& x) { return reverse(x[0], {0, -1}); }});

TG_GRAD_CASE({.name = "tile/2d", .op = "tile", .input_shapes = {{2, 3}},
              .fn = [](const Xs& x) { return tile(x[0], {2, 3}); }});
TG_GRAD_CASE({.name = "tile/3d_with_ones", .op = "tile", .input_shapes = {{2, 1, 3}},
              .fn = [](const Xs& x) { return tile(x[0], {1, 4, 2}); }});
TG_GRAD_CASE({.name = "tile/zero_multiple", .op = "tile", .input_shapes = {{2, 2}},
              .fn = [](const Xs& x) { return concat({tile(x[0], {0, 1}), x[0]}, 0); }});
// clang-format on

// ---- hand-computed gradients -------------------------------------------------------------------

/// 0, 1, ..., n-1 as f64 of `shape`.
Tensor range_f64(Graph& g, Shape shape) {
  std::vector<double> v(static_cast<size_t>(num_elements(shape)));
  std::iota(v.begin(), v.end(), 0.0);
  return g.constant(TensorData::from_vector<double>(v, shape));
}

/// The vjp of y = f(x) for x a [n] f64 placeholder and the cotangent 0, 1, 2, ...
TensorData vjp_of_range(Shape x_shape, const std::function<Tensor(Tensor)>& f) {
  Graph g;
  Tensor x = g.placeholder(x_shape, DType::f64, "x");
  Tensor y = f(x);
  Tensor dx = vjp({y}, {x}, {range_f64(g, y.shape())})[0];
  return testing::run1(g, dx, {{x, TensorData::zeros(x_shape, DType::f64)}});
}

PadDesc pad_5_4(PadMode mode) { return {{5}, {4}, mode}; }

// x = [x0, x1, x2] padded by 5 before and 4 after reads (positions 0..11):
//   constant  -  -  -  -  - x0 x1 x2  -  -  -  -
//   reflect  x1 x0 x1 x2 x1 x0 x1 x2 x1 x0 x1 x2
//   symmetric x1 x2 x2 x1 x0 x0 x1 x2 x2 x1 x0 x0
//   edge     x0 x0 x0 x0 x0 x0 x1 x2 x2 x2 x2 x2
//   periodic x1 x2 x0 x1 x2 x0 x1 x2 x0 x1 x2 x0
// so with the cotangent 0..11 each x gets the sum of the positions that read it.
TEST(ShapeRules, PadAccumulatesEveryCopy) {
  expect_close(vjp_of_range({3}, [](Tensor x) { return pad(x, pad_5_4(PadMode::constant)); }),
               {5, 6, 7}, {3});
  expect_close(vjp_of_range({3}, [](Tensor x) { return pad(x, pad_5_4(PadMode::reflect)); }),
               {1 + 5 + 9, 0 + 2 + 4 + 6 + 8 + 10, 3 + 7 + 11}, {3});
  expect_close(vjp_of_range({3}, [](Tensor x) { return pad(x, pad_5_4(PadMode::symmetric)); }),
               {4 + 5 + 10 + 11, 0 + 3 + 6 + 9, 1 + 2 + 7 + 8}, {3});
  expect_close(vjp_of_range({3}, [](Tensor x) { return pad(x, pad_5_4(PadMode::edge)); }),
               {0 + 1 + 2 + 3 + 4 + 5, 6, 7 + 8 + 9 + 10 + 11}, {3});
  expect_close(vjp_of_range({3}, [](Tensor x) { return pad(x, pad_5_4(PadMode::periodic)); }),
               {2 + 5 + 8 + 11, 0 + 3 + 6 + 9, 1 + 4 + 7 + 10}, {3});
}

TEST(ShapeRules, SliceNegativeStridesScatterBack) {
  // Reads 6, 3, 0.
  expect_close(vjp_of_range({7},
                            [](Tensor x) {
                              return slice(
                                  x, {.begin = {kSliceEnd}, .end = {kSliceEnd}, .strides = {-3}});
                            }),
               {2, 0, 0, 1, 0, 0, 0}, {7});
  // Reads 5, 3, 1.
  expect_close(
      vjp_of_range({7},
                   [](Tensor x) { return slice(x, {.begin = {5}, .end = {0}, .strides = {-2}}); }),
      {0, 2, 0, 1, 0, 0, 0}, {7});
  // Reads 4, 3, 2 (stride -1 goes through reverse + pad).
  expect_close(
      vjp_of_range({6},
                   [](Tensor x) { return slice(x, {.begin = {-2}, .end = {1}, .strides = {-1}}); }),
      {0, 0, 2, 1, 0, 0}, {6});
}

TEST(ShapeRules, TransposeConcatTileReverse) {
  // y[k, i, 0] = x[i, 0, k], cotangent c[k, i, 0] = 2k + i.
  expect_close(vjp_of_range({2, 1, 3},
                            [](Tensor x) {
                              return transpose(x, {2, 0, 1});
                            }),
               {0, 2, 4, 1, 3, 5}, {2, 1, 3});
  // concat([x, x[:1], x], 0) with x [2]: y = [x0 x1 x0 x0 x1], cotangent 0..4.
  expect_close(vjp_of_range({2},
                            [](Tensor x) {
                              return concat({x, slice(x, {.begin = {0}, .end = {1}}), x}, 0);
                            }),
               {0 + 2 + 3, 1 + 4}, {2});
  // tile([x0, x1], 3) = x0 x1 x0 x1 x0 x1.
  expect_close(vjp_of_range({2}, [](Tensor x) { return tile(x, {3}); }), {0 + 2 + 4, 1 + 3 + 5},
               {2});
  expect_close(vjp_of_range({3}, [](Tensor x) { return reverse(x, {0}); }), {2, 1, 0}, {3});
  // broadcast [2, 1] -> [2, 3]: each x sums its row of the cotangent.
  expect_close(vjp_of_range({2, 1},
                            [](Tensor x) {
                              return broadcast_to(x, {2, 3});
                            }),
               {0 + 1 + 2, 3 + 4 + 5}, {2, 1});
}

TEST(ShapeRules, LowPrecisionDtypes) {
  for (DType t : {DType::f16, DType::bf16, DType::f32}) {
    Graph g;
    Tensor x = cast(g.constant(TensorData::from_vector<double>({1, 0, 3, 4, 5, 6}, {2, 3})), t);
    auto grad = [&](Tensor y) { return testing::run1(g, cast(gradients(y, {x})[0], DType::f64)); };
    // Rows read x0 x1 x0 x1 x0 x1 x0 (3 and 4 copies), columns x2 x1 x0 x1 x2 x1 (1, 3, 2).
    expect_close(grad(pad(x, {{1, 2}, {4, 1}, PadMode::reflect})), {3, 9, 6, 4, 12, 8}, {2, 3});
    expect_close(grad(slice(x, {.begin = {2}, .end = {kSliceEnd}, .strides = {-2}, .axes = {1}})),
                 {1, 0, 1, 1, 0, 1}, {2, 3});
    expect_close(grad(tile(x, {2, 1})), {2, 2, 2, 2, 2, 2}, {2, 3});
    expect_close(grad(transpose(concat({x, x}, 0))), {2, 2, 2, 2, 2, 2}, {2, 3});
  }
}

TEST(ShapeRules, DynamicDims) {
  // pad (constant) and concat locate the gradient without knowing the dynamic dim.
  Graph g;
  Tensor x = g.placeholder({-1, 2}, DType::f64, "x");
  Tensor b = g.placeholder({1, 4}, DType::f64, "b");
  Tensor w = g.constant(TensorData::from_vector<double>({1, 2, 3, 4}, {4}));
  Tensor y = concat({pad(x, {{1, 0}, {1, 2}, PadMode::constant}), b}, 0);  // [?, 4]
  std::vector<Tensor> d = gradients(y * w, {x, b});
  std::vector<TensorData> r =
      testing::run_cpu(g, d,
                       {{x, TensorData::from_vector<double>({1, 2, 3, 4, 5, 6}, {3, 2})},
                        {b, TensorData::from_vector<double>({7, 8, 9, 10}, {1, 4})}});
  expect_close(r[0], {1, 2, 1, 2, 1, 2}, {3, 2});
  expect_close(r[1], {1, 2, 3, 4}, {1, 4});
}

TEST(ShapeRules, DynamicDimsBesideTheScatteredAxis) {
  Graph g;
  Tensor x = g.placeholder({-1, 3}, DType::f64, "x");
  Tensor z = g.placeholder({-1, 5}, DType::f64, "z");
  // Row of the reflect pad reads x2 x1 x0 x1 x2 x1; the slice reads z0 z2 z4.
  Tensor w6 = g.constant(TensorData::from_vector<double>({1, 2, 3, 4, 5, 6}, {6}));
  Tensor w3 = g.constant(TensorData::from_vector<double>({1, 2, 3}, {3}));
  Tensor loss = reduce_sum(pad(x, {{0, 2}, {0, 1}, PadMode::reflect}) * w6) +
                reduce_sum(slice(z, {.begin = {0}, .end = {5}, .strides = {2}, .axes = {1}}) * w3);
  std::vector<Tensor> d = gradients(loss, {x, z});
  std::vector<TensorData> r = testing::run_cpu(
      g, d,
      {{x, TensorData::zeros({2, 3}, DType::f64)}, {z, TensorData::zeros({1, 5}, DType::f64)}});
  expect_close(r[0], {3, 2 + 4 + 6, 1 + 5, 3, 2 + 4 + 6, 1 + 5}, {2, 3});
  expect_close(r[1], {1, 0, 2, 0, 3}, {1, 5});
}

TEST(ShapeRules, DynamicSlicedDimIsUnsupported) {
  Graph g;
  Tensor x = g.placeholder({-1, 3}, DType::f64, "x");
  Tensor y = slice(x, {.begin = {0}, .end = {2}, .strides = {2}, .axes = {0}});
  EXPECT_TG_ERROR(gradients(y, {x}), ErrorCode::unsupported, "[gradients]");
}

}  // namespace
}  // namespace tg
