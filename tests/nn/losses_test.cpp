// Composite activations (softmax, log_softmax) and losses: hand-computed values, reductions,
// the -inf corner cases, gradients, and build-time errors.
#include <cmath>
#include <limits>

#include "autodiff/gradcheck.h"
#include "test_util.h"
#include "tg/nn.h"

namespace tg {
namespace {

using testing::expect_close;
using testing::run1;

constexpr double kInf = std::numeric_limits<double>::infinity();

// softmax([1, 2, 3]) and log_softmax([1, 2, 3]), worked out by hand (e^k / (e + e^2 + e^3)).
constexpr double kSm0 = 0.090030573170, kSm1 = 0.244728471055, kSm2 = 0.665240955775;
constexpr double kLsm0 = -2.407605964444, kLsm1 = -1.407605964444, kLsm2 = -0.407605964444;
constexpr double kLog3 = 1.098612288668;

Tensor f64(Graph& g, std::vector<double> v, Shape s) {
  return g.constant(TensorData::from_vector<double>(v, s));
}

TEST(NnActivations, SoftmaxAndLogSoftmaxLastAxis) {
  Graph g;
  Tensor x = f64(g, {1, 2, 3, 1001, 1002, 1003}, {2, 3});  // the shift keeps large rows finite
  expect_close(run1(g, softmax(x)), {kSm0, kSm1, kSm2, kSm0, kSm1, kSm2}, {2, 3}, 1e-9, 1e-12);
  expect_close(run1(g, log_softmax(x)), {kLsm0, kLsm1, kLsm2, kLsm0, kLsm1, kLsm2}, {2, 3}, 1e-9,
               1e-12);
}

TEST(NnActivations, SoftmaxOtherAxisAndF32) {
  Graph g;
  Tensor x = g.constant(TensorData::from_vector<float>({1, 5, 2, 5, 3, 5}, {3, 2}));
  expect_close(run1(g, softmax(x, 0)), {kSm0, 1.0 / 3, kSm1, 1.0 / 3, kSm2, 1.0 / 3}, {3, 2}, 1e-5,
               1e-6);
  expect_close(run1(g, log_softmax(x, -2)), {kLsm0, -kLog3, kLsm1, -kLog3, kLsm2, -kLog3}, {3, 2},
               1e-5, 1e-6);
}

TEST(NnActivations, NegativeInfinityEntries) {
  Graph g;
  Tensor x = f64(g, {-kInf, 0, 0, -kInf, -kInf, -kInf}, {2, 3});
  // A -inf entry gets probability 0 / log-probability -inf; an all -inf row is undefined (NaN).
  const double nan = std::nan("");
  expect_close(run1(g, softmax(x)), {0, 0.5, 0.5, nan, nan, nan}, {2, 3}, 1e-12, 1e-12);
  expect_close(run1(g, log_softmax(x)), {-kInf, -std::log(2.0), -std::log(2.0), nan, nan, nan},
               {2, 3}, 1e-12, 1e-12);
}

TEST(NnActivations, LogSoftmaxGradient) {
  // d/dx sum(w * log_softmax(x)) = w - softmax(x) * sum(w).
  Graph g;
  Tensor x = f64(g, {1, 2, 3}, {3});
  Tensor w = f64(g, {1, 0, 2}, {3});
  Tensor dx = gradients(reduce_sum(mul(w, log_softmax(x))), {x})[0];
  expect_close(run1(g, dx), {1 - 3 * kSm0, -3 * kSm1, 2 - 3 * kSm2}, {3}, 1e-9, 1e-12);
}

struct SceFixture {
  Graph g;
  Tensor logits = f64(g, {1, 2, 3, 1, 1, 1}, {2, 3});
  Tensor index_labels = g.constant(TensorData::from_vector<int32_t>({2, 0}, {2}));
  Tensor onehot_labels = f64(g, {0, 0, 1, 1, 0, 0}, {2, 3});
};

TEST(NnSoftmaxCrossEntropy, IndexAndOneHotLabelsAgree) {
  SceFixture f;
  for (Tensor labels : {f.index_labels, f.onehot_labels}) {
    SCOPED_TRACE(labels.type().to_string());
    auto none = softmax_cross_entropy(f.logits, labels, {.reduction = LossReduction::none});
    expect_close(run1(f.g, none), {-kLsm2, kLog3}, {2}, 1e-9, 1e-12);
    auto sum = softmax_cross_entropy(f.logits, labels, {.reduction = LossReduction::sum});
    expect_close(run1(f.g, sum), {-kLsm2 + kLog3}, {}, 1e-9, 1e-12);
    expect_close(run1(f.g, softmax_cross_entropy(f.logits, labels)), {(-kLsm2 + kLog3) / 2}, {},
                 1e-9, 1e-12);
  }
}

TEST(NnSoftmaxCrossEntropy, SoftLabelsAndI64Labels) {
  Graph g;
  Tensor logits = f64(g, {1, 2, 3}, {1, 3});
  Tensor soft = f64(g, {0.25, 0, 0.75}, {1, 3});
  auto loss = softmax_cross_entropy(logits, soft, {.reduction = LossReduction::none});
  expect_close(run1(g, loss), {-(0.25 * kLsm0 + 0.75 * kLsm2)}, {1}, 1e-9, 1e-12);
  Tensor idx = g.constant(TensorData::from_vector<int64_t>({1}, {1}));
  expect_close(run1(g, softmax_cross_entropy(logits, idx)), {-kLsm1}, {}, 1e-9, 1e-12);
}

TEST(NnSoftmaxCrossEntropy, ClassAxisZero) {
  // The classes run down the columns: the same examples as SceFixture, transposed.
  Graph g;
  Tensor logits = f64(g, {1, 1, 2, 1, 3, 1}, {3, 2});
  Tensor idx = g.constant(TensorData::from_vector<int32_t>({2, 0}, {2}));
  Tensor onehot = f64(g, {0, 1, 0, 0, 1, 0}, {3, 2});
  for (Tensor labels : {idx, onehot}) {
    auto loss =
        softmax_cross_entropy(logits, labels, {.axis = 0, .reduction = LossReduction::none});
    expect_close(run1(g, loss), {-kLsm2, kLog3}, {2}, 1e-9, 1e-12);
  }
}

TEST(NnSoftmaxCrossEntropy, MinusInfinityLogitAtTheLabelGivesInfinityNotNan) {
  Graph g;
  Tensor logits = f64(g, {-kInf, 0, 1, -kInf, 0, 1}, {2, 3});
  Tensor idx = g.constant(TensorData::from_vector<int32_t>({0, 2}, {2}));
  Tensor onehot = f64(g, {1, 0, 0, 0, 0, 1}, {2, 3});
  // Row 2: -log(e / (1 + e)) = log(1 + e) - 1; its -inf logit (label 0 there) adds nothing.
  const double row2 = 0.313261687518;
  for (Tensor labels : {idx, onehot}) {
    SCOPED_TRACE(labels.type().to_string());
    auto none = softmax_cross_entropy(logits, labels, {.reduction = LossReduction::none});
    expect_close(run1(g, none), {kInf, row2}, {2}, 1e-9, 1e-12);
    expect_close(run1(g, softmax_cross_entropy(logits, labels)), {kInf}, {});
  }
}

TEST(NnSoftmaxCrossEntropy, GradientIsSoftmaxMinusOneHot) {
  SceFixture f;
  const std::vector<double> diff = {kSm0, kSm1, kSm2 - 1, 1.0 / 3 - 1, 1.0 / 3, 1.0 / 3};
  std::vector<double> half(diff.size());
  for (size_t i = 0; i < diff.size(); ++i) half[i] = diff[i] / 2;  // mean over a batch of 2
  for (Tensor labels : {f.index_labels, f.onehot_labels}) {
    SCOPED_TRACE(labels.type().to_string());
    Tensor mean_grad = gradients(softmax_cross_entropy(f.logits, labels), {f.logits})[0];
    expect_close(run1(f.g, mean_grad), half, {2, 3}, 1e-9, 1e-12);
    Tensor sum_grad = gradients(
        softmax_cross_entropy(f.logits, labels, {.reduction = LossReduction::sum}), {f.logits})[0];
    expect_close(run1(f.g, sum_grad), diff, {2, 3}, 1e-9, 1e-12);
  }
}

TEST(NnSoftmaxCrossEntropy, GradientStaysFiniteWithMinusInfinityLogits) {
  Graph g;
  Tensor logits = f64(g, {-kInf, 0, 1}, {1, 3});
  Tensor idx = g.constant(TensorData::from_vector<int32_t>({2}, {1}));
  Tensor onehot = f64(g, {0, 0, 1}, {1, 3});
  for (Tensor labels : {idx, onehot}) {
    Tensor grad = gradients(softmax_cross_entropy(logits, labels), {logits})[0];
    expect_close(run1(g, grad), {0, 0.268941421370, 0.731058578630 - 1}, {1, 3}, 1e-9, 1e-12);
  }
}

TEST(NnSoftmaxCrossEntropy, LabelOutOfRangeRaisesAtRunTime) {
  Graph g;
  Tensor logits = f64(g, {1, 2, 3}, {1, 3});
  Tensor idx = g.constant(TensorData::from_vector<int32_t>({3}, {1}));
  EXPECT_TG_ERROR(run1(g, softmax_cross_entropy(logits, idx)), ErrorCode::out_of_range, "");
  // A negative label does not count from the end (-1 would silently pick class 2): it raises,
  // shown as -1 - C.
  Tensor neg = g.constant(TensorData::from_vector<int32_t>({-1}, {1}));
  EXPECT_TG_ERROR(run1(g, softmax_cross_entropy(logits, neg)), ErrorCode::out_of_range, "-4");
  Tensor ok = g.constant(TensorData::from_vector<int32_t>({0}, {1}));
  expect_close(run1(g, softmax_cross_entropy(logits, ok)), {std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)) - 1},
               {}, 1e-12, 1e-12);
}

// With a dynamic class dim the shift uses C read at run time: -1 still raises (as -1 - C), it
// does not count from the end; the gradient of a valid label stays softmax - onehot.
TEST(NnSoftmaxCrossEntropy, NegativeLabelWithDynamicClassesRaises) {
  Graph g;
  Tensor logits = g.placeholder({-1, -1}, DType::f64, "logits");
  Tensor idx = g.placeholder({-1}, DType::i64, "labels");
  Tensor loss = softmax_cross_entropy(logits, idx, {.reduction = LossReduction::none});
  Tensor grad = gradients(reduce_sum(loss), {logits})[0];
  TensorData x = TensorData::from_vector<double>({1, 2, 3, 1, 1, 1}, {2, 3});
  auto labels = [](std::vector<int64_t> v) { return TensorData::from_vector<int64_t>(v, {2}); };
  EXPECT_TG_ERROR(run1(g, loss, {{logits, x}, {idx, labels({2, -1})}}), ErrorCode::out_of_range,
                  "-4");
  EXPECT_TG_ERROR(run1(g, loss, {{logits, x}, {idx, labels({-3, 0})}}), ErrorCode::out_of_range,
                  "-6");
  EXPECT_TG_ERROR(run1(g, loss, {{logits, x}, {idx, labels({3, 0})}}), ErrorCode::out_of_range, "");
  expect_close(run1(g, loss, {{logits, x}, {idx, labels({2, 0})}}), {-kLsm2, kLog3}, {2}, 1e-9,
               1e-12);
  expect_close(run1(g, grad, {{logits, x}, {idx, labels({2, 0})}}),
               {kSm0, kSm1, kSm2 - 1, 1.0 / 3 - 1, 1.0 / 3, 1.0 / 3}, {2, 3}, 1e-9, 1e-12);
}

TEST(NnSoftmaxCrossEntropy, DynamicBatch) {
  Graph g;
  Tensor logits = g.placeholder({-1, 3}, DType::f64, "logits");
  Tensor idx = g.placeholder({-1}, DType::i64, "labels");
  Tensor loss = softmax_cross_entropy(logits, idx, {.reduction = LossReduction::none});
  EXPECT_EQ(loss.shape(), Shape({-1}));
  auto out = run1(g, loss,
                  {{logits, TensorData::from_vector<double>({1, 2, 3, 1, 1, 1}, {2, 3})},
                   {idx, TensorData::from_vector<int64_t>({2, 0}, {2})}});
  expect_close(out, {-kLsm2, kLog3}, {2}, 1e-9, 1e-12);
}

TEST(NnSigmoidCrossEntropy, ValuesReductionsAndGradient) {
  Graph g;
  Tensor x = f64(g, {0, 2, -3, 100, -100}, {5});
  Tensor z = f64(g, {1, 0, 1, 1, 0}, {5});
  // max(x, 0) - x*z + log1p(exp(-|x|)), by hand; the large logits stay finite (~3.7e-44).
  const std::vector<double> expected = {0.69314718056, 2.12692801104, 3.04858735157,
                                        3.72007597602e-44, 3.72007597602e-44};
  expect_close(run1(g, sigmoid_cross_entropy(x, z, LossReduction::none)), expected, {5}, 1e-10, 0);
  double sum = expected[0] + expected[1] + expected[2];
  expect_close(run1(g, sigmoid_cross_entropy(x, z, LossReduction::sum)), {sum}, {}, 1e-10, 0);
  expect_close(run1(g, sigmoid_cross_entropy(x, z)), {sum / 5}, {}, 1e-10, 0);
  // d/dx = sigmoid(x) - z, exactly 0.5 - z at x = 0.
  Tensor dx = gradients(sigmoid_cross_entropy(x, z, LossReduction::sum), {x})[0];
  expect_close(run1(g, dx), {-0.5, 0.880797077978, -0.952574126822, 0, 3.72007597602e-44}, {5},
               1e-9, 1e-12);
}

TEST(NnMeanSquaredError, ValuesReductionsAndGradient) {
  Graph g;
  Tensor p = f64(g, {1, 2, 3}, {3});
  Tensor t = f64(g, {1, 0, 5}, {3});
  expect_close(run1(g, mean_squared_error(p, t, LossReduction::none)), {0, 4, 4}, {3});
  expect_close(run1(g, mean_squared_error(p, t, LossReduction::sum)), {8}, {});
  expect_close(run1(g, mean_squared_error(p, t)), {8.0 / 3}, {}, 1e-12, 1e-12);
  Tensor dp = gradients(mean_squared_error(p, t), {p})[0];
  expect_close(run1(g, dp), {0, 4.0 / 3, -4.0 / 3}, {3}, 1e-12, 1e-12);
}

// Finite-difference checks of the composites (float64 central differences vs tg::gradients).
TEST(NnGradCheck, ActivationsAndLosses) {
  using testing::GradCase;
  auto labels = [](const std::vector<Tensor>& x, std::vector<double> v, Shape s) {
    return Graph(x[0].graph_impl()).constant(TensorData::from_vector<double>(v, s));
  };
  auto indices = [](const std::vector<Tensor>& x, std::vector<int32_t> v, Shape s) {
    return Graph(x[0].graph_impl()).constant(TensorData::from_vector<int32_t>(v, s));
  };
  const std::vector<double> soft = {0.2, 0.3, 0.5, 0.0, 1.0, 0.0};
  const GradCase cases[] = {
      {.name = "softmax",
       .input_shapes = {{2, 3}},
       .fn = [](auto& x) { return mul(softmax(x[0]), x[0]); }},
      {.name = "log_softmax/axis0",
       .input_shapes = {{3, 2}},
       .fn = [](auto& x) { return square(log_softmax(x[0], 0)); }},
      {.name = "sce/soft",
       .input_shapes = {{2, 3}},
       .fn =
           [&](auto& x) {
             return softmax_cross_entropy(x[0], labels(x, soft, {2, 3}));
           }},
      {.name = "sce/index/axis0",
       .input_shapes = {{3, 2}},
       .fn =
           [&](auto& x) {
             return softmax_cross_entropy(x[0], indices(x, {1, 2}, {2}),
                                          {.axis = 0, .reduction = LossReduction::sum});
           }},
      {.name = "sigmoid_ce",
       .input_shapes = {{5}},
       .fn =
           [&](auto& x) {
             return sigmoid_cross_entropy(x[0], labels(x, {1, 0, 0.3, 1, 0}, {5}));
           },
       .values = {{-3, -0.5, 0, 0.5, 3}}},
      {.name = "mse",
       .input_shapes = {{2, 2}, {2, 2}},
       .fn = [](auto& x) { return mean_squared_error(x[0], x[1]); }},
  };
  for (const GradCase& c : cases) EXPECT_EQ(testing::check_gradient(c), "") << c.name;
}

TEST(NnActivations, Errors) {
  Graph g;
  Tensor i = g.constant(TensorData::from_vector<int32_t>({1, 2}, {2}));
  Tensor x = f64(g, {1, 2}, {2});
  EXPECT_TG_ERROR(softmax(i), ErrorCode::dtype_mismatch, "[softmax]");
  EXPECT_TG_ERROR(softmax(x, 1), ErrorCode::invalid_argument, "[softmax]");
  EXPECT_TG_ERROR(log_softmax(x, -2), ErrorCode::invalid_argument, "[log_softmax]");
  EXPECT_TG_ERROR(log_softmax(g.constant(1.0, DType::f64)), ErrorCode::invalid_argument,
                  "[log_softmax]");
  EXPECT_TG_ERROR(softmax(Tensor()), ErrorCode::invalid_argument, "[softmax]");
}

TEST(NnSoftmaxCrossEntropy, Errors) {
  SceFixture f;
  const std::string_view op = "[softmax_cross_entropy]";
  Tensor f32_labels = f.g.constant(TensorData::zeros({2, 3}, DType::f32));
  EXPECT_TG_ERROR(softmax_cross_entropy(f.logits, f32_labels), ErrorCode::dtype_mismatch, op);
  Tensor bool_labels = f.g.constant(TensorData::from_vector<bool>({true, false}, {2}));
  EXPECT_TG_ERROR(softmax_cross_entropy(f.logits, bool_labels), ErrorCode::dtype_mismatch, op);
  Tensor int_logits = f.g.constant(TensorData::zeros({2, 3}, DType::i32));
  EXPECT_TG_ERROR(softmax_cross_entropy(int_logits, f.index_labels), ErrorCode::dtype_mismatch, op);
  Tensor wrong_idx = f.g.constant(TensorData::from_vector<int32_t>({0, 1, 2}, {3}));
  EXPECT_TG_ERROR(softmax_cross_entropy(f.logits, wrong_idx), ErrorCode::shape_mismatch, op);
  Tensor wrong_onehot = f64(f.g, {1, 0, 0, 1}, {2, 2});
  EXPECT_TG_ERROR(softmax_cross_entropy(f.logits, wrong_onehot), ErrorCode::shape_mismatch, op);
  // Integer labels with the logits' shape: a likely mix-up of the two label forms.
  Tensor idx_full = f.g.constant(TensorData::zeros({2, 3}, DType::i64));
  EXPECT_TG_ERROR(softmax_cross_entropy(f.logits, idx_full), ErrorCode::shape_mismatch, op);
  EXPECT_TG_ERROR(softmax_cross_entropy(f.logits, f.index_labels, {.axis = 2}),
                  ErrorCode::invalid_argument, op);
  EXPECT_TG_ERROR(softmax_cross_entropy(f.g.constant(1.0, DType::f64), f.index_labels),
                  ErrorCode::invalid_argument, op);
  Graph other;
  Tensor foreign = other.constant(TensorData::from_vector<int32_t>({2, 0}, {2}));
  EXPECT_TG_ERROR(softmax_cross_entropy(f.logits, foreign), ErrorCode::invalid_argument, op);
}

TEST(NnElementwiseLosses, Errors) {
  Graph g;
  Tensor a = f64(g, {1, 2}, {2});
  Tensor b = f64(g, {1, 2, 3}, {3});
  Tensor c = g.constant(TensorData::from_vector<float>({1, 2}, {2}));
  Tensor i = g.constant(TensorData::from_vector<int32_t>({1, 2}, {2}));
  EXPECT_TG_ERROR(sigmoid_cross_entropy(a, b), ErrorCode::shape_mismatch,
                  "[sigmoid_cross_entropy]");
  EXPECT_TG_ERROR(sigmoid_cross_entropy(a, c), ErrorCode::dtype_mismatch,
                  "[sigmoid_cross_entropy]");
  EXPECT_TG_ERROR(mean_squared_error(a, b), ErrorCode::shape_mismatch, "[mean_squared_error]");
  EXPECT_TG_ERROR(mean_squared_error(i, i), ErrorCode::dtype_mismatch, "[mean_squared_error]");
  EXPECT_TG_ERROR(mean_squared_error(a, Tensor()), ErrorCode::invalid_argument,
                  "[mean_squared_error]");
}

}  // namespace
}  // namespace tg
