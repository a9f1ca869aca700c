// Gradients of the reduce family and matmul: finite-difference checks of every differentiable op
// (TG_GRAD_CASE, run by GradCheck) and hand-computed gradients (zeros in products, ties, NaN,
// dynamic dims, f16/bf16/f32).
#include <functional>
#include <limits>

#include "autodiff/gradcheck.h"
#include "test_util.h"

namespace tg {
namespace {

using testing::expect_close;
using Xs = std::vector<Tensor>;

// ---- reductions --------------------------------------------------------------------------------
// clang-format off
TG_GRAD_CASE({.name = "reduce_sum/two_axes", .op = "reduce_sum", .input_shapes = {{2, 3, 4}},
              .fn = [](const Xs& x) { return reduce_sum(x[0], {.axes = {0, 2}}); }});
TG_GRAD_CASE({.name = "reduce_sum/negative_axis_keep_dims", .op = "reduce_sum",
              .input_shapes = {{2, 3, 4}},
              .fn = [](const Xs& x) {
                return reduce_sum(x[0], {.axes = {-1}, .keep_dims = true});
              }});
TG_GRAD_CASE({.name = "reduce_sum/all", .op = "reduce_sum", .input_shapes = {{3, 2}},
              .fn = [](const Xs& x) { return reduce_sum(x[0]); }});
TG_GRAD_CASE({.name = "reduce_sum/scalar", .op = "reduce_sum", .input_shapes = {{}},
              .fn = [](const Xs& x) { return reduce_sum(x[0]); }});
// Composites, differentiated through reduce_sum and elementwise ops.
TG_GRAD_CASE({.name = "reduce_mean/keep_dims", .op = "reduce_sum", .input_shapes = {{2, 3, 2}},
              .fn = [](const Xs& x) {
                return reduce_mean(x[0], {.axes = {1}, .keep_dims = true});
              }});
TG_GRAD_CASE({.name = "reduce_variance/two_axes", .op = "reduce_sum",
              .input_shapes = {{3, 2, 4}},
              .fn = [](const Xs& x) { return reduce_variance(x[0], {.axes = {0, -1}}); }});

TG_GRAD_CASE({.name = "reduce_prod/two_axes", .op = "reduce_prod", .input_shapes = {{2, 3, 2}},
              .fn = [](const Xs& x) { return reduce_prod(x[0], {.axes = {0, -1}}); }});
TG_GRAD_CASE({.name = "reduce_prod/keep_dims", .op = "reduce_prod", .input_shapes = {{3, 4}},
              .fn = [](const Xs& x) {
                return reduce_prod(x[0], {.axes = {1}, .keep_dims = true});
              }});
// Row 0 has one zero, row 1 two zeros, row 2 none; every column has exactly one zero.
const std::vector<double> kWithZeros = {0.5, 0, -1.5, 0, 2, 0, 1.2, -0.7, 1.9};
TG_GRAD_CASE({.name = "reduce_prod/zeros_rows", .op = "reduce_prod", .input_shapes = {{3, 3}},
              .fn = [](const Xs& x) { return reduce_prod(x[0], {.axes = {-1}}); },
              .values = {kWithZeros}});
TG_GRAD_CASE({.name = "reduce_prod/zeros_columns", .op = "reduce_prod", .input_shapes = {{3, 3}},
              .fn = [](const Xs& x) {
                return reduce_prod(x[0], {.axes = {0}, .keep_dims = true});
              },
              .values = {kWithZeros}});
TG_GRAD_CASE({.name = "reduce_prod/zeros_all", .op = "reduce_prod", .input_shapes = {{3, 3}},
              .fn = [](const Xs& x) { return reduce_prod(x[0]); }, .values = {kWithZeros}});

// Random inputs are distinct, so there are no ties for the finite differences to straddle.
TG_GRAD_CASE({.name = "reduce_max/two_axes", .op = "reduce_max", .input_shapes = {{2, 3, 4}},
              .fn = [](const Xs& x) { return reduce_max(x[0], {.axes = {0, 2}}); }});
TG_GRAD_CASE({.name = "reduce_max/negative_axis_keep_dims", .op = "reduce_max",
              .input_shapes = {{3, 4}},
              .fn = [](const Xs& x) {
                return reduce_max(x[0], {.axes = {-1}, .keep_dims = true});
              }});
TG_GRAD_CASE({.name = "reduce_max/all", .op = "reduce_max", .input_shapes = {{3, 2}},
              .fn = [](const Xs& x) { return reduce_max(x[0]); }});
TG_GRAD_CASE({.name = "reduce_min/two_axes_keep_dims", .op = "reduce_min",
              .input_shapes = {{2, 3, 4}},
              .fn = [](const Xs& x) {
                return reduce_min(x[0], {.axes = {-3, 1}, .keep_dims = true});
              }});
TG_GRAD_CASE({.name = "reduce_min/one_axis", .op = "reduce_min", .input_shapes = {{4, 3}},
              .fn = [](const Xs& x) { return reduce_min(x[0], {.axes = {0}}); }});
// clang-format on

/// The vjp of y = f(x) for x a constant-valued f64 placeholder and the given cotangent.
TensorData vjp_at(const std::vector<double>& x_values, Shape x_shape,
                  const std::vector<double>& cotangent, const std::function<Tensor(Tensor)>& f) {
  Graph g;
  Tensor x = g.placeholder(x_shape, DType::f64, "x");
  Tensor y = f(x);
  Tensor ct = g.constant(TensorData::from_vector<double>(cotangent, y.shape()));
  Tensor dx = vjp({y}, {x}, {ct})[0];
  return testing::run1(g, dx, {{x, TensorData::from_vector<double>(x_values, x_shape)}});
}

TEST(ReduceRules, ReduceSumBroadcastsBack) {
  // d/dx sum(x^2) = 2x.
  Graph g;
  Tensor x = g.placeholder({3}, DType::f64, "x");
  Tensor dx = gradients(reduce_sum(x * x), {x})[0];
  expect_close(testing::run1(g, dx, {{x, TensorData::from_vector<double>({1, -2, 0.5}, {3})}}),
               {2, -4, 1}, {3});
  auto sum_cols = [](Tensor t) { return reduce_sum(t, {.axes = {0}}); };
  expect_close(vjp_at({1, 2, 3, 4, 5, 6}, {2, 3}, {10, 20, 30}, sum_cols), {10, 20, 30, 10, 20, 30},
               {2, 3});
}

TEST(ReduceRules, ReduceProdIsTheProductOfTheOthers) {
  auto prod = [](Tensor t) { return reduce_prod(t, {.axes = {-1}}); };
  expect_close(vjp_at({2, 4, 3}, {3}, {1}, prod), {12, 6, 8}, {3});
  // One zero: only the zero gets a gradient, the product of the others.
  expect_close(vjp_at({2, 0, 3}, {3}, {1}, prod), {0, 6, 0}, {3});
  // Two zeros: every element's "others" contains a zero.
  expect_close(vjp_at({0, 5, 0}, {3}, {1}, prod), {0, 0, 0}, {3});
  // Per row, scaled by the cotangent.
  expect_close(vjp_at({2, 0, 3, -1, 2, 4}, {2, 3}, {2, 10}, prod), {0, 12, 0, 80, -40, -20},
               {2, 3});
}

TEST(ReduceRules, ReduceMaxMinSplitTiesEqually) {
  auto max_rows = [](Tensor t) { return reduce_max(t, {.axes = {1}}); };
  expect_close(vjp_at({1, 3, 3, 2, 5, 5, 5, -1}, {2, 4}, {1, 3}, max_rows),
               {0, 0.5, 0.5, 0, 1, 1, 1, 0}, {2, 4});
  auto min_all = [](Tensor t) { return reduce_min(t, {.keep_dims = true}); };
  expect_close(vjp_at({-2, 4, -2, 0}, {2, 2}, {6}, min_all), {3, 0, 3, 0}, {2, 2});
  // A NaN is the result, so the NaN gets the gradient.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  expect_close(vjp_at({1, nan, 2}, {3}, {1}, [](Tensor t) { return reduce_max(t); }), {0, 1, 0},
               {3});
}

TEST(ReduceRules, DynamicDims) {
  Graph g;
  Tensor x = g.placeholder({-1, 3}, DType::f64, "x");
  Tensor y = reduce_sum(x, {.axes = {0}}) + reduce_max(x, {.axes = {-1}, .keep_dims = true});
  Tensor dx = gradients(y, {x})[0];
  // d/dx of sum over [?, 3] of (colsum[j] + rowmax[i]) = 2 (rows) + 3 at each row's max.
  TensorData xv = TensorData::from_vector<double>({1, 5, 2, 7, 0, 3}, {2, 3});
  expect_close(testing::run1(g, dx, {{x, xv}}), {2, 5, 2, 5, 2, 2}, {2, 3});
}

TEST(ReduceRules, ArgReductionsPassNoGradient) {
  Graph g;
  Tensor x = g.placeholder({3}, DType::f64, "x");
  Tensor y = reduce_max(x) + cast(argmax(x), DType::f64);
  Tensor dx = gradients(y, {x})[0];
  expect_close(testing::run1(g, dx, {{x, TensorData::from_vector<double>({1, 4, 2}, {3})}}),
               {0, 1, 0}, {3});
}

TEST(ReduceRules, LowPrecisionDtypes) {
  for (DType t : {DType::f16, DType::bf16, DType::f32}) {
    Graph g;
    Tensor x = cast(g.constant(TensorData::from_vector<double>({1, 0, 3, 4, 5, 6}, {2, 3})), t);
    auto grad = [&](Tensor y) { return testing::run1(g, cast(gradients(y, {x})[0], DType::f64)); };
    expect_close(grad(reduce_prod(x, {.axes = {1}})), {0, 3, 0, 30, 24, 20}, {2, 3});
    expect_close(grad(reduce_max(x, {.axes = {0}})), {0, 0, 0, 1, 1, 1}, {2, 3});
    expect_close(grad(reduce_min(x, {.axes = {0}})), {1, 1, 1, 0, 0, 0}, {2, 3});
    // sum(x @ x^T) = sum over k of colsum_k^2: the gradient is 2 colsum_k on each row.
    expect_close(grad(matmul(x, x, {.transpose_b = true})), {10, 10, 18, 10, 10, 18}, {2, 3});
  }
}

// ---- matmul ------------------------------------------------------------------------------------
// clang-format off
TG_GRAD_CASE({.name = "matmul/2d", .op = "matmul", .input_shapes = {{2, 3}, {3, 4}},
              .fn = [](const Xs& x) { return matmul(x[0], x[1]); }});
TG_GRAD_CASE({.name = "matmul/transpose_a", .op = "matmul", .input_shapes = {{3, 2}, {3, 4}},
              .fn = [](const Xs& x) { return matmul(x[0], x[1], {.transpose_a = true}); }});
TG_GRAD_CASE({.name = "matmul/transpose_b", .op = "matmul", .input_shapes = {{2, 3}, {4, 3}},
              .fn = [](const Xs& x) { return matmul(x[0], x[1], {.transpose_b = true}); }});
TG_GRAD_CASE({.name = "matmul/transpose_both", .op = "matmul", .input_shapes = {{3, 2}, {4, 3}},
              .fn = [](const Xs& x) {
                return matmul(x[0], x[1], {.transpose_a = true, .transpose_b = true});
              }});
TG_GRAD_CASE({.name = "matmul/batched_broadcast", .op = "matmul",
              .input_shapes = {{2, 1, 2, 3}, {3, 3, 2}},
              .fn = [](const Xs& x) { return matmul(x[0], x[1]); }});
TG_GRAD_CASE({.name = "matmul/batched_broadcast_transposed", .op = "matmul",
              .input_shapes = {{2, 1, 3, 2}, {3, 2, 3}},
              .fn = [](const Xs& x) {
                return matmul(x[0], x[1], {.transpose_a = true, .transpose_b = true});
              }});
TG_GRAD_CASE({.name = "matmul/batch_of_one_stretched", .op = "matmul",
              .input_shapes = {{1, 2, 3}, {2, 3, 2}},
              .fn = [](const Xs& x) { return matmul(x[0], x[1]); }});
TG_GRAD_CASE({.name = "matmul/vector_matrix", .op = "matmul", .input_shapes = {{3}, {3, 4}},
              .fn = [](const Xs& x) { return matmul(x[0], x[1]); }});
TG_GRAD_CASE({.name = "matmul/matrix_vector", .op = "matmul", .input_shapes = {{2, 3}, {3}},
              .fn = [](const Xs& x) { return matmul(x[0], x[1]); }});
TG_GRAD_CASE({.name = "matmul/vector_vector", .op = "matmul", .input_shapes = {{3}, {3}},
              .fn = [](const Xs& x) { return matmul(x[0], x[1]); }});
TG_GRAD_CASE({.name = "matmul/vector_batched_transposed", .op = "matmul",
              .input_shapes = {{3}, {2, 4, 3}},
              .fn = [](const Xs& x) {
                return matmul(x[0], x[1], {.transpose_a = true, .transpose_b = true});
              }});
TG_GRAD_CASE({.name = "matmul/batched_transposed_vector", .op = "matmul",
              .input_shapes = {{2, 3, 2}, {3}},
              .fn = [](const Xs& x) { return matmul(x[0], x[1], {.transpose_a = true}); }});
// clang-format on

TEST(MatmulRules, HandComputed) {
  // L = sum(a @ b), a [1,2] = [1 2], b [2,2] = [[3 4] [5 6]]:
  // dL/da = ones[1,2] @ b^T = [3+4, 5+6]; dL/db = a^T @ ones[1,2] = [[1 1] [2 2]].
  for (DType t : {DType::f64, DType::f32}) {
    Graph g;
    Tensor a = g.constant(TensorData::from_vector<double>({1, 2}, {1, 2}));
    Tensor b = g.constant(TensorData::from_vector<double>({3, 4, 5, 6}, {2, 2}));
    Tensor ac = cast(a, t), bc = cast(b, t);
    std::vector<Tensor> d = gradients(matmul(ac, bc), {ac, bc});
    std::vector<TensorData> r = testing::run_cpu(g, d);
    expect_close(r[0], {7, 11}, {1, 2});
    expect_close(r[1], {1, 1, 2, 2}, {2, 2});
  }
}

TEST(MatmulRules, VectorVector) {
  // d/da (a . b) = b, d/db = a, scaled by the cotangent 2.
  Graph g;
  Tensor a = g.placeholder({3}, DType::f64, "a");
  Tensor b = g.placeholder({3}, DType::f64, "b");
  Tensor y = matmul(a, b);
  std::vector<Tensor> d = vjp({y}, {a, b}, {g.constant(2.0, DType::f64)});
  std::vector<TensorData> r =
      testing::run_cpu(g, d,
                       {{a, TensorData::from_vector<double>({1, 2, 3}, {3})},
                        {b, TensorData::from_vector<double>({4, 5, 6}, {3})}});
  expect_close(r[0], {8, 10, 12}, {3});
  expect_close(r[1], {2, 4, 6}, {3});
}

TEST(MatmulRules, DynamicBatch) {
  Graph g;
  Tensor a = g.placeholder({-1, 1, 2}, DType::f64, "a");
  Tensor b = g.placeholder({2, 2}, DType::f64, "b");
  std::vector<Tensor> d = gradients(matmul(a, b), {a, b});
  std::vector<TensorData> r =
      testing::run_cpu(g, d,
                       {{a, TensorData::from_vector<double>({1, 2, 3, 4}, {2, 1, 2})},
                        {b, TensorData::from_vector<double>({3, 4, 5, 6}, {2, 2})}});
  expect_close(r[0], {7, 11, 7, 11}, {2, 1, 2});
  // Summed over the batch: a^T @ ones per batch = [[1 1] [2 2]] + [[3 3] [4 4]].
  expect_close(r[1], {4, 4, 6, 6}, {2, 2});
}

}  // namespace
}  // namespace tg
