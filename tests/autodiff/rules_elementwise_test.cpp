// Gradients of the elementwise families (unary, binary, ternary, cast): finite-difference checks
// of every differentiable op (TG_GRAD_CASE, run by GradCheck) and hand-computed gradient values,
// broadcasting, kinks and ties, and the errors of gradients()/vjp(); stop_gradient's value and
// error tests.
#include <cmath>
#include <limits>

#include "autodiff/gradcheck.h"
#include "test_util.h"

namespace tg {
namespace {

using testing::expect_close;
using testing::expect_equal;
using testing::run1;
using testing::run_cpu;
using Xs = std::vector<Tensor>;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// A 0-d f64 constant in the graph of `like`.
Tensor f64_scalar(const Tensor& like, double v) {
  Graph g(like.graph_impl());
  return g.constant(v, DType::f64);
}

// ---------------------------------------------------------------------------------------------
// Unary: finite-difference checks. Ranges keep away from poles, branch cuts and kinks.
TG_GRAD_CASE({.name = "neg", .op = "neg", .input_shapes = {{2, 3}},
              .fn = [](const Xs& x) { return neg(x[0]); }});
TG_GRAD_CASE({.name = "abs", .op = "abs", .input_shapes = {{2, 3}},
              .fn = [](const Xs& x) { return abs(x[0]); },
              .values = {{-1.5, -0.3, 0.2, 1.7, -2.0, 0.9}}});
TG_GRAD_CASE({.name = "sign", .op = "sign", .input_shapes = {{2, 2}},
              .fn = [](const Xs& x) { return sign(x[0]) * x[0]; },
              .values = {{-1.5, -0.3, 0.2, 1.7}}});
TG_GRAD_CASE({.name = "exp", .op = "exp", .input_shapes = {{2, 3}},
              .fn = [](const Xs& x) { return exp(x[0]); }});
TG_GRAD_CASE({.name = "log", .op = "log", .input_shapes = {{2, 3}},
              .fn = [](const Xs& x) { return log(x[0]); }, .low = 0.2, .high = 3});
TG_GRAD_CASE({.name = "log1p", .op = "log1p", .input_shapes = {{2, 3}},
              .fn = [](const Xs& x) { return log1p(x[0]); }, .low = -0.7, .high = 2});
TG_GRAD_CASE({.name = "expm1", .op = "expm1", .input_shapes = {{2, 3}},
              .fn = [](const Xs& x) { return expm1(x[0]); }});
TG_GRAD_CASE({.name = "sqrt", .op = "sqrt", .input_shapes = {{2, 3}},
              .fn = [](const Xs& x) { return sqrt(x[0]); }, .low = 0.2, .high = 3});
TG_GRAD_CASE({.name = "rsqrt", .op = "rsqrt", .input_shapes = {{2, 3}},
              .fn = [](const Xs& x) { return rsqrt(x[0]); }, .low = 0.3, .high = 3});
TG_GRAD_CASE({.name = "reciprocal/positive", .op = "reciprocal", .input_shapes = {{2, 3}},
              .fn = [](const Xs& x) { return reciprocal(x[0]); }, .low = 0.3, .high = 3});
TG_GRAD_CASE({.name = "reciprocal/negative", .op = "reciprocal", .input_shapes = {{3}},
              .fn = [](const Xs& x) { return reciprocal(x[0]); }, .low = -3, .high = -0.3});
TG_GRAD_CASE({.name = "square", .op = "square", .input_shapes = {{2, 3}},
              .fn = [](const Xs& x) { return square(x[0]); }});
TG_GRAD_CASE({.name = "sin", .op = "sin", .input_shapes = {{2, 3}},
              .fn = [](const Xs& x) { return sin(x[0]); }, .low = -4, .high = 4});
TG_GRAD_CASE({.name = "cos", .op = "cos", .input_shapes = {{2, 3}},
              .fn = [](const Xs& x) { return cos(x[0]); }, .low = -4, .high = 4});
TG_GRAD_CASE({.name = "tan", .op = "tan", .input_shapes = {{2, 3}},
              .fn = [](const Xs& x) { return tan(x[0]); }, .low = -1.2, .high = 1.2});
TG_GRAD_CASE({.name = "tanh", .op = "tanh", .input_shapes = {{2, 3}},
              .fn = [](const Xs& x) { return tanh(x[0]); }, .low = -3, .high = 3});
TG_GRAD_CASE({.name = "sigmoid", .op = "sigmoid", .input_shapes = {{2, 3}},
              .fn = [](const Xs& x) { return sigmoid(x[0]); }, .low = -5, .high = 5});
TG_GRAD_CASE({.name = "erf", .op = "erf", .input_shapes = {{2, 3}},
              .fn = [](const Xs& x) { return erf(x[0]); }});
// floor/ceil/round are piecewise constant: zero gradient away from the jumps (the product keeps
// the loss depending on x so that the check is not vacuous).
TG_GRAD_CASE({.name = "floor", .op = "floor", .input_shapes = {{2, 3}},
              .fn = [](const Xs& x) { return floor(x[0]) * x[0]; },
              .values = {{-1.7, -0.3, 0.4, 1.2, 2.6, 3.9}}});
TG_GRAD_CASE({.name = "ceil", .op = "ceil", .input_shapes = {{2, 3}},
              .fn = [](const Xs& x) { return ceil(x[0]) * x[0]; },
              .values = {{-1.7, -0.3, 0.4, 1.2, 2.6, 3.9}}});
TG_GRAD_CASE({.name = "round", .op = "round", .input_shapes = {{2, 3}},
              .fn = [](const Xs& x) { return round(x[0]) * x[0]; },
              .values = {{-1.7, -0.3, 0.4, 1.2, 2.6, 3.9}}});
TG_GRAD_CASE({.name = "tanh/chain", .op = "tanh", .input_shapes = {{4}},
              .fn = [](const Xs& x) { return tanh(exp(x[0]) * sin(x[0])) + sigmoid(square(x[0])); }});

// ---------------------------------------------------------------------------------------------
// Binary: same shapes and the broadcasting patterns [2,3]@[3], [2,1]@[1,3], []@[2,2].
#define TG_BINARY_GRAD_CASES(op_name, expr, lo, hi)                                              \
  TG_GRAD_CASE({.name = #op_name "/same", .op = #op_name, .input_shapes = {{2, 3}, {2, 3}},      \
                .fn = [](const Xs& x) { return expr; }, .low = lo, .high = hi});                 \
  TG_GRAD_CASE({.name = #op_name "/row", .op = #op_name, .input_shapes = {{2, 3}, {3}},          \
                .fn = [](const Xs& x) { return expr; }, .low = lo, .high = hi});                 \
  TG_GRAD_CASE({.name = #op_name "/outer", .op = #op_name, .input_shapes = {{2, 1}, {1, 3}},     \
                .fn = [](const Xs& x) { return expr; }, .low = lo, .high = hi});                 \
  TG_GRAD_CASE({.name = #op_name "/scalar_lhs", .op = #op_name, .input_shapes = {{}, {2, 2}},    \
                .fn = [](const Xs& x) { return expr; }, .low = lo, .high = hi});                 \
  TG_GRAD_CASE({.name = #op_name "/scalar_rhs", .op = #op_name, .input_shapes = {{2, 2}, {}},    \
                .fn = [](const Xs& x) { return expr; }, .low = lo, .high = hi})

TG_BINARY_GRAD_CASES(add, add(x[0], x[1]), -2, 2);
TG_BINARY_GRAD_CASES(sub, sub(x[0], x[1]), -2, 2);
TG_BINARY_GRAD_CASES(mul, mul(x[0], x[1]), -2, 2);
TG_BINARY_GRAD_CASES(div, div(x[0], x[1]), 0.5, 2);
TG_BINARY_GRAD_CASES(pow, pow(x[0], x[1]), 0.3, 2.5);
TG_BINARY_GRAD_CASES(maximum, maximum(x[0], x[1]), -2, 2);
TG_BINARY_GRAD_CASES(minimum, minimum(x[0], x[1]), -2, 2);
TG_BINARY_GRAD_CASES(atan2, atan2(x[0], x[1]), -2, 2);
#undef TG_BINARY_GRAD_CASES

TG_GRAD_CASE({.name = "div/negative_divisor", .op = "div", .input_shapes = {{2, 3}, {3}},
              .fn = [](const Xs& x) { return div(x[0], x[1]); },
              .values = {{}, {-1.5, 0.7, -0.4}}});
// A negative base with integer exponents (only d/da exists there).
TG_GRAD_CASE({.name = "pow/negative_base", .op = "pow", .input_shapes = {{4}, {4}},
              .fn = [](const Xs& x) { return pow(x[0], x[1]); },
              .values = {{-1.5, -0.5, -2.0, 0.7}, {2, 3, -1, 2}}, .wrt = {0}});
// A zero exponent (d/da taken as 0) and a zero base with a positive exponent (d/db taken as 0):
// the rule's zeros match the finite differences there.
TG_GRAD_CASE({.name = "pow/zero_exponent", .op = "pow", .input_shapes = {{3}, {3}},
              .fn = [](const Xs& x) { return pow(x[0], x[1]); },
              .values = {{0, 1.5, -2}, {0, 0, 0}}, .wrt = {0}});
TG_GRAD_CASE({.name = "pow/zero_base", .op = "pow", .input_shapes = {{3}, {3}},
              .fn = [](const Xs& x) { return pow(x[0], x[1]); },
              .values = {{0, 0, 1.5}, {2, 3.5, 0}}, .wrt = {1}});
TG_GRAD_CASE({.name = "mod/same", .op = "mod", .input_shapes = {{2, 3}, {2, 3}},
              .fn = [](const Xs& x) { return mod(x[0], x[1]); },
              .values = {{-3.7, 2.5, 5.1, -0.4, 7.3, -6.2}, {1.5, -2.0, 1.2, 0.9, -2.2, 2.5}}});
TG_GRAD_CASE({.name = "mod/row", .op = "mod", .input_shapes = {{2, 3}, {3}},
              .fn = [](const Xs& x) { return mod(x[0], x[1]); },
              .values = {{-3.7, 2.5, 5.1, -0.4, 7.3, -6.2}, {1.5, -2.0, 1.2}}});
TG_GRAD_CASE({.name = "mod/scalar_rhs", .op = "mod", .input_shapes = {{2, 2}, {}},
              .fn = [](const Xs& x) { return mod(x[0], x[1]); },
              .values = {{-3.7, 2.5, 5.1, -0.4}, {-1.3}}});
TG_GRAD_CASE({.name = "floor_mod/same", .op = "floor_mod", .input_shapes = {{2, 3}, {2, 3}},
              .fn = [](const Xs& x) { return floor_mod(x[0], x[1]); },
              .values = {{-3.7, 2.5, 5.1, -0.4, 7.3, -6.2}, {1.5, -2.0, 1.2, 0.9, -2.2, 2.5}}});
TG_GRAD_CASE({.name = "floor_mod/outer", .op = "floor_mod", .input_shapes = {{2, 1}, {1, 3}},
              .fn = [](const Xs& x) { return floor_mod(x[0], x[1]); },
              .values = {{-3.7, 5.1}, {1.5, -2.0, 1.2}}});
TG_GRAD_CASE({.name = "floor_mod/scalar_lhs", .op = "floor_mod", .input_shapes = {{}, {2, 2}},
              .fn = [](const Xs& x) { return floor_mod(x[0], x[1]); },
              .values = {{-3.7}, {1.5, -2.0, 1.2, 0.9}}});

// ---------------------------------------------------------------------------------------------
// Ternary.
TG_GRAD_CASE({.name = "select/same", .op = "select", .input_shapes = {{2, 3}, {2, 3}, {2, 3}},
              .fn = [](const Xs& x) { return select(greater(x[0], f64_scalar(x[0], 0)), x[1], x[2]); },
              .wrt = {1, 2}});
TG_GRAD_CASE({.name = "select/broadcast", .op = "select", .input_shapes = {{2, 1}, {3}, {}},
              .fn = [](const Xs& x) { return select(greater(x[0], f64_scalar(x[0], 0)), x[1], x[2]); },
              .values = {{-1, 1}, {}, {}}, .wrt = {1, 2}});
TG_GRAD_CASE({.name = "select/differentiable_condition_input", .op = "select", .input_shapes = {{2, 3}},
              .fn = [](const Xs& x) { return select(less(x[0], f64_scalar(x[0], 0.5)), square(x[0]), exp(x[0])); }});
TG_GRAD_CASE({.name = "clamp/scalar_bounds", .op = "clamp", .input_shapes = {{2, 3}, {}, {}},
              .fn = [](const Xs& x) { return clamp(x[0], x[1], x[2]); },
              .values = {{-1.9, -0.7, 0.1, 0.8, 1.6, -1.2}, {-1.0}, {1.0}}});
TG_GRAD_CASE({.name = "clamp/broadcast_bounds", .op = "clamp", .input_shapes = {{2, 3}, {2, 1}, {1, 3}},
              .fn = [](const Xs& x) { return clamp(x[0], x[1], x[2]); },
              .values = {{-1.9, -0.7, 0.1, 0.8, 1.6, -1.2}, {-1.0, 0.0}, {0.5, 1.0, 1.5}}});
TG_GRAD_CASE({.name = "clamp/low_above_high", .op = "clamp", .input_shapes = {{3}, {}, {}},
              .fn = [](const Xs& x) { return clamp(x[0], x[1], x[2]); },
              .values = {{-2.0, 0.7, 2.0}, {1.0}, {0.5}}});
TG_GRAD_CASE({.name = "clamp/x_only", .op = "clamp", .input_shapes = {{2, 3}},
              .fn = [](const Xs& x) { return clamp(x[0], f64_scalar(x[0], -0.5), f64_scalar(x[0], 0.5)); },
              .values = {{-1.9, -0.3, 0.1, 0.4, 1.6, -0.45}}});

// ---------------------------------------------------------------------------------------------
// Cast. The central difference of a square is exact, so the f32 round trip can use a wide step.
TG_GRAD_CASE({.name = "cast/f32_round_trip", .op = "cast", .input_shapes = {{2, 3}},
              .fn = [](const Xs& x) { return cast(square(cast(x[0], DType::f32)), DType::f64); },
              .eps = 1e-2, .rtol = 1e-4, .atol = 1e-4});
TG_GRAD_CASE({.name = "cast/same_dtype", .op = "cast", .input_shapes = {{3}},
              .fn = [](const Xs& x) { return sin(cast(x[0], DType::f64)); }});

// ---------------------------------------------------------------------------------------------
// Hand-computed gradients.

/// Runs gradients(y, xs) on the CPU.
std::vector<TensorData> grads(Graph& g, Tensor y, const std::vector<Tensor>& xs,
                              const Feeds& feeds = {}) {
  return run_cpu(g, gradients(y, xs), feeds);
}

Tensor f64s(Graph& g, std::vector<double> v, Shape shape) {
  return g.constant(TensorData::from_vector<double>(v, shape));
}

TEST(RulesElementwise, SumOfSquaresGivesTwoX) {
  Graph g;
  Tensor x = g.placeholder({3}, DType::f32, "x");
  Feeds feeds = {{x, TensorData::from_vector<float>({1.f, -2.f, 3.f}, {3})}};
  std::vector<TensorData> r = grads(g, reduce_sum(x * x), {x}, feeds);
  EXPECT_EQ(r[0].dtype(), DType::f32);
  expect_close(r[0], {2, -4, 6}, {3});
  // square gives the same.
  expect_close(grads(g, reduce_sum(square(x)), {x}, feeds)[0], {2, -4, 6}, {3});
}

TEST(RulesElementwise, ValueUsedTwiceAccumulates) {
  Graph g;
  Tensor x = f64s(g, {1, -2, 3}, {3});
  expect_close(grads(g, x * x + x, {x})[0], {3, -3, 7}, {3});
  // maximum(x, x) is a tie everywhere: half to each operand, 1 in total.
  expect_close(grads(g, maximum(x, x), {x})[0], {1, 1, 1}, {3});
}

TEST(RulesElementwise, StopGradientBlocks) {
  Graph g;
  Tensor x = f64s(g, {1, -2, 3}, {3});
  expect_close(grads(g, x * stop_gradient(x), {x})[0], {1, -2, 3}, {3});
  // Nothing flows through a stopped path: zeros.
  expect_close(grads(g, exp(stop_gradient(x)), {x})[0], {0, 0, 0}, {3});
}

TEST(RulesElementwise, UnusedXGetsZeros) {
  Graph g;
  Tensor a = f64s(g, {1, 2}, {2});
  Tensor x = g.placeholder({2, 3}, DType::f64, "x");
  Feeds feeds = {{x, TensorData::from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3})}};
  std::vector<TensorData> r = grads(g, reduce_sum(a * 2.0), {a, x}, feeds);
  expect_close(r[0], {2, 2}, {2});
  EXPECT_EQ(r[1].dtype(), DType::f64);
  expect_equal(r[1], {0, 0, 0, 0, 0, 0}, {2, 3});
}

TEST(RulesElementwise, GradientsWrtIntegerTensorIsRejected) {
  Graph g;
  Tensor i = g.placeholder({2}, DType::i32, "i");
  Tensor y = reduce_sum(cast(i, DType::f32));
  EXPECT_TG_ERROR(gradients(y, {i}), ErrorCode::dtype_mismatch, "[gradients]");
}

TEST(RulesElementwise, VjpWithWrongShapeCotangentIsRejected) {
  Graph g;
  Tensor x = g.placeholder({2, 3}, DType::f32, "x");
  Tensor y = x * 2.0;
  Tensor bad = g.constant(TensorData::zeros({3, 2}, DType::f32));
  EXPECT_TG_ERROR(vjp({y}, {x}, {bad}), ErrorCode::shape_mismatch, "[gradients]");
  Tensor ok = g.constant(TensorData::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}));
  Feeds feeds = {{x, TensorData::zeros({2, 3}, DType::f32)}};
  expect_close(run1(g, vjp({y}, {x}, {ok})[0], feeds), {2, 4, 6, 8, 10, 12}, {2, 3});
}

TEST(RulesElementwise, BinaryBroadcastingSumsBack) {
  Graph g;
  Tensor a = f64s(g, {1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = f64s(g, {10, 20, 30}, {3});
  std::vector<TensorData> r = grads(g, a * b, {a, b});
  expect_close(r[0], {10, 20, 30, 10, 20, 30}, {2, 3});
  expect_close(r[1], {5, 7, 9}, {3});

  Tensor col = f64s(g, {1, 2}, {2, 1});
  Tensor row = f64s(g, {1, 2, 3}, {1, 3});
  r = grads(g, col - row, {col, row});
  expect_close(r[0], {3, 3}, {2, 1});
  expect_close(r[1], {-2, -2, -2}, {1, 3});

  Tensor s = f64s(g, {2}, {});
  Tensor m = f64s(g, {1, 2, 3, 4}, {2, 2});
  r = grads(g, s * m, {s, m});
  expect_close(r[0], {10}, {});
  expect_close(r[1], {2, 2, 2, 2}, {2, 2});
  // d/dm (m / s) = 1/s; d/ds = -sum(m)/s^2.
  r = grads(g, m / s, {s, m});
  expect_close(r[0], {-2.5}, {});
  expect_close(r[1], {0.5, 0.5, 0.5, 0.5}, {2, 2});
}

TEST(RulesElementwise, KinksAndTies) {
  Graph g;
  Tensor x = f64s(g, {-2, 0, 3}, {3});
  expect_close(grads(g, abs(x), {x})[0], {-1, 0, 1}, {3});
  // sign, floor, ceil and round pass no gradient.
  Tensor v = f64s(g, {0.3, 1.7, -2.5}, {3});
  expect_equal(grads(g, sign(v) + floor(v) + ceil(v) + round(v), {v})[0], {0, 0, 0}, {3});

  Tensor a = f64s(g, {1, 2, 3}, {3});
  Tensor b = f64s(g, {3, 2, 1}, {3});
  std::vector<TensorData> r = grads(g, maximum(a, b), {a, b});
  expect_close(r[0], {0, 0.5, 1}, {3});
  expect_close(r[1], {1, 0.5, 0}, {3});
  r = grads(g, minimum(a, b), {a, b});
  expect_close(r[0], {1, 0.5, 0}, {3});
  expect_close(r[1], {0, 0.5, 1}, {3});
  // A NaN result passes no gradient.
  Tensor n = f64s(g, {kNaN, 1}, {2});
  Tensor m = f64s(g, {0, kNaN}, {2});
  r = grads(g, maximum(n, m), {n, m});
  expect_equal(r[0], {0, 0}, {2});
  expect_equal(r[1], {0, 0}, {2});
}

TEST(RulesElementwise, PowAtZeroAndNegativeBase) {
  Graph g;
  Tensor a = f64s(g, {0, 0, 2, -2, 0}, {5});
  Tensor b = f64s(g, {0, 2, 0, 3, -1}, {5});
  std::vector<TensorData> r = grads(g, pow(a, b), {a, b});
  // d/da = b a^(b-1), 0 where b == 0; d/db = log(a) a^b, 0 where a == 0, NaN where a < 0.
  expect_close(r[0], {0, 0, 0, 12, -kInf}, {5});
  expect_close(r[1], {0, 0, std::log(2.0), kNaN, 0}, {5});
}

TEST(RulesElementwise, ModAndFloorMod) {
  Graph g;
  Tensor a = f64s(g, {7, -7, 7.5}, {3});
  Tensor b = f64s(g, {3, 3, -2}, {3});
  std::vector<TensorData> r = grads(g, mod(a, b), {a, b});
  expect_close(r[0], {1, 1, 1}, {3});
  expect_close(r[1], {-2, 2, 3}, {3});  // -trunc(a/b): a/b = 2.33, -2.33, -3.75
  r = grads(g, floor_mod(a, b), {a, b});
  expect_close(r[0], {1, 1, 1}, {3});
  expect_close(r[1], {-2, 3, 4}, {3});  // -floor(a/b)
}

TEST(RulesElementwise, Atan2) {
  Graph g;
  Tensor y = f64s(g, {1, 0, -2}, {3});
  Tensor x = f64s(g, {1, 2, 0}, {3});
  std::vector<TensorData> r = grads(g, atan2(y, x), {y, x});
  expect_close(r[0], {0.5, 0.5, 0}, {3});   // x / (x^2 + y^2)
  expect_close(r[1], {-0.5, 0, 0.5}, {3});  // -y / (x^2 + y^2)
}

TEST(RulesElementwise, SelectRoutesByCondition) {
  Graph g;
  Tensor cond = g.constant(TensorData::from_vector<bool>({true, false, true}, {3}));
  Tensor a = f64s(g, {1, 2, 3}, {3});
  Tensor b = f64s(g, {5}, {});
  std::vector<TensorData> r = grads(g, select(cond, a * 2.0, b), {a, b});
  expect_close(r[0], {2, 0, 2}, {3});
  expect_close(r[1], {1}, {});
}

TEST(RulesElementwise, ClampRoutesToTheChosenOperand) {
  Graph g;
  Tensor x = f64s(g, {-2, -1, 0, 1, 2}, {5});
  Tensor low = f64s(g, {-1}, {});
  Tensor high = f64s(g, {1}, {});
  std::vector<TensorData> r = grads(g, clamp(x, low, high), {x, low, high});
  expect_close(r[0], {0, 1, 1, 1, 0}, {5});  // ties with a bound go to x
  expect_close(r[1], {1}, {});
  expect_close(r[2], {1}, {});
  // low > high: the result is high everywhere.
  Tensor x3 = f64s(g, {-2, 0, 2}, {3});
  Tensor low1 = f64s(g, {1}, {});
  Tensor high0 = f64s(g, {0}, {});
  r = grads(g, clamp(x3, low1, high0), {x3, low1, high0});
  expect_close(r[0], {0, 0, 0}, {3});
  expect_close(r[1], {0}, {});
  expect_close(r[2], {3}, {});
}

TEST(RulesElementwise, UnaryDerivativesInF32) {
  Graph g;
  Tensor x = g.constant(TensorData::from_vector<float>({0.f, 1.f, 4.f}, {3}));
  auto grad1 = [&](Tensor y) {
    TensorData d = grads(g, y, {x})[0];
    EXPECT_EQ(d.dtype(), DType::f32);
    return d;
  };
  const double e = std::exp(1.0);
  expect_close(grad1(neg(x)), {-1, -1, -1}, {3});
  expect_close(grad1(exp(x)), {1, e, std::exp(4.0)}, {3}, 1e-6);
  expect_close(grad1(log(x)), {kInf, 1, 0.25}, {3});
  expect_close(grad1(log1p(x)), {1, 0.5, 0.2}, {3});
  expect_close(grad1(expm1(x)), {1, e, std::exp(4.0)}, {3}, 1e-6);
  expect_close(grad1(sqrt(x)), {kInf, 0.5, 0.25}, {3});
  expect_close(grad1(rsqrt(x)), {-kInf, -0.5, -1.0 / 16}, {3});
  expect_close(grad1(reciprocal(x)), {-kInf, -1, -1.0 / 16}, {3});
  expect_close(grad1(sin(x)), {1, std::cos(1.0), std::cos(4.0)}, {3});
  expect_close(grad1(cos(x)), {0, -std::sin(1.0), -std::sin(4.0)}, {3});
  expect_close(grad1(tan(x)), {1, 1 / std::pow(std::cos(1.0), 2), 1 / std::pow(std::cos(4.0), 2)}, {3}, 1e-5);
  expect_close(grad1(tanh(x)), {1, 0.41997434161402614, 0.0013409506830258655}, {3}, 1e-4, 1e-6);
  expect_close(grad1(sigmoid(x)), {0.25, 0.19661193324148185, 0.017662706213291107}, {3}, 1e-5);
  const double two_over_sqrt_pi = 1.1283791670955126;
  expect_close(grad1(erf(x)), {two_over_sqrt_pi, two_over_sqrt_pi / e, two_over_sqrt_pi * std::exp(-16.0)},
               {3}, 1e-5, 1e-9);
}

TEST(RulesElementwise, HalfPrecisionGradientsKeepTheDtype) {
  Graph g;
  Tensor x = cast(g.constant(TensorData::from_vector<float>({4.f, 1.f}, {2})), DType::f16);
  TensorData d = grads(g, sqrt(x) * x, {x})[0];  // 1.5 sqrt(x)
  EXPECT_EQ(d.dtype(), DType::f16);
  expect_close(d, {3, 1.5}, {2}, 1e-3);
  Tensor b = cast(g.constant(TensorData::from_vector<float>({2.f, 0.5f}, {2})), DType::bf16);
  d = grads(g, maximum(b, b * 0.25), {b})[0];
  EXPECT_EQ(d.dtype(), DType::bf16);
  expect_close(d, {1, 1}, {2});
}

TEST(RulesElementwise, CastPassesTheCotangentBetweenFloatTypes) {
  Graph g;
  Tensor x = f64s(g, {1.5, -2}, {2});
  TensorData d = grads(g, cast(x, DType::f32) * 3.0, {x})[0];
  EXPECT_EQ(d.dtype(), DType::f64);
  expect_close(d, {3, 3}, {2});
  d = grads(g, cast(cast(x, DType::f16), DType::f32) * 2.0, {x})[0];
  expect_close(d, {2, 2}, {2});
  // Through an integer cast nothing flows.
  expect_equal(grads(g, cast(cast(x, DType::i32), DType::f64), {x})[0], {0, 0}, {2});
}

TEST(RulesElementwise, DynamicDims) {
  Graph g;
  Tensor x = g.placeholder({-1, 3}, DType::f32, "x");
  Tensor b = g.constant(TensorData::from_vector<float>({1.f, 2.f, 3.f}, {3}));
  std::vector<Tensor> d = gradients(square(x) * b + clamp(x, b * 0.0, b), {x, b});
  Feeds feeds = {{x, TensorData::from_vector<float>({1, -1, 2, 0.5f, 4, -3}, {2, 3})}};
  std::vector<TensorData> r = run_cpu(g, d, feeds);
  // d/dx = 2 x b + [0 <= x <= b]; d/db = x^2 summed over rows + [x > b] summed over rows.
  expect_close(r[0], {2 + 1, -4, 12 + 1, 1 + 1, 16, -18}, {2, 3});
  expect_close(r[1], {1.25, 17 + 1, 13}, {3});
}

// ---------------------------------------------------------------------------------------------
// stop_gradient (forward value and errors).
TG_COVERS(value, stop_gradient);
TEST(RulesElementwise, StopGradientIsTheIdentity) {
  Graph g;
  Tensor x = g.constant(TensorData::from_vector<float>({1.5f, -2.f, NAN, INFINITY}, {2, 2}));
  Tensor y = stop_gradient(x);
  EXPECT_EQ(y.type(), x.type());
  expect_equal(run1(g, y), {1.5, -2, kNaN, kInf}, {2, 2});
  Tensor i = g.constant(TensorData::from_vector<int32_t>({7, -3}, {2}));
  expect_equal(run1(g, stop_gradient(i)), {7, -3}, {2});
}

TG_COVERS(error, stop_gradient);
TEST(RulesElementwise, StopGradientOfEmptyTensorIsRejected) {
  EXPECT_TG_ERROR(stop_gradient(Tensor()), ErrorCode::invalid_argument, "[stop_gradient]");
}

}  // namespace
}  // namespace tg
