// Elementwise composite activations (relu, leaky_relu, elu, gelu, silu): hand-computed values,
// float64 references computed here, gradients (finite differences and the kinks by hand), errors.
#include <cmath>
#include <functional>
#include <limits>
#include <numbers>

#include "autodiff/gradcheck.h"
#include "test_util.h"
#include "tg/nn.h"

namespace tg {
namespace {

using testing::expect_close;
using testing::run1;

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor f64(Graph& g, std::vector<double> v, Shape s) {
  return g.constant(TensorData::from_vector<double>(v, s));
}

// Hand-computed values (written out; from the formulas in tg/nn.h):
//   expm1(-1) = -0.6321205588285577, 2 * expm1(-2) = -1.7293294335267746,
//   Phi(1) = 0.5 * (1 + erf(1/sqrt(2))) = 0.8413447460685429, Phi(2) = 0.9772498680518208,
//   sigmoid(1) = 0.7310585786300049.
TEST(NnElementwiseActivations, HandValues) {
  Graph g;
  Tensor x = f64(g, {-2, -0.5, 0, 0.5, 3, kNan}, {2, 3});
  expect_close(run1(g, relu(x)), {0, 0, 0, 0.5, 3, kNan}, {2, 3}, 0, 0);
  expect_close(run1(g, leaky_relu(x)), {-0.02, -0.005, 0, 0.5, 3, kNan}, {2, 3}, 1e-15, 0);
  expect_close(run1(g, leaky_relu(x, 0.2)), {-0.4, -0.1, 0, 0.5, 3, kNan}, {2, 3}, 1e-15, 0);

  Tensor e = f64(g, {-1, 0, 2, 1000, -kInf}, {5});
  expect_close(run1(g, elu(e)), {-0.6321205588285577, 0, 2, 1000, -1}, {5}, 1e-15, 0);
  expect_close(run1(g, elu(f64(g, {-2}, {1}), 2.0)), {-1.7293294335267746}, {1}, 1e-15, 0);

  Tensor v = f64(g, {-3, -1, -0.5, 0, 0.5, 1, 2}, {7});
  expect_close(run1(g, gelu(v)),
               {-0.00404969409489031, -0.15865525393145707, -0.15426876936299344, 0,
                0.34573123063700656, 0.8413447460685429, 1.9544997361036416},
               {7}, 1e-14, 1e-16);
  // tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), e.g. 0.8411919906082768 at 1.
  expect_close(run1(g, gelu(v, true)),
               {-0.0036373920817729943, -0.15880800939172324, -0.15428599017485606, 0,
                0.34571400982514394, 0.8411919906082768, 1.954597694087775},
               {7}, 1e-14, 1e-16);
  Tensor s = f64(g, {-2, -0.5, 0, 1, 3}, {5});
  expect_close(run1(g, silu(s)),
               {-0.2384058440442351, -0.1887703343990727, 0, 0.7310585786300049,
                2.8577223804672998},
               {5}, 1e-14, 1e-16);
}

// Float64 references for every activation, computed with <cmath> here.
struct Reference {
  const char* name;
  std::function<Tensor(Tensor)> build;
  std::function<double(double)> f;
};
std::vector<Reference> references() {
  const double c = std::sqrt(2.0 / std::numbers::pi);
  return {
      {"relu", [](Tensor x) { return relu(x); }, [](double x) { return x > 0 ? x : 0.0; }},
      {"leaky_relu", [](Tensor x) { return leaky_relu(x, 0.3); },
       [](double x) { return x > 0 ? x : 0.3 * x; }},
      {"elu", [](Tensor x) { return elu(x, 1.5); },
       [](double x) { return x > 0 ? x : 1.5 * std::expm1(x); }},
      {"gelu", [](Tensor x) { return gelu(x); },
       [](double x) { return x * 0.5 * std::erfc(-x / std::sqrt(2.0)); }},
      {"gelu_tanh", [](Tensor x) { return gelu(x, true); },
       [c](double x) { return 0.5 * x * (1 + std::tanh(c * (x + 0.044715 * x * x * x))); }},
      {"silu", [](Tensor x) { return silu(x); }, [](double x) { return x / (1 + std::exp(-x)); }},
  };
}

TEST(NnElementwiseActivations, MatchFloat64ReferencesInF64AndF32) {
  std::vector<double> xs;
  for (int i = -60; i <= 60; ++i) xs.push_back(i * 0.125);  // [-7.5, 7.5]
  const Shape shape{static_cast<int64_t>(xs.size())};
  for (const Reference& r : references()) {
    SCOPED_TRACE(r.name);
    std::vector<double> want;
    for (double x : xs) want.push_back(r.f(x));
    Graph g;
    expect_close(run1(g, r.build(f64(g, xs, shape))), want, shape, 1e-13, 1e-15);
    std::vector<float> xf(xs.begin(), xs.end());
    Tensor y32 = r.build(g.constant(TensorData::from_vector<float>(xf, shape)));
    EXPECT_EQ(y32.dtype(), DType::f32);
    expect_close(run1(g, y32), want, shape, 1e-5, 1e-6);
    // f16 (inputs k/8 are exact; 11-bit significand, computed in float per op).
    Tensor y16 = r.build(cast(g.constant(TensorData::from_vector<float>(xf, shape)), DType::f16));
    EXPECT_EQ(y16.dtype(), DType::f16);
    expect_close(run1(g, y16), want, shape, 4e-3, 4e-3);
  }
}

TEST(NnElementwiseActivations, GradientsAtKinksAndExtremes) {
  // relu'(0) = 0 (PyTorch), leaky_relu'(0) = alpha, elu'(0) = alpha; elu stays finite (1) for
  // x = 1000, where the unselected branch's exp overflows.
  Graph g;
  Tensor x = f64(g, {0, 1000, -1}, {3});
  auto grad = [&](Tensor y) { return run1(g, gradients(reduce_sum(y), {x})[0]); };
  expect_close(grad(relu(x)), {0, 1, 0}, {3}, 0, 0);
  expect_close(grad(leaky_relu(x, 0.25)), {0.25, 1, 0.25}, {3}, 0, 0);
  expect_close(grad(elu(x, 2)), {2, 1, 2 * std::exp(-1.0)}, {3}, 1e-15, 0);
  // gelu'(0) = 1/2 in both forms; silu'(0) = 1/2.
  Tensor z = f64(g, {0}, {1});
  for (Tensor y : {gelu(z), gelu(z, true), silu(z)}) {
    expect_close(run1(g, gradients(reduce_sum(y), {z})[0]), {0.5}, {1}, 1e-15, 0);
  }
}

TEST(NnElementwiseActivations, DynamicShapes) {
  Graph g;
  Tensor x = g.placeholder({-1, 2}, DType::f32, "x");
  Tensor y = add(relu(x), silu(x));
  EXPECT_EQ(y.shape(), (Shape{-1, 2}));
  expect_close(run1(g, y, {{x, TensorData::from_vector<float>({1, -2}, {1, 2})}}),
               {1.7310585786300049, -0.2384058440442351}, {1, 2}, 1e-6, 1e-7);
}

// Gradients by central differences (inputs away from the kinks at 0).
const std::vector<double> kAwayFromZero = {-1.7, -0.9, -0.2, 0.3, 1.1, 2.4};
TG_GRAD_CASE({.name = "nn_relu", .op = "relu", .input_shapes = {{2, 3}},
              .fn = [](auto& x) { return relu(x[0]); }, .values = {kAwayFromZero}});
TG_GRAD_CASE({.name = "nn_leaky_relu", .op = "leaky_relu", .input_shapes = {{2, 3}},
              .fn = [](auto& x) { return leaky_relu(x[0], 0.1); }, .values = {kAwayFromZero}});
TG_GRAD_CASE({.name = "nn_elu", .op = "elu", .input_shapes = {{2, 3}},
              .fn = [](auto& x) { return elu(x[0], 1.3); }, .values = {kAwayFromZero}});
TG_GRAD_CASE({.name = "nn_gelu", .op = "gelu", .input_shapes = {{2, 4}},
              .fn = [](auto& x) { return gelu(x[0]); }, .low = -3, .high = 3});
TG_GRAD_CASE({.name = "nn_gelu_tanh", .op = "gelu", .input_shapes = {{2, 4}},
              .fn = [](auto& x) { return gelu(x[0], true); }, .low = -3, .high = 3});
TG_GRAD_CASE({.name = "nn_silu", .op = "silu", .input_shapes = {{2, 4}},
              .fn = [](auto& x) { return silu(x[0]); }, .low = -4, .high = 4});

TEST(NnElementwiseActivations, Errors) {
  Graph g;
  Tensor i = g.constant(TensorData::from_vector<int32_t>({1, 2}, {2}));
  Tensor x = g.constant(TensorData::from_vector<float>({1, 2}, {2}));
  EXPECT_TG_ERROR(relu(i), ErrorCode::dtype_mismatch, "[relu]");
  EXPECT_TG_ERROR(leaky_relu(i), ErrorCode::dtype_mismatch, "[leaky_relu]");
  EXPECT_TG_ERROR(elu(i), ErrorCode::dtype_mismatch, "[elu]");
  EXPECT_TG_ERROR(gelu(i), ErrorCode::dtype_mismatch, "[gelu]");
  EXPECT_TG_ERROR(gelu(i, true), ErrorCode::dtype_mismatch, "[gelu]");
  EXPECT_TG_ERROR(silu(g.constant(TensorData::scalar<bool>(true))), ErrorCode::dtype_mismatch,
                  "[silu]");
  EXPECT_TG_ERROR(relu(Tensor()), ErrorCode::invalid_argument, "[relu]");
  EXPECT_TG_ERROR(leaky_relu(x, kNan), ErrorCode::invalid_argument, "[leaky_relu] alpha");
  EXPECT_TG_ERROR(elu(x, kInf), ErrorCode::invalid_argument, "[elu] alpha");
}

}  // namespace
}  // namespace tg
