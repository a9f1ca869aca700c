// while_loop (MPSGraph's before/after form): the seed's doubling example with exact run counts,
// a condition false at once, passed values that differ from the loop values, max_iterations,
// numeric conditions, nesting with for_loop, shapes that grow, and build errors.
#include <atomic>
#include <stdexcept>

#include "tg/interrupt.h"
#include "ir/graph.h"
#include "control_flow/test_device.h"
#include "test_util.h"

namespace tg {
namespace {

using testing::expect_close;
using testing::expect_equal;
using testing::run1_on_test_device;
using testing::run_on_test_device;

// The seed's example, instrumented: variables count how often each block runs.
struct Doubling {
  Graph g;
  Tensor x = g.placeholder({}, DType::f32, "x");
  Tensor limit = g.constant(100.0, DType::f32);
  Tensor before_runs = g.variable(TensorData::scalar<int32_t>(0), "before_runs");
  Tensor after_runs = g.variable(TensorData::scalar<int32_t>(0), "after_runs");
  std::vector<Tensor> r = while_loop(
      {x, g.constant(TensorData::scalar<int32_t>(0))},
      [&](std::span<const Tensor> a) {
        assign_variable(before_runs, read_variable(before_runs) + 1.0);
        return std::pair{less(a[0], limit), std::vector{a[0], a[1]}};
      },
      [&](std::span<const Tensor> a) {
        assign_variable(after_runs, read_variable(after_runs) + 1.0);
        return std::vector{a[0] * 2.f, a[1] + 1.0};
      });
  std::vector<TensorData> run(float start) {
    return run_on_test_device(g, r, {{x, TensorData::scalar<float>(start)}});
  }
};

TG_COVERS(value, while_loop);
// 1.5 doubles while below 100: 1.5, 3, 6, 12, 24, 48, 96 pass the condition (7 body runs), 192
// ends the loop; `before` ran 8 times.
TEST(WhileLoop, DoublesUntilTheThreshold) {
  Doubling d;
  ASSERT_EQ(d.r.size(), 2u);
  EXPECT_EQ(d.r[0].type(), (TensorType{{}, DType::f32}));
  std::vector<TensorData> out = d.run(1.5f);
  expect_equal(out[0], {192}, {});
  expect_equal(out[1], {7}, {});
  expect_equal(d.g.variable_value(d.after_runs), {7}, {});
  expect_equal(d.g.variable_value(d.before_runs), {8}, {});
  // 99 -> 198 after one body run.
  out = d.run(99.f);
  expect_equal(out[0], {198}, {});
  expect_equal(out[1], {1}, {});
  expect_equal(d.g.variable_value(d.after_runs), {8}, {});
  expect_equal(d.g.variable_value(d.before_runs), {10}, {});
}

// A condition of shape [1, 1] (one element) works as a scalar: 1, 3, 9 pass, 27 ends the loop.
TEST(WhileLoop, OneElementConditionOfRankTwo) {
  Graph g;
  Tensor x = g.placeholder({}, DType::f32, "x");
  Tensor ten = g.constant(10.0, DType::f32);
  std::vector<Tensor> r = while_loop(
      {x}, [&](std::span<const Tensor> a) { return std::pair{reshape(less(a[0], ten), {1, 1}), std::vector{a[0]}}; },
      [&](std::span<const Tensor> a) { return std::vector{a[0] * 3.f}; });
  for (int rep = 0; rep < 3; ++rep) {
    expect_equal(run1_on_test_device(g, r[0], {{x, TensorData::scalar<float>(1)}}), {27}, {});
    expect_equal(run1_on_test_device(g, r[0], {{x, TensorData::scalar<float>(12)}}), {12}, {});
  }
}

// A condition false at once: `after` runs zero times and the initial values come back.
TEST(WhileLoop, ConditionFalseAtOnceRunsAfterZeroTimes) {
  Doubling d;
  std::vector<TensorData> out = d.run(500.f);
  expect_equal(out[0], {500}, {});
  expect_equal(out[1], {0}, {});
  expect_equal(d.g.variable_value(d.after_runs), {0}, {});
  expect_equal(d.g.variable_value(d.before_runs), {1}, {});
}

// What `before` passes is what the loop returns (here a transformed, differently typed value).
TEST(WhileLoop, PassedValuesAreTheResults) {
  Graph g;
  Tensor x = g.placeholder({2}, DType::i32, "x");
  std::vector<Tensor> r = while_loop(
      {x},
      [&](std::span<const Tensor> a) {
        return std::pair{less(reduce_sum(a[0]), g.constant(TensorData::scalar<int32_t>(20))),
                         std::vector{cast(a[0], DType::f64) * 0.5, a[0]}};
      },
      [&](std::span<const Tensor> p) { return std::vector{p[1] * 2.0}; });
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].type(), (TensorType{{2}, DType::f64}));
  // [1,2] -> [2,4] -> [4,8] -> [8,16] (sum 24 stops)
  auto out = run_on_test_device(g, r, {{x, TensorData::from_vector<int32_t>({1, 2}, {2})}});
  expect_equal(out[0], {4, 8}, {2});
  expect_equal(out[1], {8, 16}, {2});
  // Zero trips: before's passed values of the initial values.
  out = run_on_test_device(g, r, {{x, TensorData::from_vector<int32_t>({30, 1}, {2})}});
  expect_equal(out[0], {15, 0.5}, {2});
  expect_equal(out[1], {30, 1}, {2});
}

TEST(WhileLoop, MaxIterationsEndsTheLoop) {
  Graph g;
  Tensor x = g.placeholder({}, DType::f64, "x");
  auto before = [&](std::span<const Tensor> a) {
    return std::pair{greater(a[0], g.constant(0.0, DType::f64)), std::vector{a[0]}};
  };
  auto after = [&](std::span<const Tensor> p) { return std::vector{p[0] * 3.0}; };
  Tensor r5 = while_loop({x}, before, after, {.max_iterations = 5})[0];
  Tensor r0 = while_loop({x}, before, after, {.max_iterations = 0})[0];
  auto out = run_on_test_device(g, {r5, r0}, {{x, TensorData::scalar<double>(2)}});
  expect_equal(out[0], {486}, {});  // 2 * 3^5, although the condition still holds
  expect_equal(out[1], {2}, {});
  out = run_on_test_device(g, {r5, r0}, {{x, TensorData::scalar<double>(-1)}});  // false at once
  expect_equal(out[0], {-1}, {});
  EXPECT_NE(g.to_string().find("{carried=1, max_iterations=5}"), std::string::npos)
      << g.to_string();
}

// A numeric condition (non-zero is true): count down an integer.
TEST(WhileLoop, NumericCondition) {
  Graph g;
  Tensor n = g.placeholder({}, DType::i64, "n");
  std::vector<Tensor> r = while_loop(
      {n, g.constant(1.0, DType::f32)},
      [&](std::span<const Tensor> a) {
        return std::pair{a[0], std::vector{a[0], a[1]}};
      },
      [&](std::span<const Tensor> p) {
        return std::vector{p[0] - 1.0, p[1] * 2.0};
      });
  auto out = run_on_test_device(g, r, {{n, TensorData::scalar<int64_t>(5)}});
  expect_equal(out[0], {0}, {});
  expect_equal(out[1], {32}, {});
}

// Nested loops: a while loop inside a for_loop body (Collatz steps of 6, 7 and 8: 8 + 16 + 3).
TEST(WhileLoop, NestedInsideAForLoop) {
  Graph g;
  Tensor total = g.constant(TensorData::scalar<int32_t>(0));
  Tensor r = for_loop(3, {total}, [&](Tensor i, std::span<const Tensor> v) {
    Tensor start = i + 6.0;
    Tensor one = g.constant(TensorData::scalar<int32_t>(1));
    Tensor steps = while_loop(
        {start, g.constant(TensorData::scalar<int32_t>(0))},
        [&](std::span<const Tensor> a) {
          return std::pair{greater(a[0], one), std::vector{a[0], a[1]}};
        },
        [&](std::span<const Tensor> p) {
          Tensor two = g.constant(TensorData::scalar<int32_t>(2));
          Tensor even = equal(mod(p[0], two), g.constant(TensorData::scalar<int32_t>(0)));
          Tensor next = if_else(
              even, [&] { return std::vector{floor_div(p[0], two)}; },
              [&] { return std::vector{p[0] * 3.0 + 1.0}; })[0];
          return std::vector{next, p[1] + 1.0};
        })[1];
    return std::vector{v[0] + steps};
  })[0];
  expect_equal(run1_on_test_device(g, r), {27}, {});
}

// A loop value that grows: dims that change become dynamic.
TEST(WhileLoop, GrowingLoopValue) {
  Graph g;
  Tensor x = g.constant(TensorData::from_vector<float>({1}, {1}));
  Tensor r = while_loop(
      {x},
      [&](std::span<const Tensor> a) {
        return std::pair{less(reduce_sum(a[0]), g.constant(10.0, DType::f32)), std::vector{a[0]}};
      },
      [&](std::span<const Tensor> p) {
        return std::vector{concat({p[0], p[0]}, 0)};
      })[0];
  EXPECT_EQ(r.shape(), (Shape{-1}));
  TensorData out = run1_on_test_device(g, r);
  expect_equal(out, std::vector<double>(16, 1.0), {16});
}

TEST(WhileLoop, PrintsBothRegions) {
  Graph g;
  Tensor x = g.placeholder({}, DType::f32, "x");
  Tensor lim = g.placeholder({}, DType::f32, "lim");
  while_loop(
      {x},
      [&](std::span<const Tensor> a) {
        return std::pair{less(a[0], lim), std::vector{a[0]}};
      },
      [&](std::span<const Tensor> p) { return std::vector{p[0] + p[0]}; });
  EXPECT_EQ(g.to_string(),
            "%0 = placeholder() : f32[]  # x\n"
            "%1 = placeholder() : f32[]  # lim\n"
            "%2 = while_loop(%0, %1) {carried=1} : f32[]\n"
            "  region before(%0 <- %0, %1 <- %1) {\n"
            "    %0 = placeholder() : f32[]  # value0\n"
            "    %1 = placeholder() : f32[]  # capture0\n"
            "    %2 = less(%0, %1) : bool[]\n"
            "    yield(%2, %0)\n"
            "  }\n"
            "  region after(%0, %1 <- %1) {\n"
            "    %0 = placeholder() : f32[]  # passed0\n"
            "    %1 = placeholder() : f32[]  # capture0\n"
            "    %2 = add(%0, %0) : f32[]\n"
            "    yield(%2)\n"
            "  }\n");
  EXPECT_NO_THROW(ir::verify(*g.impl()));
}

TG_COVERS(error, while_loop);
TEST(WhileLoopErrors, BuildErrorsNameTheOpAndTheValues) {
  Graph g;
  Tensor x = g.placeholder({2}, DType::f32, "x");
  Tensor lim = g.constant(1.0, DType::f32);
  auto cond = [&](std::span<const Tensor> a) {
    return std::pair{less(reduce_sum(a[0]), lim), std::vector{a[0]}};
  };
  auto same = [&](std::span<const Tensor> p) { return std::vector{p[0]}; };
  int before = g.num_nodes();
  EXPECT_TG_ERROR(while_loop(
                      {x},
                      [&](std::span<const Tensor> a) {
                        return std::pair{less(a[0], a[0]), std::vector{a[0]}};
                      },
                      same),
                  ErrorCode::shape_mismatch,
                  "[while_loop] the condition must have exactly one element (shape [], [1], [1, 1]...), got bool[2]");
  EXPECT_TG_ERROR(while_loop(
                      {x},
                      [&](std::span<const Tensor> a) {
                        return std::pair{less(reduce_sum(a[0]), lim), std::vector<Tensor>{}};
                      },
                      same),
                  ErrorCode::invalid_argument, "[while_loop] before passes no values");
  EXPECT_TG_ERROR(while_loop({x}, cond,
                             [&](std::span<const Tensor> p) {
                               return std::vector{p[0], p[0]};
                             }),
                  ErrorCode::invalid_argument, "[while_loop] after returns 2 values, expected 1");
  EXPECT_TG_ERROR(
      while_loop({x}, cond,
                 [&](std::span<const Tensor> p) { return std::vector{cast(p[0], DType::i32)}; }),
      ErrorCode::dtype_mismatch,
      "[while_loop] value 0 is f32[2] entering the loop but i32[2] returned by after");
  EXPECT_TG_ERROR(while_loop({x}, cond, same, {.max_iterations = -2}), ErrorCode::invalid_argument,
                  "[while_loop] max_iterations -2 is negative");
  EXPECT_TG_ERROR(while_loop({}, cond, same), ErrorCode::invalid_argument,
                  "[while_loop] needs at least one initial value");
  EXPECT_TG_ERROR(while_loop({x}, nullptr, same), ErrorCode::invalid_argument,
                  "[while_loop] before is empty");
  EXPECT_TG_ERROR(while_loop({x}, cond, nullptr), ErrorCode::invalid_argument,
                  "[while_loop] after is empty");
  EXPECT_TG_ERROR(while_loop(
                      {x},
                      [&](std::span<const Tensor> a) {
                        return std::pair{Tensor(), std::vector{a[0]}};
                      },
                      same),
                  ErrorCode::invalid_argument,
                  "[while_loop] before returns an empty Tensor (result 0)");
  // `after` may only use what `before` passes, not tensors built inside `before`.
  Tensor inside;
  EXPECT_TG_ERROR(while_loop(
                      {x},
                      [&](std::span<const Tensor> a) {
                        inside = a[0] * 2.0;
                        return std::pair{less(reduce_sum(a[0]), lim), std::vector{a[0]}};
                      },
                      [&](std::span<const Tensor> p) { return std::vector{p[0] + inside}; }),
                  ErrorCode::invalid_argument, "built inside before");
  EXPECT_EQ(g.num_nodes(), before);
}


// Loop values that are slice views of other loop values (rows of 256 bytes): after returns
// (q' = [p + 1; q[0]], p' = q[1], k + 1) while k < trips, so p' views loop value q's storage
// (on CUDA the recorded loop must not speculate into q's fixed buffer: results_apart); and a
// condition that is a slice view of a loop value (c [65]: c[64], counting down). Values equal a
// host simulation.
TEST(WhileLoop, LoopValuesAndConditionsThatAreSliceViews) {
  constexpr int64_t kCols = 64;
  auto rows = [](Tensor t, int64_t r0, int64_t r1) { return slice(t, {.begin = {r0}, .end = {r1}, .axes = {0}}); };
  Graph g;
  Tensor x = g.placeholder({3, kCols}, DType::f32, "x");
  Tensor trips = g.placeholder({}, DType::i32, "trips");
  Tensor xx = x * 1.0f;
  std::vector<Tensor> r = while_loop(
      {rows(xx, 1, 3), rows(xx, 0, 1), g.constant(TensorData::scalar<int32_t>(0))},
      [&](std::span<const Tensor> a) { return std::pair{less(a[2], trips), std::vector{a[0], a[1], a[2]}}; },
      [&](std::span<const Tensor> a) {
        return std::vector{concat({a[1] + 1.0f, rows(a[0], 0, 1)}, 0), rows(a[0], 1, 2), a[2] + 1};
      });
  Tensor c0 = g.placeholder({kCols + 1}, DType::f32, "c0");
  std::vector<Tensor> down = while_loop(
      {c0 * 1.0f},
      [&](std::span<const Tensor> a) {
        return std::pair{slice(a[0], {.begin = {kCols}, .end = {kCols + 1}, .axes = {0}}), std::vector{a[0]}};
      },
      [&](std::span<const Tensor> a) { return std::vector{a[0] - 1.0f}; });
  std::vector<float> xs(3 * kCols), cs(kCols + 1);
  for (size_t k = 0; k < xs.size(); ++k) xs[k] = static_cast<float>(k) * 0.5f - 20.0f;
  for (size_t k = 0; k < cs.size(); ++k) cs[k] = static_cast<float>(k % 9);
  cs[kCols] = 6.0f;  // counts down 6 times
  for (int n : {0, 1, 2, 5}) {
    SCOPED_TRACE(n);
    std::vector<double> q(xs.begin() + kCols, xs.end()), p(xs.begin(), xs.begin() + kCols);
    for (int t = 0; t < n; ++t) {
      std::vector<double> nq;
      for (double e : p) nq.push_back(e + 1.0);
      nq.insert(nq.end(), q.begin(), q.begin() + kCols);
      p.assign(q.begin() + kCols, q.end());
      q = nq;
    }
    const auto out = run_on_test_device(g, {r[0], r[1], r[2], down[0]},
                                        {{x, TensorData::from_vector<float>(xs, {3, kCols})},
                                         {trips, TensorData::scalar<int32_t>(n)},
                                         {c0, TensorData::from_vector<float>(cs, {kCols + 1})}});
    expect_equal(out[0], q, {2, kCols});
    expect_equal(out[1], p, {1, kCols});
    expect_equal(out[2], {static_cast<double>(n)}, {});
    std::vector<double> want_down;
    for (float c : cs) want_down.push_back(c - 6.0);
    expect_equal(out[3], want_down, {kCols + 1});
  }
}

}  // namespace
}  // namespace tg

namespace tg {
namespace {

// set_interrupt_check: the hook is called once per iteration of a host-driven loop; its exception
// ends the run unchanged and nothing of the run is committed (the variables counting block runs
// keep their values). The loop never ends by itself (1 < 2 forever).
struct Interrupted : std::runtime_error {
  Interrupted() : std::runtime_error("interrupted") {}
};
std::atomic<int> g_checks{0};
void interrupt_after_5() {
  if (++g_checks >= 5) throw Interrupted();
}

TEST(WhileLoop, InterruptCheckEndsALoopThatNeverEnds) {
  Graph g;
  Tensor runs = g.variable(TensorData::scalar<int32_t>(7), "runs");
  std::vector<Tensor> r = while_loop(
      {g.constant(1.0, DType::f32)},
      [&](std::span<const Tensor> a) {
        assign_variable(runs, read_variable(runs) + 1.0);
        return std::pair{less(a[0], g.constant(2.0, DType::f32)), std::vector{a[0]}};
      },
      [&](std::span<const Tensor> a) { return std::vector{a[0] * 1.f}; });
  g_checks = 0;
  set_interrupt_check(&interrupt_after_5);
  EXPECT_THROW(g.run({}, r, {}, Device::cpu()), Interrupted);
  set_interrupt_check(nullptr);
  EXPECT_EQ(g_checks.load(), 5);
  EXPECT_EQ(g.variable_value(runs).to_vector<int32_t>(), std::vector<int32_t>{7});
  check_interrupt();  // no hook: a no-op
}

}  // namespace
}  // namespace tg
