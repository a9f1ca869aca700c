// if_else: values on both branches, numeric predicates, captures, differing branch shapes, side
// effects only in the taken branch, nesting, control dependencies, printing, and build errors.
#include "ir/graph.h"
#include "control_flow/test_device.h"
#include "test_util.h"

namespace tg {
namespace {

using testing::expect_close;
using testing::expect_equal;
using testing::run1_on_test_device;
using testing::run_on_test_device;

TensorData f32(float v) { return TensorData::scalar<float>(v); }

TG_COVERS(value, if_else);
// The seed's example: x < y ? x + y : x - y.
TEST(IfElse, SeedExampleOnBothBranches) {
  Graph g;
  Tensor x = g.placeholder({}, DType::f32, "x");
  Tensor y = g.placeholder({}, DType::f32, "y");
  std::vector<Tensor> r = if_else(
      less(x, y), [&] { return std::vector{x + y}; }, [&] { return std::vector{x - y}; });
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].type(), (TensorType{{}, DType::f32}));
  EXPECT_EQ(r[0].op().kind_name(), "if_else");
  expect_equal(run1_on_test_device(g, r[0], {{x, f32(2)}, {y, f32(5)}}), {7}, {});  // 2 < 5: 2 + 5
  expect_equal(run1_on_test_device(g, r[0], {{x, f32(5)}, {y, f32(2)}}), {3}, {});  // 5 >= 2: 5 - 2
  expect_equal(run1_on_test_device(g, r[0], {{x, f32(4)}, {y, f32(4)}}), {0}, {});  // equal: else
  expect_equal(run1_on_test_device(g, r[0], {{x, f32(-1.5f)}, {y, f32(0.25f)}}), {-1.25}, {});
}

TEST(IfElse, NumericPredicateNonZeroIsTrue) {
  Graph g;
  Tensor a = g.constant(TensorData::from_vector<int32_t>({1, 2}, {2}));
  Tensor b = g.constant(TensorData::from_vector<int32_t>({10, 20}, {2}));
  for (DType dt : {DType::i32, DType::i64, DType::u8, DType::f32, DType::f64, DType::f16}) {
    Tensor p = g.placeholder({}, dt, "p");
    Tensor r = if_else(
        p, [&] { return std::vector{a}; }, [&] { return std::vector{b}; })[0];
    expect_equal(run1_on_test_device(g, r, {{p, TensorData::full({}, dt, 0)}}), {10, 20}, {2});
    expect_equal(run1_on_test_device(g, r, {{p, TensorData::full({}, dt, 3)}}), {1, 2}, {2});
  }
  Tensor p = g.placeholder({}, DType::f64, "pf");
  Tensor r = if_else(
      p, [&] { return std::vector{a}; }, [&] { return std::vector{b}; })[0];
  expect_equal(run1_on_test_device(g, r, {{p, TensorData::scalar<double>(-0.5)}}), {1, 2}, {2});
  expect_equal(run1_on_test_device(g, r, {{p, TensorData::scalar<double>(NAN)}}), {1, 2}, {2});  // NaN != 0
  expect_equal(run1_on_test_device(g, r, {{p, TensorData::scalar<double>(-0.0)}}), {10, 20}, {2});
}

// Predicates of any one-element shape, as torch.cond and ONNX If accept them.
TEST(IfElse, OneElementPredicatesOfAnyRank) {
  Graph g;
  Tensor x = g.placeholder({2}, DType::f32, "x");
  const TensorData xv = TensorData::from_vector<float>({1, -3}, {2});
  for (const Shape& s : {Shape{}, Shape{1}, Shape{1, 1}, Shape{1, 1, 1}}) {
    Tensor p = g.placeholder(s, DType::bool_, "p");
    Tensor r = if_else(
        p, [&] { return std::vector{x * 2.f}; }, [&] { return std::vector{x - 1.f}; })[0];
    expect_equal(run1_on_test_device(g, r, {{x, xv}, {p, TensorData::full(s, DType::bool_, 1)}}), {2, -6}, {2});
    expect_equal(run1_on_test_device(g, r, {{x, xv}, {p, TensorData::full(s, DType::bool_, 0)}}), {0, -4}, {2});
    expect_equal(run1_on_test_device(g, r, {{x, xv}, {p, TensorData::full(s, DType::bool_, 1)}}), {2, -6}, {2});
  }
}

TEST(IfElse, SeveralResultsOfSeveralDtypes) {
  Graph g;
  Tensor x = g.placeholder({3}, DType::f64, "x");
  Tensor p = g.placeholder({}, DType::bool_, "p");
  std::vector<Tensor> r = if_else(
      p,
      [&] {
        return std::vector{x * 2.0, cast(x, DType::i32), reduce_sum(x)};
      },
      [&] {
        return std::vector{-x, g.constant(TensorData::from_vector<int32_t>({7, 8, 9}, {3})),
                           g.constant(0.5, DType::f64)};
      });
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[1].type(), (TensorType{{3}, DType::i32}));
  TensorData xv = TensorData::from_vector<double>({1.5, -2, 3.25}, {3});
  auto on = run_on_test_device(g, r, {{x, xv}, {p, TensorData::scalar<bool>(true)}});
  expect_equal(on[0], {3, -4, 6.5}, {3});
  expect_equal(on[1], {1, -2, 3}, {3});
  expect_equal(on[2], {2.75}, {});
  auto off = run_on_test_device(g, r, {{x, xv}, {p, TensorData::scalar<bool>(false)}});
  expect_equal(off[0], {-1.5, 2, -3.25}, {3});
  expect_equal(off[1], {7, 8, 9}, {3});
  expect_equal(off[2], {0.5}, {});
}

TEST(IfElse, CapturesBecomeExplicitInputs) {
  Graph g;
  Tensor x = g.placeholder({2}, DType::f32, "x");
  Tensor y = g.placeholder({2}, DType::f32, "y");
  Tensor p = g.placeholder({}, DType::bool_, "p");
  Tensor r = if_else(
      p, [&] { return std::vector{x * y}; }, [&] { return std::vector{x}; })[0];
  const ir::Node& n = g.impl()->node(r.node_id());
  // Inputs: the predicate, then every captured value (both branches share the list).
  ASSERT_EQ(n.inputs.size(), 3u);
  EXPECT_EQ(n.inputs[0].node, p.node_id());
  EXPECT_EQ(n.inputs[1].node, x.node_id());
  EXPECT_EQ(n.inputs[2].node, y.node_id());
  ASSERT_EQ(n.regions.size(), 2u);
  EXPECT_EQ(n.regions[0].params.size(), 2u);
  EXPECT_EQ(n.regions[1].params.size(), 2u);
  // The branches' nodes live in the regions, not in the outer graph: p, x, y and the if_else.
  EXPECT_EQ(g.num_nodes(), 4);
  TensorData xv = TensorData::from_vector<float>({1, 2}, {2}),
             yv = TensorData::from_vector<float>({3, -4}, {2});
  expect_equal(run1_on_test_device(g, r, {{x, xv}, {y, yv}, {p, TensorData::scalar<bool>(true)}}), {3, -8}, {2});
  expect_equal(run1_on_test_device(g, r, {{x, xv}, {y, yv}, {p, TensorData::scalar<bool>(false)}}), {1, 2}, {2});
}

TEST(IfElse, DifferingBranchShapesGiveDynamicDims) {
  Graph g;
  Tensor x = g.placeholder({2, 3}, DType::f32, "x");
  Tensor p = g.placeholder({}, DType::bool_, "p");
  Tensor r = if_else(
      p, [&] { return std::vector{x}; },
      [&] {
        return std::vector{concat({x, x}, 0)};
      })[0];
  EXPECT_EQ(r.shape(), (Shape{-1, 3}));
  Tensor s = reduce_sum(r, {.axes = {0}}) + 1.0;  // downstream ops run with the taken shape
  EXPECT_EQ(s.shape(), (Shape{3}));
  TensorData xv = TensorData::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  auto on = run_on_test_device(g, {r, s}, {{x, xv}, {p, TensorData::scalar<bool>(true)}});
  expect_equal(on[0], {1, 2, 3, 4, 5, 6}, {2, 3});
  expect_equal(on[1], {6, 8, 10}, {3});
  auto off = run_on_test_device(g, {r, s}, {{x, xv}, {p, TensorData::scalar<bool>(false)}});
  expect_equal(off[0], {1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6}, {4, 3});
  expect_equal(off[1], {11, 15, 19}, {3});
}


// A branch result that is a slice view of a variable the run assigns (shape known only at run
// time: the other branch returns the whole variable): the result is the value at the run's start,
// not the committed one; likewise for the branch returning the variable itself.
TEST(IfElse, ResultViewingAVariableAssignedInTheRun) {
  constexpr int64_t kCols = 64;  // rows of 256 bytes
  Graph g;
  std::vector<float> init(2 * kCols);
  for (size_t k = 0; k < init.size(); ++k) init[k] = static_cast<float>(k);
  Tensor v = g.variable(TensorData::from_vector<float>(init, {2, kCols}), "v");
  Tensor p = g.placeholder({}, DType::bool_, "p");
  Tensor r = if_else(
      p, [&] { return std::vector{slice(v, {.begin = {1}, .end = {2}, .axes = {0}})}; },
      [&] { return std::vector{v}; })[0];
  EXPECT_EQ(r.shape(), (Shape{-1, kCols}));
  Operation step = assign_variable(v, v + 100.0f);
  double add = 0;
  for (bool taken : {true, false, true}) {
    const std::vector<TensorData> out = g.run({{p, TensorData::scalar<bool>(taken)}}, {r}, {step}, testing::test_device());
    std::vector<double> want;
    for (size_t k = taken ? kCols : 0; k < init.size(); ++k) want.push_back(init[k] + add);
    expect_equal(out[0].to(Device::cpu()), want, {taken ? 1 : 2, kCols});
    add += 100;
  }
}


// A branch result that is a slice view of a value computed before the if_else (in the run's arena)
// or that value itself (shape known only at run time): the caller's result keeps its value when
// later runs reuse the arena.
TEST(IfElse, ResultViewingAnArenaValueOutlivesTheRun) {
  constexpr int64_t kCols = 64;  // rows of 256 bytes
  Graph g;
  Tensor x = g.placeholder({2, kCols}, DType::f32, "x");
  Tensor p = g.placeholder({}, DType::bool_, "p");
  Tensor a = x * 2.0f;
  Tensor r = if_else(
      p, [&] { return std::vector{slice(a, {.begin = {1}, .end = {2}, .axes = {0}})}; },
      [&] { return std::vector{a}; })[0];
  auto input = [&](int run) {
    std::vector<float> xs(2 * kCols);
    for (size_t k = 0; k < xs.size(); ++k) xs[k] = static_cast<float>(k) + 1000.0f * static_cast<float>(run);
    return xs;
  };
  auto want = [&](int run, bool taken) {
    std::vector<double> w;
    const std::vector<float> xs = input(run);
    for (size_t k = taken ? kCols : 0; k < xs.size(); ++k) w.push_back(2.0 * xs[k]);
    return w;
  };
  std::vector<TensorData> held;
  for (int run = 0; run < 4; ++run) {
    const bool taken = run % 2 == 0;
    held.push_back(g.run({{x, TensorData::from_vector<float>(input(run), {2, kCols})}, {p, TensorData::scalar<bool>(taken)}},
                         {r}, {}, testing::test_device())[0]);
  }
  for (int run = 0; run < 4; ++run) {
    const bool taken = run % 2 == 0;
    expect_equal(held[static_cast<size_t>(run)].to(Device::cpu()), want(run, taken), {taken ? 1 : 2, kCols});
  }
}

TEST(IfElse, DynamicFeedsAreSpecializedAtCompile) {
  Graph g;
  Tensor x = g.placeholder({-1}, DType::f32, "x");
  Tensor p = g.placeholder({}, DType::bool_, "p");
  Tensor r = if_else(
      p, [&] { return std::vector{exp(x) * 0.0 + 1.0}; }, [&] { return std::vector{x * x}; })[0];
  EXPECT_EQ(r.shape(), (Shape{-1}));
  Executable exe = g.compile(
      Device::cpu(), {{x, TensorType{{3}, DType::f32}}, {p, TensorType{{}, DType::bool_}}}, {r});
  EXPECT_EQ(exe.output_types()[0], (TensorType{{3}, DType::f32}));
  TensorData xv = TensorData::from_vector<float>({1, -2, 3}, {3});
  expect_equal(exe.run({xv, TensorData::scalar<bool>(false)})[0], {1, 4, 9}, {3});
  expect_equal(exe.run({xv, TensorData::scalar<bool>(true)})[0], {1, 1, 1}, {3});
}

// Assignments in the untaken branch never happen, and an op that would fail there is not run.
TEST(IfElse, OnlyTheTakenBranchRuns) {
  Graph g;
  Tensor v = g.variable(TensorData::scalar<int32_t>(0), "v");
  Tensor p = g.placeholder({}, DType::bool_, "p");
  Tensor table = g.constant(TensorData::from_vector<float>({1, 2}, {2}));
  Tensor bad_index = g.constant(TensorData::scalar<int32_t>(5));
  std::vector<Tensor> r = if_else(
      p,
      [&] {
        assign_variable(v, g.constant(TensorData::scalar<int32_t>(1)));
        return std::vector{reduce_sum(table)};
      },
      [&] {
        assign_variable(v, g.constant(TensorData::scalar<int32_t>(2)));
        return std::vector{gather(table, bad_index)};  // out of range if it ran
      });
  expect_equal(g.run({{p, TensorData::scalar<bool>(true)}}, r, {}, Device::cpu())[0], {3}, {});
  expect_equal(g.variable_value(v), {1}, {});
  // The else branch fails at run time: the assignment made before the failure is dropped.
  EXPECT_TG_ERROR(g.run({{p, TensorData::scalar<bool>(false)}}, r, {}, Device::cpu()),
                  ErrorCode::out_of_range, "[gather]");
  expect_equal(g.variable_value(v), {1}, {});
}

TEST(IfElse, NestedBranches) {
  Graph g;
  Tensor x = g.placeholder({}, DType::f32, "x");
  Tensor zero = g.constant(0.0, DType::f32);
  // sign(x) * 10 through two levels of if_else.
  Tensor r = if_else(
      greater(x, zero), [&] { return std::vector{g.constant(10.0, DType::f32)}; },
      [&] {
        return if_else(
            less(x, zero), [&] { return std::vector{g.constant(-10.0, DType::f32)}; },
            [&] { return std::vector{x * 0.0}; });
      })[0];
  EXPECT_EQ(g.num_nodes(), 4);  // x, zero, greater, if_else
  expect_equal(run1_on_test_device(g, r, {{x, f32(3)}}), {10}, {});
  expect_equal(run1_on_test_device(g, r, {{x, f32(-3)}}), {-10}, {});
  expect_equal(run1_on_test_device(g, r, {{x, f32(0)}}), {0}, {});
}

TEST(IfElse, InsideAndAroundControlDependencies) {
  Graph g;
  Tensor v = g.variable(TensorData::scalar<float>(1), "v");
  Tensor p = g.placeholder({}, DType::bool_, "p");
  Operation set5 = assign_variable(v, g.constant(5.0, DType::f32));
  // Built inside the scope, the if_else runs after set5: its branches read 5.
  Tensor r = g.control_dependency({set5}, [&] {
    return if_else(
        p, [&] { return std::vector{read_variable(v) * 2.0}; },
        [&] { return std::vector{read_variable(v) + 1.0}; });
  })[0];
  const ir::Node& n = g.impl()->node(r.node_id());
  EXPECT_EQ(n.control_inputs, std::vector<int>{set5.node_id()});
  expect_equal(run1_on_test_device(g, r, {{p, TensorData::scalar<bool>(true)}}), {10}, {});
  expect_equal(run1_on_test_device(g, r, {{p, TensorData::scalar<bool>(false)}}), {6}, {});
  // A scope opened inside a branch on an outer op orders the whole if_else after that op.
  Graph h;
  Tensor w = h.variable(TensorData::scalar<float>(1), "w");
  Tensor q = h.placeholder({}, DType::bool_, "q");
  Operation set7 = assign_variable(w, h.constant(7.0, DType::f32));
  Tensor s = if_else(
      q,
      [&] { return h.control_dependency({set7}, [&] { return std::vector{read_variable(w)}; }); },
      [&] { return std::vector{h.constant(0.0, DType::f32)}; })[0];
  EXPECT_EQ(h.impl()->node(s.node_id()).control_inputs, std::vector<int>{set7.node_id()});
  expect_equal(h.run({{q, TensorData::scalar<bool>(true)}}, {s}, {}, Device::cpu())[0], {7}, {});
}

TEST(IfElse, PrinterAndDotShowRegionsInsideTheOp) {
  Graph g;
  Tensor x = g.placeholder({}, DType::f32, "x");
  Tensor y = g.placeholder({}, DType::f32, "y");
  if_else(
      less(x, y), [&] { return std::vector{x + y}; }, [&] { return std::vector{x - y}; });
  EXPECT_EQ(g.to_string(),
            "%0 = placeholder() : f32[]  # x\n"
            "%1 = placeholder() : f32[]  # y\n"
            "%2 = less(%0, %1) : bool[]\n"
            "%3 = if_else(%2, %0, %1) : f32[]\n"
            "  region then(%0 <- %0, %1 <- %1) {\n"
            "    %0 = placeholder() : f32[]  # capture0\n"
            "    %1 = placeholder() : f32[]  # capture1\n"
            "    %2 = add(%0, %1) : f32[]\n"
            "    yield(%2)\n"
            "  }\n"
            "  region else(%0 <- %0, %1 <- %1) {\n"
            "    %0 = placeholder() : f32[]  # capture0\n"
            "    %1 = placeholder() : f32[]  # capture1\n"
            "    %2 = sub(%0, %1) : f32[]\n"
            "    yield(%2)\n"
            "  }\n");
  std::string dot = to_dot(g);
  EXPECT_NE(dot.find("subgraph cluster_n3 {\n  label=\"if_else %3\";"), std::string::npos) << dot;
  EXPECT_NE(dot.find("subgraph cluster_n3r0_ {\n  label=\"then\";"), std::string::npos) << dot;
  EXPECT_NE(dot.find("subgraph cluster_n3r1_ {\n  label=\"else\";"), std::string::npos) << dot;
  EXPECT_NE(dot.find("n3r1_n0 -> n3r1_n2 [label=\"0\"];"), std::string::npos) << dot;
  EXPECT_NE(dot.find("n0 -> n3r0_n0 [style=dotted];"), std::string::npos) << dot;
  EXPECT_NO_THROW(ir::verify(*g.impl()));
}

TG_COVERS(error, if_else);
TEST(IfElseErrors, PredicateMustHaveOneElement) {
  Graph g;
  Tensor x = g.placeholder({2}, DType::f32, "x");
  auto branch = [&] { return std::vector{x}; };
  EXPECT_TG_ERROR(if_else(less(x, x), branch, branch), ErrorCode::shape_mismatch,
                  "[if_else] predicate must have exactly one element (shape [], [1], [1, 1]...), got bool[2]");
  Tensor p12 = g.placeholder({1, 2}, DType::bool_, "p12");
  EXPECT_TG_ERROR(if_else(p12, branch, branch), ErrorCode::shape_mismatch,
                  "[if_else] predicate must have exactly one element (shape [], [1], [1, 1]...), got bool[1,2]");
  EXPECT_TG_ERROR(if_else(Tensor(), branch, branch), ErrorCode::invalid_argument,
                  "[if_else] predicate is an empty");
  EXPECT_EQ(g.num_nodes(), 3);  // x, less(x, x) and p12: the failed builds left nothing
}

TEST(IfElseErrors, BranchesMustAgree) {
  Graph g;
  Tensor x = g.placeholder({2}, DType::f32, "x");
  Tensor p = g.placeholder({}, DType::bool_, "p");
  int before = g.num_nodes();
  EXPECT_TG_ERROR(if_else(
                      p,
                      [&] {
                        return std::vector{x, x};
                      },
                      [&] { return std::vector{x}; }),
                  ErrorCode::invalid_argument,
                  "[if_else] then_block returns 2 tensors, else_block returns 1");
  EXPECT_TG_ERROR(
      if_else(
          p, [&] { return std::vector{x}; }, [&] { return std::vector{cast(x, DType::f64)}; }),
      ErrorCode::dtype_mismatch,
      "[if_else] result 0 is f32[2] in then_block but f64[2] in else_block");
  EXPECT_TG_ERROR(if_else(
                      p, [&] { return std::vector{x}; },
                      [&] {
                        return std::vector{reshape(x, {1, 2})};
                      }),
                  ErrorCode::shape_mismatch,
                  "[if_else] result 0 is f32[2] in then_block but f32[1,2] in else_block");
  EXPECT_TG_ERROR(
      if_else(
          p, [&] { return std::vector<Tensor>{}; }, [&] { return std::vector<Tensor>{}; }),
      ErrorCode::invalid_argument, "[if_else] then_block returns no tensors");
  EXPECT_TG_ERROR(if_else(
                      p, [&] { return std::vector{Tensor()}; }, [&] { return std::vector{x}; }),
                  ErrorCode::invalid_argument,
                  "[if_else] then_block returns an empty Tensor (result 0)");
  EXPECT_TG_ERROR(if_else(p, nullptr, [&] { return std::vector{x}; }), ErrorCode::invalid_argument,
                  "[if_else] then_block is empty");
  Graph other;
  Tensor z = other.placeholder({2}, DType::f32, "z");
  EXPECT_TG_ERROR(if_else(
                      p, [&] { return std::vector{z}; }, [&] { return std::vector{x}; }),
                  ErrorCode::invalid_argument,
                  "[if_else] then_block returns a tensor of another graph");
  EXPECT_EQ(g.num_nodes(), before);  // every failed build left the graph as it was
}

TEST(IfElseErrors, BlocksKeepToThemselves) {
  Graph g;
  Tensor x = g.placeholder({2}, DType::f32, "x");
  Tensor p = g.placeholder({}, DType::bool_, "p");
  Tensor leaked;
  EXPECT_TG_ERROR(if_else(
                      p,
                      [&] {
                        leaked = exp(x);
                        return std::vector{leaked};
                      },
                      [&] { return std::vector{leaked + 1.0}; }),
                  ErrorCode::invalid_argument, "[if_else] else_block uses (in %");
  EXPECT_TG_ERROR(if_else(
                      p, [&] { return std::vector{g.placeholder({2}, DType::f32, "inner")}; },
                      [&] { return std::vector{x}; }),
                  ErrorCode::invalid_argument,
                  "[if_else] then_block creates a placeholder ('inner')");
  // An error raised by an op inside a block propagates and leaves the graph unchanged.
  EXPECT_TG_ERROR(if_else(
                      p, [&] { return std::vector{x + g.placeholder({3}, DType::f32)}; },
                      [&] { return std::vector{x}; }),
                  ErrorCode::shape_mismatch, "[add]");
  EXPECT_EQ(g.num_nodes(), 2);
}

}  // namespace
}  // namespace tg
