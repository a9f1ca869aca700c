// batch_norm, layer_norm and dropout: hand-computed values, float64 references computed here,
// running-statistic updates, dropout masks, gradients, and build-time errors.
#include <cmath>
#include <limits>

#include "autodiff/gradcheck.h"
#include "core/philox.h"
#include "ir/graph.h"
#include "test_util.h"
#include "tg/nn.h"

namespace tg {
namespace {

using testing::expect_close;
using testing::run1;

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

Tensor f64(Graph& g, std::vector<double> v, Shape s) {
  return g.constant(TensorData::from_vector<double>(v, s));
}
TensorData f64_data(std::vector<double> v, Shape s) {
  return TensorData::from_vector<double>(v, s);
}
TensorData flag(bool b) { return TensorData::scalar<bool>(b); }
std::vector<double> values(const TensorData& t) {
  std::vector<double> v(static_cast<size_t>(t.num_elements()));
  for (int64_t i = 0; i < t.num_elements(); ++i) v[i] = t.element_as_double(i);
  return v;
}
std::vector<double> random_values(Shape s, float low, float high, uint64_t seed) {
  return values(TensorData::random_uniform(s, low, high, seed, DType::f64));
}
TensorData variable_by_name(const Graph& g, const std::string& name) {
  int slot = g.impl()->variables()->find(name);
  EXPECT_GE(slot, 0) << name;
  return g.impl()->variables()->value(slot);
}

// ---------------------------------------------------------------------------------------------
// batch_norm

// The float64 reference: per-channel mean and biased variance over every other axis.
struct BnStats {
  std::vector<double> mean, var;  // biased
  double n = 0;
};
BnStats bn_stats(const std::vector<double>& x, const Shape& shape, int64_t axis) {
  const int64_t c = shape[axis];
  int64_t inner = 1;
  for (size_t a = static_cast<size_t>(axis) + 1; a < shape.size(); ++a) inner *= shape[a];
  BnStats s{std::vector<double>(c, 0.0), std::vector<double>(c, 0.0),
            static_cast<double>(x.size()) / static_cast<double>(c)};
  auto channel = [&](size_t i) { return (static_cast<int64_t>(i) / inner) % c; };
  for (size_t i = 0; i < x.size(); ++i) s.mean[channel(i)] += x[i] / s.n;
  for (size_t i = 0; i < x.size(); ++i) {
    const double d = x[i] - s.mean[channel(i)];
    s.var[channel(i)] += d * d / s.n;
  }
  return s;
}
std::vector<double> bn_apply(const std::vector<double>& x, const Shape& shape, int64_t axis,
                             const std::vector<double>& mean, const std::vector<double>& var,
                             const std::vector<double>& gamma, const std::vector<double>& beta,
                             double eps) {
  const int64_t c = shape[axis];
  int64_t inner = 1;
  for (size_t a = static_cast<size_t>(axis) + 1; a < shape.size(); ++a) inner *= shape[a];
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const int64_t k = (static_cast<int64_t>(i) / inner) % c;
    y[i] = gamma[k] * (x[i] - mean[k]) / std::sqrt(var[k] + eps) + beta[k];
  }
  return y;
}

// x [N, 2] with N fed at run time (so n / (n - 1) is counted at run time), epsilon 0.
// Run 1, x = [[1, 2], [2, 4], [3, 6], [4, 8]]: means [2.5, 5], biased variances [1.25, 5],
// unbiased [5/3, 20/3]; both channels normalize to [-1.5, -0.5, 0.5, 1.5] / sqrt(1.25) =
// [-1.3416407864998738, -0.4472135954999579, ...]; gamma [1, 2], beta [0, 1].
// Running stats from (0, 1), momentum 0.1: mean 0.1 * [2.5, 5] = [0.25, 0.5],
// var 0.9 + 0.1 * [5/3, 20/3] = [1.0666666666666667, 1.5666666666666667].
// Run 2, x doubled: means [5, 10], unbiased variances [20/3, 80/3]; running mean
// 0.9 * [0.25, 0.5] + 0.1 * [5, 10] = [0.725, 1.45], var 0.9 * [1.0666.., 1.5666..] +
// 0.1 * [20/3, 80/3] = [1.6266666666666667, 4.076666666666667].
TEST(NnBatchNorm, HandComputedTrainingRunsAndInference) {
  Graph g;
  Tensor x = g.placeholder({-1, 2}, DType::f64, "x");
  Tensor training = g.placeholder({}, DType::bool_, "training");
  Tensor mean = g.variable(f64_data({0, 0}, {2}), "bn/mean");
  Tensor var = g.variable(f64_data({1, 1}, {2}), "bn/var");
  Tensor y = batch_norm(x, f64(g, {1, 2}, {2}), f64(g, {0, 1}, {2}), mean, var, training,
                        {.epsilon = 0});
  EXPECT_EQ(y.type(), (TensorType{{-1, 2}, DType::f64}));
  const double a = 1.3416407864998738, b = 0.4472135954999579;
  const std::vector<double> want{-a, 1 - 2 * a, -b, 1 - 2 * b, b, 1 + 2 * b, a, 1 + 2 * a};
  const std::vector<double> x1{1, 2, 2, 4, 3, 6, 4, 8};
  std::vector<double> x2 = x1;
  for (double& v : x2) v *= 2;

  expect_close(run1(g, y, {{x, f64_data(x1, {4, 2})}, {training, flag(true)}}), want, {4, 2},
               1e-14, 1e-14);
  expect_close(g.variable_value(mean), {0.25, 0.5}, {2}, 1e-15, 0);
  expect_close(g.variable_value(var), {1.0666666666666667, 1.5666666666666667}, {2}, 1e-15, 0);
  expect_close(run1(g, y, {{x, f64_data(x2, {4, 2})}, {training, flag(true)}}), want, {4, 2},
               1e-14, 1e-14);
  expect_close(g.variable_value(mean), {0.725, 1.45}, {2}, 1e-15, 0);
  expect_close(g.variable_value(var), {1.6266666666666667, 4.076666666666667}, {2}, 1e-15, 0);

  // Inference on a batch of one: the running statistics normalize; the variables keep their
  // values (bit for bit), and the training branch's 0/0 does not leak through.
  TensorData y_inf = run1(g, y, {{x, f64_data({1.725, 3.45}, {1, 2})}, {training, flag(false)}});
  expect_close(y_inf, {1 / std::sqrt(1.6266666666666667), 2 * 2 / std::sqrt(4.076666666666667) + 1},
               {1, 2}, 1e-14, 0);
  testing::expect_equal(g.variable_value(mean), {0.725, 1.45}, {2});
  testing::expect_equal(g.variable_value(var), values(g.variable_value(var)), {2});
  expect_close(g.variable_value(var), {1.6266666666666667, 4.076666666666667}, {2}, 1e-15, 0);
}

// is_training switches through if_else: y is the if_else's result, so inference runs only the
// branch that folds the running statistics (no batch reduction, no assignment runs).
TEST(NnBatchNorm, IsTrainingSwitchesThroughIfElse) {
  Graph g;
  Tensor x = g.placeholder({-1, 2}, DType::f64, "x");
  Tensor training = g.placeholder({}, DType::bool_, "training");
  Tensor mean = g.variable(f64_data({0, 0}, {2}), "bn/mean");
  Tensor var = g.variable(f64_data({1, 1}, {2}), "bn/var");
  Tensor y = batch_norm(x, f64(g, {1, 1}, {2}), f64(g, {0, 0}, {2}), mean, var, training);
  EXPECT_EQ(y.op().kind_name(), "if_else");
  // Inference with one example per channel: a batch variance would be 0 and its unbiased
  // correction divide by zero; the inference branch never computes either.
  TensorData out = run1(g, y, {{x, f64_data({2, -3}, {1, 2})}, {training, flag(false)}});
  const double s = 1 / std::sqrt(1 + 1e-5);
  expect_close(out, {2 * s, -3 * s}, {1, 2}, 1e-14, 0);
  testing::expect_equal(g.variable_value(mean), {0, 0}, {2});
  testing::expect_equal(g.variable_value(var), {1, 1}, {2});
}

// NCHW (axis 1) and NHWC-like layouts against the float64 reference, two training runs with
// different batches, then inference; static shapes and dynamic N and H (run-time count).
TEST(NnBatchNorm, MatchesFloat64ReferenceStaticAndDynamic) {
  const Shape shape{3, 2, 2, 3};
  const double eps = 1e-3, momentum = 0.3;
  const std::vector<double> gamma{1.5, -0.5}, beta{0.25, 2};
  for (int64_t axis : {int64_t{1}, int64_t{-1}}) {
    const int64_t ax = axis < 0 ? axis + 4 : axis;
    const int64_t c = shape[ax];
    std::vector<double> gm(gamma), bt(beta);
    gm.resize(c, 0.75);
    bt.resize(c, -1);
    for (Shape ph : {shape, Shape{-1, 2, -1, 3}}) {
      SCOPED_TRACE(shape_to_string(ph) + " axis " + std::to_string(axis));
      Graph g;
      Tensor x = g.placeholder(ph, DType::f64, "x");
      Tensor training = g.placeholder({}, DType::bool_, "training");
      std::vector<double> rm = random_values({c}, -1, 1, 5), rv = random_values({c}, 0.5, 2, 6);
      Tensor mean_v = g.variable(f64_data(rm, {c}), "mean");
      Tensor var_v = g.variable(f64_data(rv, {c}), "var");
      Tensor y = batch_norm(x, f64(g, gm, {c}), f64(g, bt, {c}), mean_v, var_v, training,
                            {.axis = axis, .momentum = momentum, .epsilon = eps});
      for (uint64_t run = 0; run < 2; ++run) {
        std::vector<double> xs = random_values(shape, -3, 5, 10 + run);
        BnStats s = bn_stats(xs, shape, ax);
        EXPECT_EQ(s.n, 36.0 / static_cast<double>(c));
        expect_close(run1(g, y, {{x, f64_data(xs, shape)}, {training, flag(true)}}),
                     bn_apply(xs, shape, ax, s.mean, s.var, gm, bt, eps), shape, 1e-12, 1e-12);
        for (int64_t k = 0; k < c; ++k) {
          rm[k] = (1 - momentum) * rm[k] + momentum * s.mean[k];
          rv[k] = (1 - momentum) * rv[k] + momentum * s.var[k] * s.n / (s.n - 1);
        }
        expect_close(g.variable_value(mean_v), rm, {c}, 1e-13, 1e-15);
        expect_close(g.variable_value(var_v), rv, {c}, 1e-13, 1e-15);
      }
      std::vector<double> xs = random_values(shape, -3, 5, 20);
      expect_close(run1(g, y, {{x, f64_data(xs, shape)}, {training, flag(false)}}),
                   bn_apply(xs, shape, ax, rm, rv, gm, bt, eps), shape, 1e-12, 1e-12);
      expect_close(g.variable_value(mean_v), rm, {c}, 1e-13, 1e-15);
      expect_close(g.variable_value(var_v), rv, {c}, 1e-13, 1e-15);
    }
  }
}

// float32 data far from zero (mean ~1e4, spread ~0.1): the batch statistics keep their accuracy
// (E[x^2] - E[x]^2 in float32 would lose every digit of the variance; batch_norm subtracts the
// mean before squaring). Guards any one-pass rewrite of the statistics.
TEST(NnBatchNorm, F32StatisticsOfDataFarFromZero) {
  const Shape shape{6, 3, 3, 4};
  std::vector<double> xs = random_values(shape, -0.2f, 0.2f, 31);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(1e4 + 37.0 * static_cast<double>(i % 4) + xs[i]);
  for (Shape ph : {shape, Shape{-1, 3, 3, 4}}) {
    SCOPED_TRACE(shape_to_string(ph));
    Graph g;
    Tensor x = g.placeholder(ph, DType::f32, "x");
    Tensor training = g.placeholder({}, DType::bool_, "training");
    Tensor mean_v = g.variable(TensorData::zeros({4}), "mean");
    Tensor var_v = g.variable(TensorData::full({4}, DType::f32, 1.0), "var");
    Tensor ones = g.constant(TensorData::full({4}, DType::f32, 1.0));
    Tensor zeros = g.constant(TensorData::zeros({4}));
    Tensor y = batch_norm(x, ones, zeros, mean_v, var_v, training, {.momentum = 1.0, .epsilon = 0});
    std::vector<float> xf(xs.begin(), xs.end());
    TensorData got = run1(g, y, {{x, TensorData::from_vector<float>(xf, shape)}, {training, flag(true)}});
    BnStats st = bn_stats(xs, shape, 3);
    expect_close(got, bn_apply(xs, shape, 3, st.mean, st.var, {1, 1, 1, 1}, {0, 0, 0, 0}, 0), shape, 2e-2, 2e-2);
    std::vector<double> unbiased(4);
    for (int k = 0; k < 4; ++k) unbiased[k] = st.var[k] * st.n / (st.n - 1);
    expect_close(g.variable_value(var_v), unbiased, {4}, 2e-3, 0);  // ~0.013: every digit counts
  }
}

TEST(NnBatchNorm, F32ConstantFlagAndSingleValuePerChannel) {
  Graph g;
  const Shape shape{8, 3};
  std::vector<double> xs = random_values(shape, -2, 2, 31);
  std::vector<float> xf(xs.begin(), xs.end());
  Tensor x = g.constant(TensorData::from_vector<float>(xf, shape));
  auto param = [&](std::vector<float> v) { return g.constant(TensorData::from_vector<float>(v, {3})); };
  Tensor mean_v = g.variable(TensorData::zeros({3}), "m");
  Tensor var_v = g.variable(TensorData::full({3}, DType::f32, 1.0), "v");
  Tensor y = batch_norm(x, param({1, 2, 3}), param({0, 0, 1}), mean_v, var_v,
                        g.constant(1.0, DType::bool_));
  EXPECT_EQ(y.dtype(), DType::f32);
  BnStats s = bn_stats(std::vector<double>(xf.begin(), xf.end()), shape, 1);
  expect_close(run1(g, y), bn_apply(xs, shape, 1, s.mean, s.var, {1, 2, 3}, {0, 0, 1}, 1e-5),
               shape, 1e-5, 1e-5);
  std::vector<double> want_var(3);
  for (int k = 0; k < 3; ++k) want_var[k] = 0.9 + 0.1 * s.var[k] * 8 / 7;
  expect_close(g.variable_value(var_v), want_var, {3}, 1e-6, 1e-6);

  // One value per channel in training: y = beta, and the unbiased variance would be 0 * 1/0 =
  // NaN (PyTorch's BatchNorm rejects such a batch): the running statistics keep their values.
  Graph h;
  Tensor one = h.constant(TensorData::from_vector<double>({3, -4}, {1, 2}));
  Tensor m1 = h.variable(f64_data({0, 0}, {2}), "m"), v1 = h.variable(f64_data({1, 1}, {2}), "v");
  Tensor y1 = batch_norm(one, f64(h, {1, 1}, {2}), f64(h, {0.5, -0.5}, {2}), m1, v1,
                         h.constant(1.0, DType::bool_));
  expect_close(run1(h, y1), {0.5, -0.5}, {1, 2}, 0, 0);
  expect_close(h.variable_value(m1), {0, 0}, {2}, 0, 0);
  expect_close(h.variable_value(v1), {1, 1}, {2}, 0, 0);
}

TEST(NnBatchNorm, DynamicBatchOfOneOrNoneKeepsTheRunningStatistics) {
  // A dynamic batch counted at run time: 3 rows update the statistics (hand-computed), then a
  // last partial batch of 1 row and an empty one leave them as they were (no NaN).
  Graph g;
  Tensor x = g.placeholder({-1, 2}, DType::f64, "x");
  Tensor m = g.variable(f64_data({0, 0}, {2}), "m"), v = g.variable(f64_data({1, 1}, {2}), "v");
  Tensor y = batch_norm(x, f64(g, {1, 1}, {2}), f64(g, {0, 0}, {2}), m, v,
                        g.constant(1.0, DType::bool_));
  // Channel 0: 1, 2, 3 (mean 2, unbiased var 1); channel 1: 0, 0, 6 (mean 2, unbiased var 12).
  run1(g, y, {{x, f64_data({1, 0, 2, 0, 3, 6}, {3, 2})}});
  const std::vector<double> mean3{0.2, 0.2}, var3{0.9 + 0.1 * 1, 0.9 + 0.1 * 12};
  expect_close(g.variable_value(m), mean3, {2}, 1e-15, 1e-15);
  expect_close(g.variable_value(v), var3, {2}, 1e-15, 1e-15);
  TensorData y1 = run1(g, y, {{x, f64_data({5, -7}, {1, 2})}});
  expect_close(y1, {0, 0}, {1, 2}, 0, 0);
  expect_close(g.variable_value(m), mean3, {2}, 0, 0);
  expect_close(g.variable_value(v), var3, {2}, 0, 0);
  TensorData y0 = run1(g, y, {{x, f64_data({}, {0, 2})}});
  EXPECT_EQ(y0.shape(), (Shape{0, 2}));
  expect_close(g.variable_value(m), mean3, {2}, 0, 0);
  expect_close(g.variable_value(v), var3, {2}, 0, 0);
}

// An empty training batch (N = 0, dynamic or static) has a NaN mean and variance; y is empty,
// and gamma's and beta's gradients are sums over no rows: 0, not 0 * rsqrt(NaN) = NaN.
TEST(NnBatchNorm, EmptyTrainingBatchHasZeroParameterGradients) {
  for (bool dynamic : {true, false}) {
    SCOPED_TRACE(dynamic ? "dynamic N" : "static N = 0");
    Graph g;
    Tensor x = dynamic ? g.placeholder({-1, 2}, DType::f64, "x") : f64(g, {}, {0, 2});
    Tensor gamma = f64(g, {1, 2}, {2}), beta = f64(g, {0, 1}, {2});
    Tensor m = g.variable(f64_data({0, 0}, {2}), "m"), v = g.variable(f64_data({1, 1}, {2}), "v");
    Tensor y = batch_norm(x, gamma, beta, m, v, g.constant(1.0, DType::bool_));
    std::vector<Tensor> grads = gradients(reduce_sum(y * y), {gamma, beta});
    Feeds feeds;
    if (dynamic) feeds = {{x, f64_data({}, {0, 2})}};
    expect_close(run1(g, grads[0], feeds), {0, 0}, {2}, 0, 0);
    expect_close(run1(g, grads[1], feeds), {0, 0}, {2}, 0, 0);
    expect_close(g.variable_value(v), {1, 1}, {2}, 0, 0);
    if (!dynamic) continue;
    // Rows 1, 2, 3 in both channels: xhat = [-1, 0, 1] * sqrt(1.5) (epsilon 1e-5 aside), and
    // d sum(y^2) / d beta = 2 sum(y) = 2 * 3 * beta, d / d gamma = 2 sum(y * xhat) = 2 * gamma * 3.
    TensorData x3 = f64_data({1, 1, 2, 2, 3, 3}, {3, 2});
    const double r = (2.0 / 3) / (2.0 / 3 + 1e-5);  // sum(xhat^2) / 3
    expect_close(run1(g, grads[0], {{x, x3}}), {2 * 1 * 3 * r, 2 * 2 * 3 * r}, {2}, 1e-12, 1e-12);
    expect_close(run1(g, grads[1], {{x, x3}}), {0, 6}, {2}, 1e-12, 1e-12);
  }
}

Tensor bn_for_grad(const std::vector<Tensor>& in, bool training, int64_t axis) {
  Graph g(in[0].graph_impl());
  const int64_t c = in[1].shape()[0];
  Tensor m = g.variable(TensorData::full({c}, DType::f64, 0.5), "m");
  Tensor v = g.variable(TensorData::full({c}, DType::f64, 1.5), "v");
  return batch_norm(in[0], in[1], in[2], m, v, g.constant(training ? 1.0 : 0.0, DType::bool_),
                    {.axis = axis, .epsilon = 1e-3});
}
TG_GRAD_CASE({.name = "nn_batch_norm_training", .op = "batch_norm",
              .input_shapes = {{4, 3}, {3}, {3}},
              .fn = [](auto& in) { return bn_for_grad(in, true, -1); }});
TG_GRAD_CASE({.name = "nn_batch_norm_training_nchw", .op = "batch_norm",
              .input_shapes = {{2, 3, 2, 2}, {3}, {3}},
              .fn = [](auto& in) { return bn_for_grad(in, true, 1); }});
TG_GRAD_CASE({.name = "nn_batch_norm_inference", .op = "batch_norm",
              .input_shapes = {{3, 2}, {2}, {2}},
              .fn = [](auto& in) { return bn_for_grad(in, false, -1); }});

TEST(NnBatchNorm, Errors) {
  Graph g, other;
  Tensor x = g.constant(TensorData::zeros({4, 3}));
  Tensor p = g.constant(TensorData::zeros({3}));
  Tensor m = g.variable(TensorData::zeros({3}), "m"), v = g.variable(TensorData::zeros({3}), "v");
  Tensor t = g.constant(1.0, DType::bool_);
  constexpr auto kShape = ErrorCode::shape_mismatch;
  constexpr auto kDtype = ErrorCode::dtype_mismatch;
  constexpr auto kArg = ErrorCode::invalid_argument;
  EXPECT_TG_ERROR(batch_norm(g.constant(TensorData::zeros({4, 3}, DType::i32)), p, p, m, v, t),
                  kDtype, "[batch_norm]");
  EXPECT_TG_ERROR(batch_norm(g.constant(TensorData::zeros({3})), p, p, m, v, t), kArg,
                  "[batch_norm] expects x of rank >= 2");
  EXPECT_TG_ERROR(batch_norm(x, p, p, m, v, t, {.axis = 2}), kArg, "[batch_norm] axis 2");
  EXPECT_TG_ERROR(batch_norm(x, g.constant(TensorData::zeros({4})), p, m, v, t), kShape,
                  "[batch_norm] gamma is f32[4], expected [C] = [3]");
  EXPECT_TG_ERROR(batch_norm(x, p, g.constant(TensorData::zeros({1, 3})), m, v, t), kShape,
                  "[batch_norm] beta");
  EXPECT_TG_ERROR(batch_norm(x, p, p, m, v, t, {.axis = 0}), kShape, "[batch_norm] gamma");
  EXPECT_TG_ERROR(batch_norm(x, g.constant(TensorData::zeros({3}, DType::f64)), p, m, v, t), kDtype,
                  "[batch_norm] gamma");
  Tensor m64 = g.variable(TensorData::zeros({3}, DType::f64), "m64");
  EXPECT_TG_ERROR(batch_norm(x, p, p, m64, v, t), kDtype, "[batch_norm] running_mean");
  EXPECT_TG_ERROR(batch_norm(x, p, p, m, p, t), kArg, "[batch_norm] running_var must be a variable");
  EXPECT_TG_ERROR(batch_norm(x, p, p, read_variable(m), v, t), kArg, "[batch_norm] running_mean");
  EXPECT_TG_ERROR(batch_norm(x, p, p, m, m, t), kArg, "[batch_norm]");
  EXPECT_TG_ERROR(batch_norm(x, p, p, m, v, g.constant(1.0)), kArg,
                  "[batch_norm] is_training must be a bool scalar");
  EXPECT_TG_ERROR(batch_norm(x, p, p, m, v, g.constant(TensorData::from_vector<bool>({true}, {1}))),
                  kArg, "[batch_norm] is_training");
  EXPECT_TG_ERROR(batch_norm(x, p, p, m, v, other.constant(1.0, DType::bool_)), kArg,
                  "[batch_norm] is_training belongs to another graph");
  EXPECT_TG_ERROR(batch_norm(x, Tensor(), p, m, v, t), kArg, "[batch_norm] gamma");
  EXPECT_TG_ERROR(batch_norm(x, p, p, m, v, t, {.momentum = 1.5}), kArg, "[batch_norm] momentum");
  EXPECT_TG_ERROR(batch_norm(x, p, p, m, v, t, {.epsilon = -1}), kArg, "[batch_norm] epsilon");
}

// ---------------------------------------------------------------------------------------------
// layer_norm

// Rows [1, 2, 3] and [2, 4, 6], epsilon 0: means 2 and 4, variances 2/3 and 8/3, both normalize
// to [-1, 0, 1] * sqrt(3/2) = [-1.224744871391589, 0, 1.224744871391589]; gamma [1, 2, 3],
// beta [0, 0, 1] give [-1.224744871391589, 0, 4.674234614174767].
TEST(NnLayerNorm, HandComputed) {
  Graph g;
  Tensor x = f64(g, {1, 2, 3, 2, 4, 6}, {2, 3});
  const double r = 1.224744871391589;
  Tensor gamma = f64(g, {1, 2, 3}, {3}), beta = f64(g, {0, 0, 1}, {3});
  expect_close(run1(g, layer_norm(x, gamma, beta, {.epsilon = 0})),
               {-r, 0, 4.674234614174767, -r, 0, 4.674234614174767}, {2, 3}, 1e-14, 1e-15);
  expect_close(run1(g, layer_norm(x, Tensor(), Tensor(), {.epsilon = 0})), {-r, 0, r, -r, 0, r},
               {2, 3}, 1e-14, 1e-15);
  expect_close(run1(g, layer_norm(x, gamma, Tensor(), {.epsilon = 0})), {-r, 0, 3 * r, -r, 0, 3 * r},
               {2, 3}, 1e-14, 1e-15);
  expect_close(run1(g, layer_norm(x, Tensor(), beta, {.epsilon = 0})),
               {-r, 0, r + 1, -r, 0, r + 1}, {2, 3}, 1e-14, 1e-15);
  // Normalizing both axes: mean 3, variance 8/3 over the 6 values.
  const double s = 1 / std::sqrt(8.0 / 3);
  expect_close(run1(g, layer_norm(x, Tensor(), Tensor(), {.begin_axis = 0, .epsilon = 0})),
               {-2 * s, -s, 0, -s, s, 3 * s}, {2, 3}, 1e-14, 1e-15);
}

TEST(NnLayerNorm, MatchesFloat64ReferenceAndDynamicBatch) {
  const Shape shape{3, 2, 4};
  const double eps = 1e-4;
  std::vector<double> xs = random_values(shape, -2, 3, 41), gm = random_values({2, 4}, 0.5, 1.5, 42),
                      bt = random_values({2, 4}, -1, 1, 43);
  std::vector<double> want(xs.size());
  for (size_t row = 0; row < 3; ++row) {  // normalized axes [1, 3): 8 values a row
    double mean = 0, var = 0;
    for (size_t j = 0; j < 8; ++j) mean += xs[row * 8 + j] / 8;
    for (size_t j = 0; j < 8; ++j) var += (xs[row * 8 + j] - mean) * (xs[row * 8 + j] - mean) / 8;
    for (size_t j = 0; j < 8; ++j) {
      want[row * 8 + j] = (xs[row * 8 + j] - mean) / std::sqrt(var + eps) * gm[j] + bt[j];
    }
  }
  Graph g;
  Tensor x = g.placeholder({-1, 2, 4}, DType::f64, "x");
  Tensor y = layer_norm(x, f64(g, gm, {2, 4}), f64(g, bt, {2, 4}), {.begin_axis = -2, .epsilon = eps});
  EXPECT_EQ(y.type(), (TensorType{{-1, 2, 4}, DType::f64}));
  expect_close(run1(g, y, {{x, f64_data(xs, shape)}}), want, shape, 1e-12, 1e-13);
  // f32.
  std::vector<float> xf(xs.begin(), xs.end()), gf(gm.begin(), gm.end()), bf(bt.begin(), bt.end());
  Tensor y32 = layer_norm(g.constant(TensorData::from_vector<float>(xf, shape)),
                          g.constant(TensorData::from_vector<float>(gf, {2, 4})),
                          g.constant(TensorData::from_vector<float>(bf, {2, 4})),
                          {.begin_axis = 1, .epsilon = eps});
  expect_close(run1(g, y32), want, shape, 1e-5, 1e-5);
}

TG_GRAD_CASE({.name = "nn_layer_norm", .op = "layer_norm", .input_shapes = {{3, 4}, {4}, {4}},
              .fn = [](auto& in) { return layer_norm(in[0], in[1], in[2]); }});
TG_GRAD_CASE({.name = "nn_layer_norm_two_axes", .op = "layer_norm",
              .input_shapes = {{2, 2, 3}, {2, 3}, {2, 3}},
              .fn = [](auto& in) { return layer_norm(in[0], in[1], in[2], {.begin_axis = 1}); }});
TG_GRAD_CASE({.name = "nn_layer_norm_no_affine", .op = "layer_norm", .input_shapes = {{2, 5}},
              .fn = [](auto& in) { return layer_norm(in[0], Tensor(), Tensor()); }});

TEST(NnLayerNorm, Errors) {
  Graph g, other;
  Tensor x = g.constant(TensorData::zeros({2, 3}));
  Tensor p = g.constant(TensorData::zeros({3}));
  EXPECT_TG_ERROR(layer_norm(g.constant(TensorData::zeros({2, 3}, DType::i64)), p, p),
                  ErrorCode::dtype_mismatch, "[layer_norm]");
  EXPECT_TG_ERROR(layer_norm(g.constant(0.0), Tensor(), Tensor()), ErrorCode::invalid_argument,
                  "[layer_norm] expects x of rank >= 1");
  EXPECT_TG_ERROR(layer_norm(x, p, p, {.begin_axis = 2}), ErrorCode::invalid_argument,
                  "[layer_norm] begin_axis 2");
  EXPECT_TG_ERROR(layer_norm(x, g.constant(TensorData::zeros({2, 3})), p, {.begin_axis = -1}),
                  ErrorCode::shape_mismatch, "[layer_norm] gamma is f32[2,3], expected x.shape[1:]");
  EXPECT_TG_ERROR(layer_norm(x, p, p, {.begin_axis = 0}), ErrorCode::shape_mismatch,
                  "[layer_norm] gamma");
  EXPECT_TG_ERROR(layer_norm(x, Tensor(), g.constant(TensorData::zeros({3}, DType::f64))),
                  ErrorCode::dtype_mismatch, "[layer_norm] beta");
  EXPECT_TG_ERROR(layer_norm(x, other.constant(TensorData::zeros({3})), Tensor()),
                  ErrorCode::invalid_argument, "[layer_norm] gamma belongs to another graph");
  EXPECT_TG_ERROR(layer_norm(x, p, p, {.epsilon = std::nan("")}), ErrorCode::invalid_argument,
                  "[layer_norm] epsilon");
}

// ---------------------------------------------------------------------------------------------
// dropout

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;  // seed offset of the k-th dropout

struct DropoutRig {
  Graph g;
  Tensor x = g.constant(TensorData::full({10000}, DType::f32, 1.0));
  Tensor training = g.placeholder({}, DType::bool_, "training");
  std::vector<double> run(Tensor y, bool train) {
    return values(run1(g, y, {{training, flag(train)}}));
  }
};

// Kept elements: u >= rate with u the f32 uniform of (seed, counter) for that element.
void expect_mask(const std::vector<double>& y, uint64_t seed, uint64_t key, double rate,
                 double kept_value) {
  int wrong = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const bool keep = philox::uniform_f32(seed, i, key) >= static_cast<float>(rate);
    wrong += y[i] != (keep ? kept_value : 0.0);
  }
  EXPECT_EQ(wrong, 0) << "seed " << seed << " key " << key;
}

TEST(NnDropout, MaskStatisticsScalingAndReproducibility) {
  DropoutRig r;
  Tensor y = dropout(r.x, r.training, {.rate = 0.5, .seed = 77});
  std::vector<double> y1 = r.run(y, true), y2 = r.run(y, true);
  for (const auto* yv : {&y1, &y2}) {
    int kept = 0;
    for (double v : *yv) {
      ASSERT_TRUE(v == 0 || v == 2) << v;  // kept values are scaled by 1 / (1 - 0.5)
      kept += v == 2;
    }
    EXPECT_NEAR(kept, 5000, 150);  // binomial(10000, 0.5): sigma 50
  }
  int differ = 0;
  for (size_t i = 0; i < y1.size(); ++i) differ += y1[i] != y2[i];
  EXPECT_NEAR(differ, 5000, 150);  // independent masks
  // Run k uses the stream (seed, key = k), the counter counts training runs.
  expect_mask(y1, 77, 0, 0.5, 2);
  expect_mask(y2, 77, 1, 0.5, 2);
  testing::expect_equal(variable_by_name(r.g, "dropout_0/counter"), {2}, {});
  // Inference: the identity, and the counter stays.
  testing::expect_equal(run1(r.g, y, {{r.training, flag(false)}}),
                        std::vector<double>(10000, 1.0), {10000});
  testing::expect_equal(variable_by_name(r.g, "dropout_0/counter"), {2}, {});
  expect_mask(r.run(y, true), 77, 2, 0.5, 2);
  // A second dropout of the graph: its own counter and an offset seed.
  Tensor y_b = dropout(r.x, r.training, {.rate = 0.5, .seed = 77});
  expect_mask(r.run(y_b, true), 77 + kGolden, 0, 0.5, 2);
  testing::expect_equal(variable_by_name(r.g, "dropout_1/counter"), {1}, {});
  testing::expect_equal(variable_by_name(r.g, "dropout_0/counter"), {3}, {});
  // A fresh graph with the same seed replays the same masks.
  DropoutRig again;
  Tensor y_again = dropout(again.x, again.training, {.rate = 0.5, .seed = 77});
  EXPECT_EQ(again.run(y_again, true), y1);
  EXPECT_EQ(again.run(y_again, true), y2);
}

TEST(NnDropout, OtherRatesDtypesAndDynamicShape) {
  Graph g;
  Tensor training = g.constant(1.0, DType::bool_);
  std::vector<double> xs = random_values({40, 25}, 0.5, 2, 3);
  Tensor y = dropout(f64(g, xs, {40, 25}), training, {.rate = 0.2, .seed = 5});
  std::vector<double> got = values(run1(g, y));
  for (size_t i = 0; i < xs.size(); ++i) {
    const bool keep = philox::uniform_f32(5, i, 0) >= 0.2f;
    EXPECT_NEAR(got[i], keep ? xs[i] / 0.8 : 0.0, 1e-15 * std::fabs(xs[i])) << i;
  }
  // rate 0 keeps everything, unscaled.
  Tensor x16 = cast(f64(g, {1.5, -2, 0.25}, {3}), DType::f16);
  Tensor y0 = dropout(x16, training, {.rate = 0});
  EXPECT_EQ(y0.dtype(), DType::f16);
  testing::expect_equal(run1(g, y0), {1.5, -2, 0.25}, {3});
  // Dynamic batch: the mask has the fed shape.
  Tensor xd = g.placeholder({-1, 4}, DType::f32, "xd");
  Tensor yd = dropout(xd, training, {.rate = 0.75, .seed = 9});
  EXPECT_EQ(yd.type(), (TensorType{{-1, 4}, DType::f32}));
  TensorData out = run1(g, yd, {{xd, TensorData::full({500, 4}, DType::f32, 3.0)}});
  ASSERT_EQ(out.shape(), (Shape{500, 4}));
  int kept = 0;
  for (double v : values(out)) {
    ASSERT_TRUE(v == 0 || v == 12) << v;
    kept += v == 12;
  }
  EXPECT_NEAR(kept, 500, 3 * std::sqrt(2000 * 0.25 * 0.75));
}

TEST(NnDropout, GradientIsTheScaledMask) {
  // In one run: d/dx sum(w * dropout(x)) = w / (1 - rate) where kept, 0 where dropped.
  Graph g;
  Tensor x = f64(g, random_values({200}, 1, 2, 8), {200});
  Tensor w = f64(g, random_values({200}, -1, 1, 9), {200});
  Tensor y = dropout(x, g.constant(1.0, DType::bool_), {.rate = 0.3, .seed = 4});
  Tensor dx = gradients(reduce_sum(w * y), {x})[0];
  std::vector<TensorData> out = testing::run_cpu(g, {y, dx, w});
  int kept = 0;
  for (int64_t i = 0; i < 200; ++i) {
    const bool keep = out[0].element_as_double(i) != 0;
    kept += keep;
    EXPECT_NEAR(out[1].element_as_double(i), keep ? out[2].element_as_double(i) / 0.7 : 0.0, 1e-15);
  }
  EXPECT_GT(kept, 100);
  EXPECT_LT(kept, 180);
}

// Inference is the identity (a training run would draw a new mask at each evaluation).
TG_GRAD_CASE({.name = "nn_dropout_inference", .op = "dropout", .input_shapes = {{2, 3}},
              .fn = [](auto& in) {
                return dropout(in[0], Graph(in[0].graph_impl()).constant(0.0, DType::bool_));
              }});

TEST(NnDropout, Errors) {
  Graph g, other;
  Tensor x = g.constant(TensorData::zeros({4}));
  Tensor t = g.constant(1.0, DType::bool_);
  EXPECT_TG_ERROR(dropout(x, t, {.rate = 1}), ErrorCode::invalid_argument, "[dropout] rate = 1");
  EXPECT_TG_ERROR(dropout(x, t, {.rate = -0.1}), ErrorCode::invalid_argument, "[dropout] rate");
  EXPECT_TG_ERROR(dropout(x, t, {.rate = kNan}), ErrorCode::invalid_argument, "[dropout] rate");
  EXPECT_TG_ERROR(dropout(g.constant(TensorData::zeros({4}, DType::i32)), t),
                  ErrorCode::dtype_mismatch, "[dropout]");
  EXPECT_TG_ERROR(dropout(x, g.constant(TensorData::scalar<int64_t>(1))),
                  ErrorCode::invalid_argument, "[dropout] is_training must be a bool scalar");
  EXPECT_TG_ERROR(dropout(x, other.constant(1.0, DType::bool_)), ErrorCode::invalid_argument,
                  "[dropout] is_training");
  EXPECT_TG_ERROR(dropout(Tensor(), t), ErrorCode::invalid_argument, "[dropout]");
  // Nothing was created by the failed calls.
  EXPECT_EQ(g.impl()->variables()->find("dropout_0/counter"), -1);
}

}  // namespace
}  // namespace tg
