// for_loop: the seed's example, the index, zero trips, nesting, variables assigned in the body,
// loop values changing shape, printing, and build/run errors.
#include <limits>

#include "ir/graph.h"
#include "control_flow/test_device.h"
#include "test_util.h"

namespace tg {
namespace {

using testing::expect_close;
using testing::expect_equal;
using testing::run1_on_test_device;
using testing::run_on_test_device;

TG_COVERS(value, for_loop);
// The seed's example: 4 iterations of values * m.
TEST(ForLoop, FourIterationsMultiplyingByATensor) {
  Graph g;
  Tensor n = g.placeholder({}, DType::i32, "n");
  Tensor init = g.placeholder({2}, DType::f32, "init");
  Tensor m = g.constant(TensorData::from_vector<float>({2, 3}, {2}), "m");
  std::vector<Tensor> r =
      for_loop(n, {init}, [&](Tensor, std::span<const Tensor> v) { return std::vector{v[0] * m}; });
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].type(), (TensorType{{2}, DType::f32}));
  TensorData iv = TensorData::from_vector<float>({1, -0.5f}, {2});
  // [1 * 2^4, -0.5 * 3^4]
  expect_equal(run1_on_test_device(g, r[0], {{n, TensorData::scalar<int32_t>(4)}, {init, iv}}), {16, -40.5}, {2});
  expect_equal(run1_on_test_device(g, r[0], {{n, TensorData::scalar<int32_t>(1)}, {init, iv}}), {2, -1.5}, {2});
}


// Loop values that are slice views (of a feed at the start, of the other loop value in the body:
// p' = q[1], q' = [p + 1; q[0]]), also when the loop runs zero times; the results and a kernel
// reading them equal a host simulation.
TEST(ForLoop, LoopValuesThatAreSliceViews) {
  constexpr int64_t kCols = 64;  // rows of 256 bytes
  Graph g;
  Tensor n = g.placeholder({}, DType::i32, "n");
  Tensor x = g.placeholder({3, kCols}, DType::f32, "x");
  auto rows = [](Tensor t, int64_t r0, int64_t r1) { return slice(t, {.begin = {r0}, .end = {r1}, .axes = {0}}); };
  Tensor xx = x * 1.0f;
  std::vector<Tensor> r = for_loop(n, {rows(xx, 0, 1), rows(xx, 1, 3)}, [&](Tensor, std::span<const Tensor> v) {
    return std::vector{rows(v[1], 1, 2), concat({v[0] + 1.0f, rows(v[1], 0, 1)}, 0)};
  });
  Tensor sum = r[0] + rows(r[1], 1, 2);
  std::vector<float> xs(3 * kCols);
  for (size_t k = 0; k < xs.size(); ++k) xs[k] = static_cast<float>(k) * 0.25f;
  for (int trips = 0; trips <= 4; ++trips) {
    std::vector<double> p(xs.begin(), xs.begin() + kCols), q(xs.begin() + kCols, xs.end());
    for (int t = 0; t < trips; ++t) {
      std::vector<double> np(q.begin() + kCols, q.end()), nq;
      for (double e : p) nq.push_back(e + 1.0);
      nq.insert(nq.end(), q.begin(), q.begin() + kCols);
      p = np;
      q = nq;
    }
    std::vector<double> want_sum;
    for (int64_t k = 0; k < kCols; ++k) want_sum.push_back(p[static_cast<size_t>(k)] + q[static_cast<size_t>(kCols + k)]);
    const auto out = run_on_test_device(g, {r[0], r[1], sum},
                                        {{n, TensorData::scalar<int32_t>(trips)},
                                         {x, TensorData::from_vector<float>(xs, {3, kCols})}});
    expect_equal(out[0], p, {1, kCols});
    expect_equal(out[1], q, {2, kCols});
    expect_equal(out[2], want_sum, {1, kCols});
  }
}

TEST(ForLoop, IndexIsAZeroBasedI32Scalar) {
  Graph g;
  Tensor acc = g.constant(TensorData::from_vector<int64_t>({0, 0}, {2}));
  std::vector<Tensor> r = for_loop(5, {acc}, [&](Tensor i, std::span<const Tensor> v) {
    EXPECT_EQ(i.type(), (TensorType{{}, DType::i32}));
    Tensor i64 = cast(i, DType::i64);
    return std::vector{v[0] + concat({reshape(i64, {1}), reshape(i64 * i64, {1})}, 0)};
  });
  // sum of 0..4 = 10, sum of squares = 0 + 1 + 4 + 9 + 16 = 30
  expect_equal(run1_on_test_device(g, r[0]), {10, 30}, {2});
}

// Zero (or negative) trips return the initial values, and the body never runs.
TEST(ForLoop, ZeroTripCountReturnsTheInitialValues) {
  Graph g;
  Tensor n = g.placeholder({}, DType::i64, "n");
  Tensor x = g.placeholder({3}, DType::f64, "x");
  Tensor count = g.variable(TensorData::scalar<int32_t>(0), "count");
  std::vector<Tensor> r = for_loop(n, {x, g.constant(TensorData::scalar<int32_t>(7))},
                                   [&](Tensor, std::span<const Tensor> v) {
                                     assign_variable(count, read_variable(count) + 1.0);
                                     return std::vector{v[0] * 10.0, v[1] - 1.0};
                                   });
  TensorData xv = TensorData::from_vector<double>({1.5, -2, 0.25}, {3});
  for (int64_t trips : {int64_t{0}, int64_t{-3}, std::numeric_limits<int64_t>::min()}) {
    auto out =
        g.run({{n, TensorData::scalar<int64_t>(trips)}, {x, xv}}, r, {r[0].op()}, Device::cpu());
    expect_equal(out[0], {1.5, -2, 0.25}, {3});
    expect_equal(out[1], {7}, {});
    expect_equal(g.variable_value(count), {0}, {});
  }
  auto out = g.run({{n, TensorData::scalar<int64_t>(2)}, {x, xv}}, r, {}, Device::cpu());
  expect_equal(out[0], {150, -200, 25}, {3});
  expect_equal(out[1], {5}, {});
  expect_equal(g.variable_value(count), {2}, {});
}

TEST(ForLoop, TripCountOfEveryIntegerDtype) {
  Graph g;
  Tensor x = g.constant(1.0, DType::f32);
  for (DType dt : {DType::i8, DType::u8, DType::i32, DType::i64}) {
    Tensor n = g.placeholder({}, dt, "n");
    Tensor r = for_loop(
        n, {x}, [&](Tensor, std::span<const Tensor> v) { return std::vector{v[0] * 3.0}; })[0];
    expect_equal(run1_on_test_device(g, r, {{n, TensorData::full({}, dt, 3)}}), {27}, {});
  }
}

// Nested loops: sum over i < 3, j < 4 of (i + 1) * (j + 1) = 6 * 10 = 60, the inner loop reading
// the outer index and the outer loop value.
TEST(ForLoop, NestedLoops) {
  Graph g;
  Tensor zero = g.constant(0.0, DType::f64);
  Tensor r = for_loop(3, {zero}, [&](Tensor i, std::span<const Tensor> outer) {
    Tensor fi = cast(i, DType::f64) + 1.0;
    return for_loop(4, {outer[0]}, [&](Tensor j, std::span<const Tensor> inner) {
      return std::vector{inner[0] + fi * (cast(j, DType::f64) + 1.0)};
    });
  })[0];
  EXPECT_EQ(g.num_nodes(), 3);  // zero, the trip count constant, the outer for_loop
  expect_equal(run1_on_test_device(g, r), {60}, {});
}

// The body assigns a variable each iteration; each iteration's read sees the previous one's
// assignment, and the state persists across runs.
TEST(ForLoop, BodyAssignsAVariable) {
  Graph g;
  Tensor total = g.variable(TensorData::scalar<int32_t>(0), "total");
  Tensor x = g.constant(1.0, DType::f32);
  Tensor r = for_loop(4, {x}, [&](Tensor i, std::span<const Tensor> v) {
    assign_variable(total, read_variable(total) + i);
    return std::vector{v[0] * 2.0};
  })[0];
  expect_equal(run1_on_test_device(g, r), {16}, {});
  expect_equal(g.variable_value(total), {6}, {});  // 0 + 0 + 1 + 2 + 3
  // Read after the loop (ordered by a control dependency).
  Tensor after =
      g.control_dependency({r.op()}, [&] { return std::vector{read_variable(total)}; })[0];
  expect_equal(run1_on_test_device(g, after), {12}, {});
  expect_equal(g.variable_value(total), {12}, {});
}

// An iteration that fails at run time fails the run, and every assignment made by earlier
// iterations is dropped.
TEST(ForLoop, FailedRunLeavesVariablesUnchanged) {
  Graph g;
  Tensor total = g.variable(TensorData::scalar<float>(100), "total");
  Tensor n = g.placeholder({}, DType::i32, "n");
  Tensor table = g.constant(TensorData::from_vector<float>({1, 2}, {2}));
  Tensor r = for_loop(n, {g.constant(0.0, DType::f32)}, [&](Tensor i, std::span<const Tensor> v) {
    assign_variable(total, read_variable(total) + 1.0);
    return std::vector{v[0] + gather(table, i)};
  })[0];
  expect_equal(run1_on_test_device(g, r, {{n, TensorData::scalar<int32_t>(2)}}), {3}, {});
  expect_equal(g.variable_value(total), {102}, {});
  EXPECT_TG_ERROR(run1_on_test_device(g, r, {{n, TensorData::scalar<int32_t>(3)}}), ErrorCode::out_of_range,
                  "[gather]");
  expect_equal(g.variable_value(total), {102}, {});
}

// A loop value whose shape changes between iterations gets a dynamic dim.
TEST(ForLoop, ValueChangingShapeBecomesDynamic) {
  Graph g;
  Tensor x = g.constant(TensorData::from_vector<float>({1, 2}, {1, 2}));
  Tensor n = g.placeholder({}, DType::i32, "n");
  int traced = 0;
  std::vector<Tensor> r =
      for_loop(n, {x, g.constant(0.0, DType::f32)}, [&](Tensor, std::span<const Tensor> v) {
        ++traced;
        return std::vector{concat({v[0], v[0] * 10.0}, 0), v[1] + reduce_sum(v[0])};
      });
  EXPECT_EQ(traced, 2);  // once with [1,2], again with the relaxed [?,2]
  EXPECT_EQ(r[0].shape(), (Shape{-1, 2}));
  auto out = run_on_test_device(g, r, {{n, TensorData::scalar<int32_t>(2)}});
  expect_equal(out[0], {1, 2, 10, 20, 10, 20, 100, 200}, {4, 2});
  expect_equal(out[1], {3 + 33}, {});
  auto none = run_on_test_device(g, r, {{n, TensorData::scalar<int32_t>(0)}});
  expect_equal(none[0], {1, 2}, {1, 2});
}

// Fibonacci with two integer loop values and an i64 trip count.
TEST(ForLoop, SeveralLoopValues) {
  Graph g;
  Tensor a = g.constant(TensorData::scalar<int64_t>(0));
  Tensor b = g.constant(TensorData::scalar<int64_t>(1));
  std::vector<Tensor> r = for_loop(g.constant(TensorData::scalar<int64_t>(10)), {a, b},
                                   [&](Tensor, std::span<const Tensor> v) {
                                     return std::vector{v[1], v[0] + v[1]};
                                   });
  auto out = run_on_test_device(g, r);
  expect_equal(out[0], {55}, {});
  expect_equal(out[1], {89}, {});
}

TEST(ForLoop, PrintsItsBody) {
  Graph g;
  Tensor x = g.placeholder({}, DType::f32, "x");
  Tensor m = g.placeholder({}, DType::f32, "m");
  for_loop(g.constant(TensorData::scalar<int32_t>(4)), {x},
           [&](Tensor, std::span<const Tensor> v) { return std::vector{v[0] * m}; });
  EXPECT_EQ(g.to_string(),
            "%0 = placeholder() : f32[]  # x\n"
            "%1 = placeholder() : f32[]  # m\n"
            "%2 = constant() {value=i32[] {4}} : i32[]\n"
            "%3 = for_loop(%2, %0, %1) {carried=1} : f32[]\n"
            "  region body(%0, %1 <- %0, %2 <- %1) {\n"
            "    %0 = placeholder() : i32[]  # index\n"
            "    %1 = placeholder() : f32[]  # value0\n"
            "    %2 = placeholder() : f32[]  # capture0\n"
            "    %3 = mul(%1, %2) : f32[]\n"
            "    yield(%3)\n"
            "  }\n");
  EXPECT_NO_THROW(ir::verify(*g.impl()));
  EXPECT_NE(to_dot(g).find("label=\"body\""), std::string::npos);
}

TG_COVERS(error, for_loop);
TEST(ForLoopErrors, TripCountMustBeAnIntegerScalar) {
  Graph g;
  Tensor x = g.placeholder({2}, DType::f32, "x");
  auto body = [&](Tensor, std::span<const Tensor> v) { return std::vector{v[0]}; };
  EXPECT_TG_ERROR(for_loop(g.constant(2.0, DType::f32), {x}, body), ErrorCode::dtype_mismatch,
                  "[for_loop] n_iterations must be an integer scalar, got f32[]");
  EXPECT_TG_ERROR(for_loop(g.constant(TensorData::from_vector<int32_t>({2}, {1})), {x}, body),
                  ErrorCode::shape_mismatch,
                  "[for_loop] n_iterations must be a scalar (rank 0), got i32[1]");
  EXPECT_TG_ERROR(for_loop(Tensor(), {x}, body), ErrorCode::invalid_argument,
                  "[for_loop] n_iterations is an empty");
  EXPECT_TG_ERROR(for_loop(int64_t{1} << 40, {x}, body), ErrorCode::out_of_range,
                  "[for_loop] n_iterations 1099511627776 does not fit the i32 index");
}

TEST(ForLoopErrors, LoopValuesMustKeepTheirDtypeAndRank) {
  Graph g;
  Tensor x = g.placeholder({2}, DType::f32, "x");
  Tensor n = g.constant(TensorData::scalar<int32_t>(3));
  int before = g.num_nodes();
  EXPECT_TG_ERROR(
      for_loop(n, {}, [&](Tensor, std::span<const Tensor>) { return std::vector<Tensor>{}; }),
      ErrorCode::invalid_argument, "[for_loop] needs at least one initial value");
  EXPECT_TG_ERROR(for_loop(n, {x},
                           [&](Tensor, std::span<const Tensor> v) {
                             return std::vector{v[0], v[0]};
                           }),
                  ErrorCode::invalid_argument, "[for_loop] the body returns 2 values, expected 1");
  EXPECT_TG_ERROR(for_loop(n, {x},
                           [&](Tensor, std::span<const Tensor> v) {
                             return std::vector{cast(v[0], DType::f64)};
                           }),
                  ErrorCode::dtype_mismatch,
                  "[for_loop] value 0 is f32[2] entering the loop but f64[2] returned by the body");
  EXPECT_TG_ERROR(for_loop(n, {x},
                           [&](Tensor, std::span<const Tensor> v) {
                             return std::vector{reshape(v[0], {2, 1})};
                           }),
                  ErrorCode::shape_mismatch,
                  "[for_loop] value 0 is f32[2] entering the loop but f32[2,1] returned by the "
                  "body (ranks must agree)");
  EXPECT_TG_ERROR(
      for_loop(n, {x}, [&](Tensor, std::span<const Tensor>) { return std::vector{Tensor()}; }),
      ErrorCode::invalid_argument, "[for_loop] the body returns an empty Tensor (result 0)");
  EXPECT_TG_ERROR(for_loop(n, {x, Tensor()},
                           [&](Tensor, std::span<const Tensor> v) { return std::vector{v[0]}; }),
                  ErrorCode::invalid_argument, "[for_loop] initial value 1 is an empty Tensor");
  EXPECT_TG_ERROR(for_loop(n, {x}, nullptr), ErrorCode::invalid_argument,
                  "[for_loop] the body is empty");
  EXPECT_TG_ERROR(for_loop(n, {x},
                           [&](Tensor, std::span<const Tensor> v) {
                             return std::vector{v[0] + g.placeholder({2}, DType::f32, "p")};
                           }),
                  ErrorCode::invalid_argument, "[for_loop] the body creates a placeholder ('p')");
  Graph other;
  EXPECT_TG_ERROR(for_loop(n, {other.placeholder({}, DType::f32)},
                           [&](Tensor, std::span<const Tensor> v) { return std::vector{v[0]}; }),
                  ErrorCode::invalid_argument,
                  "[for_loop] initial value 0 belongs to another graph");
  EXPECT_EQ(g.num_nodes(), before);
}

TEST(ForLoopErrors, TripCountBeyondTheIndexRangeAtRunTime) {
  Graph g;
  Tensor n = g.placeholder({}, DType::i64, "n");
  Tensor r = for_loop(n, {g.constant(1.0, DType::f32)},
                      [&](Tensor, std::span<const Tensor> v) { return std::vector{v[0]}; })[0];
  EXPECT_TG_ERROR(run1_on_test_device(g, r, {{n, TensorData::scalar<int64_t>(int64_t{1} << 31)}}),
                  ErrorCode::out_of_range,
                  "[for_loop] trip count 2147483648 does not fit the i32 index");
}

}  // namespace
}  // namespace tg
