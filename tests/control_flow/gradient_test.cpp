// Gradients through control flow: finite-difference cases for if_else (both predicate values),
// for_loop and bounded while_loop; an RNN for_loop against its unrolled graph; hand-computed
// gradients; zero trips; the error for unbounded while loops; no repeated side effects.
#include <cmath>

#include "autodiff/gradcheck.h"
#include "control_flow/test_device.h"
#include "test_util.h"

namespace tg {
namespace {

using testing::expect_close;
using testing::expect_equal;
using testing::run_on_test_device;

using Inputs = const std::vector<Tensor>&;

// f(x, y) = sum(x) < sum(y) ? x * sin(y) : exp(x) - y * y, elementwise on [2].
Tensor branchy(Inputs x) {
  return if_else(
      less(reduce_sum(x[0]), reduce_sum(x[1])), [&] { return std::vector{x[0] * sin(x[1])}; },
      [&] { return std::vector{exp(x[0]) - x[1] * x[1]}; })[0];
}
TG_GRAD_CASE({.name = "if_else/then",
              .op = "if_else",
              .input_shapes = {{2}, {2}},
              .fn = branchy,
              .values = {{0.5, -0.25}, {1.0, 0.75}}});
TG_GRAD_CASE({.name = "if_else/else",
              .op = "if_else",
              .input_shapes = {{2}, {2}},
              .fn = branchy,
              .values = {{2.0, 1.0}, {-1.0, 0.5}}});
// Several results, one of them an integer; the cotangent reaches a value captured by one branch.
TG_GRAD_CASE({.name = "if_else/several_results",
              .op = "if_else",
              .input_shapes = {{3}, {}},
              .fn =
                  [](Inputs x) {
                    std::vector<Tensor> r = if_else(
                        greater(x[1], x[1] * 0.0),
                        [&] {
                          return std::vector{x[0] * x[1], cast(x[0], DType::i32), tanh(x[0])};
                        },
                        [&] {
                          return std::vector{x[0], cast(x[0] * 2.0, DType::i32), x[0] * x[0]};
                        });
                    return r[0] + r[2] * 3.0;
                  },
              .values = {{0.3, -1.2, 0.8}, {1.5}}});

// A small RNN: h = tanh(h W + b * index).
TG_GRAD_CASE({.name = "for_loop/rnn",
              .op = "for_loop",
              .input_shapes = {{1, 3}, {3, 3}, {3}},
              .fn =
                  [](Inputs x) {
                    return for_loop(4, {x[0]}, [&](Tensor i, std::span<const Tensor> v) {
                      return std::vector{tanh(matmul(v[0], x[1]) + x[2] * cast(i, DType::f64))};
                    })[0];
                  },
              .low = -1,
              .high = 1});
// Two floating loop values and an integer one; the result is a non-final combination.
TG_GRAD_CASE(
    {.name = "for_loop/several_values",
     .op = "for_loop",
     .input_shapes = {{2}, {2}, {}},
     .fn =
         [](Inputs x) {
           Graph g(x[0].graph_impl());
           std::vector<Tensor> r = for_loop(
               3, {x[0], x[1] * 0.5, g.constant(TensorData::scalar<int32_t>(1))},
               [&](Tensor, std::span<const Tensor> v) {
                 Tensor k = cast(v[2], DType::f64);
                 return std::vector{v[0] * x[2] + sin(v[1]) * k, v[1] - v[0] * 0.25, v[2] * 2.0};
               });
           return r[0] * r[1];
         },
     .low = -1,
     .high = 1});
// Nested: a for_loop inside a for_loop inside an if_else.
TG_GRAD_CASE({.name = "for_loop/nested",
              .op = "for_loop",
              .input_shapes = {{2}, {2}},
              .fn =
                  [](Inputs x) {
                    Graph g(x[0].graph_impl());
                    return if_else(
                        greater(reduce_sum(x[1]), g.constant(-100.0, DType::f64)),
                        [&] {
                          return for_loop(2, {x[0]}, [&](Tensor, std::span<const Tensor> outer) {
                            return for_loop(3, {outer[0]},
                                            [&](Tensor j, std::span<const Tensor> inner) {
                                              return std::vector{sin(inner[0] * x[1]) +
                                                                 cast(j, DType::f64) * 0.1};
                                            });
                          });
                        },
                        [&] { return std::vector{x[0]}; })[0];
                  },
              .low = -1,
              .high = 1});

// while (count < limit) { a = (2a + sin a) / 2 * w + 0.1 }, before passing 2a + sin(a): the trip
// count is fixed by an integer count (or by max_iterations), so finite differences keep it.
Tensor counted_while(Inputs x, int64_t limit, int64_t max_iterations) {
  Graph g(x[0].graph_impl());
  Tensor lim = g.constant(TensorData::scalar<int32_t>(static_cast<int32_t>(limit)));
  return while_loop(
      {x[0], g.constant(TensorData::scalar<int32_t>(0))},
      [&](std::span<const Tensor> a) {
        return std::pair{less(a[1], lim), std::vector{a[0] * 2.0 + sin(a[0]), a[1]}};
      },
      [&](std::span<const Tensor> p) {
        return std::vector{p[0] * 0.5 * x[1] + 0.1, p[1] + 1.0};
      },
      {.max_iterations = max_iterations})[0];
}
TG_GRAD_CASE({.name = "while_loop/condition_ends",
              .op = "while_loop",
              .input_shapes = {{2}, {2}},
              .fn = [](Inputs x) { return counted_while(x, 3, 10); },
              .low = -1,
              .high = 1});
TG_GRAD_CASE({.name = "while_loop/max_iterations_end",
              .op = "while_loop",
              .input_shapes = {{2}, {2}},
              .fn = [](Inputs x) { return counted_while(x, 100, 2); },
              .low = -1,
              .high = 1});

// Hand-computed gradients of the seed-like branch for both predicate values:
// x < y: f = x * y * sin(x), df/dx = y sin x + x y cos x, df/dy = x sin x;
// else:  f = exp(x) - y^2,   df/dx = exp(x),              df/dy = -2y.
TEST(ControlFlowGradients, IfElseTakenBranchOnlyBothPredicates) {
  Graph g;
  Tensor x = g.placeholder({}, DType::f64, "x");
  Tensor y = g.placeholder({}, DType::f64, "y");
  Tensor f = if_else(
      less(x, y), [&] { return std::vector{x * y * sin(x)}; },
      [&] { return std::vector{exp(x) - y * y}; })[0];
  std::vector<Tensor> d = gradients(f, {x, y});
  EXPECT_EQ(d[0].op().kind_name(), "if_else");  // differentiated as an if_else
  for (auto [xv, yv] : {std::pair{0.7, 1.9}, std::pair{1.3, -0.4}}) {
    auto out = run_on_test_device(g, {f, d[0], d[1]},
                       {{x, TensorData::scalar<double>(xv)}, {y, TensorData::scalar<double>(yv)}});
    if (xv < yv) {
      expect_close(out[0], {xv * yv * std::sin(xv)}, {}, 1e-12, 1e-12);
      expect_close(out[1], {yv * std::sin(xv) + xv * yv * std::cos(xv)}, {}, 1e-12, 1e-12);
      expect_close(out[2], {xv * std::sin(xv)}, {}, 1e-12, 1e-12);
    } else {
      expect_close(out[0], {std::exp(xv) - yv * yv}, {}, 1e-12, 1e-12);
      expect_close(out[1], {std::exp(xv)}, {}, 1e-12, 1e-12);
      expect_close(out[2], {-2 * yv}, {}, 1e-12, 1e-12);
    }
  }
}

// h_{t+1} = tanh(W h_t + U x_t) for 16 steps (row vectors: h W^T + x U^T), as a for_loop and
// unrolled: values and gradients agree to 1e-6 in float64.
TEST(ControlFlowGradients, RnnForLoopMatchesTheUnrolledGraph) {
  constexpr int64_t kSteps = 16, kHidden = 4, kIn = 3;
  Graph g;
  Tensor w = g.placeholder({kHidden, kHidden}, DType::f64, "W");
  Tensor u = g.placeholder({kHidden, kIn}, DType::f64, "U");
  Tensor xs = g.placeholder({kSteps, kIn}, DType::f64, "xs");
  Tensor h0 = g.placeholder({1, kHidden}, DType::f64, "h0");
  auto cell = [&](Tensor h, Tensor x_t) {
    return tanh(matmul(h, w, {.transpose_b = true}) + matmul(x_t, u, {.transpose_b = true}));
  };
  Tensor looped = for_loop(kSteps, {h0}, [&](Tensor i, std::span<const Tensor> v) {
    return std::vector{cell(v[0], reshape(gather(xs, i), {1, kIn}))};
  })[0];
  Tensor unrolled = h0;
  for (int64_t t = 0; t < kSteps; ++t)
    unrolled = cell(unrolled, slice(xs, {.begin = {t}, .end = {t + 1}, .axes = {0}}));
  Tensor r = g.constant(TensorData::random_uniform({1, kHidden}, 0.5f, 1.5f, 3, DType::f64));
  std::vector<Tensor> gl = gradients(reduce_sum(looped * r), {w, u, xs, h0});
  std::vector<Tensor> gu = gradients(reduce_sum(unrolled * r), {w, u, xs, h0});
  Feeds feeds = {{w, TensorData::random_uniform({kHidden, kHidden}, -0.6f, 0.6f, 11, DType::f64)},
                 {u, TensorData::random_uniform({kHidden, kIn}, -0.8f, 0.8f, 12, DType::f64)},
                 {xs, TensorData::random_uniform({kSteps, kIn}, -1.f, 1.f, 13, DType::f64)},
                 {h0, TensorData::random_uniform({1, kHidden}, -1.f, 1.f, 14, DType::f64)}};
  std::vector<Tensor> targets = {looped, unrolled};
  targets.insert(targets.end(), gl.begin(), gl.end());
  targets.insert(targets.end(), gu.begin(), gu.end());
  std::vector<TensorData> out = run_on_test_device(g, targets, feeds);
  auto values = [](const TensorData& t) { return t.to_vector<double>(); };
  expect_close(out[0], values(out[1]), {1, kHidden}, 0, 1e-6);
  double largest = 0;
  for (size_t k = 0; k < 4; ++k) {
    expect_close(out[2 + k], values(out[6 + k]), out[6 + k].shape(), 0, 1e-6);
    for (double v : values(out[6 + k])) largest = std::max(largest, std::fabs(v));
  }
  EXPECT_GT(largest, 0.05);  // the gradients are not trivially zero
}

// for_loop(n, {x}, x * w): d/dx = w^n and d/dw = n x w^(n-1); n = 0 gives 1 and 0.
TEST(ControlFlowGradients, ForLoopHandComputedAndZeroTrips) {
  Graph g;
  Tensor n = g.placeholder({}, DType::i32, "n");
  Tensor x = g.placeholder({2}, DType::f64, "x");
  Tensor w = g.placeholder({2}, DType::f64, "w");
  Tensor f =
      for_loop(n, {x}, [&](Tensor, std::span<const Tensor> v) { return std::vector{v[0] * w}; })[0];
  std::vector<Tensor> d = gradients(f, {x, w});
  Feeds feeds = {{x, TensorData::from_vector<double>({1.5, -2}, {2})},
                 {w, TensorData::from_vector<double>({2, 0.5}, {2})}};
  feeds.emplace_back(n, TensorData::scalar<int32_t>(3));
  auto out = run_on_test_device(g, {f, d[0], d[1]}, feeds);
  expect_close(out[0], {12, -0.25}, {2}, 1e-12, 1e-12);
  expect_close(out[1], {8, 0.125}, {2}, 1e-12, 1e-12);
  expect_close(out[2], {3 * 1.5 * 4, 3 * -2 * 0.25}, {2}, 1e-12, 1e-12);
  feeds.back().second = TensorData::scalar<int32_t>(0);
  out = run_on_test_device(g, {f, d[0], d[1]}, feeds);
  expect_equal(out[0], {1.5, -2}, {2});
  expect_equal(out[1], {1, 1}, {2});
  expect_equal(out[2], {0, 0}, {2});
}


// Gradients through a loop whose body swaps slice views (rows of 256 bytes, f64 [2, 32]):
// [r0, r1] -> [r1 * w, r0]; after 3 trips [r1 w^2, r0 w], so with f = sum(result * c) (c = 1 on
// row 0, 3 on row 1) df/dr0 = 3 w, df/dr1 = w^2, df/dw = 2 r1 w + 3 r0; after 0 trips
// df/dr0 = 1, df/dr1 = 3, df/dw = 0.
TEST(ControlFlowGradients, ForLoopSwappingSliceViewsHandComputed) {
  constexpr int64_t kCols = 32;
  Graph g;
  Tensor n = g.placeholder({}, DType::i32, "n");
  Tensor x = g.placeholder({2, kCols}, DType::f64, "x");
  Tensor w = g.placeholder({1, kCols}, DType::f64, "w");
  auto rows = [](Tensor t, int64_t r0, int64_t r1) { return slice(t, {.begin = {r0}, .end = {r1}, .axes = {0}}); };
  Tensor f = for_loop(n, {x * 1.0}, [&](Tensor, std::span<const Tensor> v) {
    return std::vector{concat({rows(v[0], 1, 2) * w, rows(v[0], 0, 1)}, 0)};
  })[0];
  std::vector<double> cs(2 * kCols, 1.0);
  for (int64_t j = kCols; j < 2 * kCols; ++j) cs[static_cast<size_t>(j)] = 3.0;
  Tensor loss = reduce_sum(f * g.constant(TensorData::from_vector<double>(cs, {2, kCols})));
  std::vector<Tensor> d = gradients(loss, {x, w});
  std::vector<double> xs(2 * kCols), ws(kCols);
  for (size_t k = 0; k < xs.size(); ++k) xs[k] = 0.25 * static_cast<double>(k) - 3.0;
  for (size_t k = 0; k < ws.size(); ++k) ws[k] = 0.5 + 0.125 * static_cast<double>(k % 5);
  Feeds feeds = {{x, TensorData::from_vector<double>(xs, {2, kCols})},
                 {w, TensorData::from_vector<double>(ws, {1, kCols})},
                 {n, TensorData::scalar<int32_t>(3)}};
  auto out = run_on_test_device(g, {f, d[0], d[1]}, feeds);
  std::vector<double> want_f, want_dx(2 * kCols), want_dw;
  for (int64_t j = 0; j < kCols; ++j) {
    const auto c = static_cast<size_t>(j);
    const double r0 = xs[c], r1 = xs[kCols + c], wj = ws[c];
    want_dx[c] = 3 * wj;
    want_dx[kCols + c] = wj * wj;
    want_dw.push_back(2 * r1 * wj + 3 * r0);
  }
  for (int64_t j = 0; j < kCols; ++j) want_f.push_back(xs[static_cast<size_t>(kCols + j)] * ws[static_cast<size_t>(j)] * ws[static_cast<size_t>(j)]);
  for (int64_t j = 0; j < kCols; ++j) want_f.push_back(xs[static_cast<size_t>(j)] * ws[static_cast<size_t>(j)]);
  expect_close(out[0], want_f, {2, kCols}, 1e-12, 1e-12);
  expect_close(out[1], want_dx, {2, kCols}, 1e-12, 1e-12);
  expect_close(out[2], want_dw, {1, kCols}, 1e-12, 1e-12);
  feeds.back().second = TensorData::scalar<int32_t>(0);
  out = run_on_test_device(g, {f, d[0], d[1]}, feeds);
  expect_equal(out[0], xs, {2, kCols});
  expect_equal(out[1], cs, {2, kCols});
  expect_equal(out[2], std::vector<double>(kCols, 0.0), {1, kCols});
}

// while (x < 100) x *= w, bounded by max_iterations: from 1.5 with w = 2 it runs 7 times,
// x w^7 = 192, d/dx = w^7 = 128, d/dw = 7 x w^6 = 672; with max_iterations = 3 it stops at
// x w^3 = 12, d/dx = 8, d/dw = 3 x w^2 = 18.
TEST(ControlFlowGradients, BoundedWhileLoopHandComputed) {
  Graph g;
  Tensor x = g.placeholder({}, DType::f64, "x");
  Tensor w = g.placeholder({}, DType::f64, "w");
  auto loop = [&](int64_t max_iterations) {
    return while_loop(
        {x},
        [&](std::span<const Tensor> a) {
          return std::pair{less(a[0], g.constant(100.0, DType::f64)), std::vector{a[0]}};
        },
        [&](std::span<const Tensor> p) { return std::vector{p[0] * w}; },
        {.max_iterations = max_iterations})[0];
  };
  Tensor f10 = loop(10), f3 = loop(3);
  std::vector<Tensor> d10 = gradients(f10, {x, w}), d3 = gradients(f3, {x, w});
  auto out = run_on_test_device(g, {f10, d10[0], d10[1], f3, d3[0], d3[1]},
                     {{x, TensorData::scalar<double>(1.5)}, {w, TensorData::scalar<double>(2)}});
  expect_close(out[0], {192}, {}, 1e-12, 1e-12);
  expect_close(out[1], {128}, {}, 1e-12, 1e-12);
  expect_close(out[2], {672}, {}, 1e-12, 1e-12);
  expect_close(out[3], {12}, {}, 1e-12, 1e-12);
  expect_close(out[4], {8}, {}, 1e-12, 1e-12);
  expect_close(out[5], {18}, {}, 1e-12, 1e-12);
}

TEST(ControlFlowGradients, UnboundedWhileLoopIsNotDifferentiable) {
  Graph g;
  Tensor x = g.placeholder({}, DType::f64, "x");
  Tensor f = while_loop(
      {x},
      [&](std::span<const Tensor> a) {
        return std::pair{less(a[0], g.constant(10.0, DType::f64)), std::vector{a[0]}};
      },
      [&](std::span<const Tensor> p) { return std::vector{p[0] * 2.0}; })[0];
  EXPECT_TG_ERROR(gradients(f, {x}), ErrorCode::unsupported,
                  "[gradients] while_loop (node %" + std::to_string(f.node_id()) +
                      ") is not differentiable without a maximum iteration count");
  // Integer results need no gradient: a while loop on integers next to a differentiable path is
  // fine.
  Tensor steps = while_loop(
      {g.constant(TensorData::scalar<int32_t>(0))},
      [&](std::span<const Tensor> a) {
        return std::pair{less(a[0], g.constant(TensorData::scalar<int32_t>(3))), std::vector{a[0]}};
      },
      [&](std::span<const Tensor> p) { return std::vector{p[0] + 1.0}; })[0];
  Tensor y = x * cast(steps, DType::f64);
  Tensor dy = gradients(y, {x})[0];
  expect_equal(run_on_test_device(g, {dy}, {{x, TensorData::scalar<double>(5)}})[0], {3}, {});
}

// The backward pass replays the loop without its assignments: the variable is updated once per
// iteration of the forward loop only.
TEST(ControlFlowGradients, BackwardPassDoesNotRepeatAssignments) {
  Graph g;
  Tensor count = g.variable(TensorData::scalar<int32_t>(0), "count");
  Tensor x = g.placeholder({}, DType::f64, "x");
  Tensor f = for_loop(4, {x}, [&](Tensor, std::span<const Tensor> v) {
    assign_variable(count, read_variable(count) + 1.0);
    return std::vector{sin(v[0])};
  })[0];
  Tensor d = gradients(f, {x})[0];
  auto out = run_on_test_device(g, {f, d}, {{x, TensorData::scalar<double>(0.5)}});
  expect_equal(g.variable_value(count), {4}, {});
  double h = 0.5, dh = 1;
  for (int i = 0; i < 4; ++i) {
    dh *= std::cos(h);
    h = std::sin(h);
  }
  expect_close(out[0], {h}, {}, 1e-12, 1e-12);
  expect_close(out[1], {dh}, {}, 1e-12, 1e-12);
}

}  // namespace
}  // namespace tg
