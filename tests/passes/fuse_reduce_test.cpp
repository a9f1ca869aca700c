// The reduction fusion pass (passes/fuse_reduce.cpp) and the fused_reduce op: reductions of
// elementwise programs become one node, sibling sums share one pass, producers are recomputed in
// their readers, and the fused graphs compute what the unfused ones do (TG_FUSION=1 forces the
// passes on the CPU, which runs fused nodes step by step).
#include <gtest/gtest.h>

#include <string>

#include "ops/registry.h"
#include "passes/fusion_test_util.h"
#include "test_util.h"
#include "tg/autodiff.h"
#include "tg/nn.h"
#include "tg/tg.h"

namespace tg {
namespace {

using testing::count;
using testing::ScopedFusion;

TensorData f32_data(const std::vector<float>& v, Shape shape) { return TensorData::from_vector<float>(v, shape); }

TG_COVERS(value, fused_reduce);
TEST(FuseReduce, SiblingSumsShareOnePass) {
  // a = sum_rows(x), b = sum_rows(x * y + 1): one fused_reduce with two outputs reading x and y.
  Graph g;
  Tensor x = g.placeholder({3, 2}, DType::f32, "x");
  Tensor y = g.placeholder({3, 2}, DType::f32, "y");
  Tensor a = reduce_sum(x, {.axes = {0}, .keep_dims = true});
  Tensor b = reduce_sum(x * y + 1.0, {.axes = {0}, .keep_dims = true});
  TensorData xv = f32_data({1, 2, 3, 4, 5, 6}, {3, 2}), yv = f32_data({1, -1, 2, 0.5f, -3, 2}, {3, 2});
  ScopedFusion f("1");
  Executable exe = g.compile(Device::cpu(), {{x, xv.type()}, {y, yv.type()}}, {a, b});
  const std::string text = exe.to_string();
  EXPECT_EQ(count(text, "fused_reduce"), 1) << text;
  EXPECT_EQ(count(text, "reduce_sum"), 0) << text;
  EXPECT_EQ(count(text, "fused_elementwise"), 0) << text;  // x * y + 1 is only summed: not written
  std::vector<TensorData> r = exe.run({xv, yv});
  // a = [1+3+5, 2+4+6]; b = [1*1 + 3*2 + 5*-3 + 3, 2*-1 + 4*0.5 + 6*2 + 3] = [-5, 15].
  testing::expect_equal(r[0], {9, 12}, {1, 2});
  testing::expect_equal(r[1], {-5, 15}, {1, 2});
}

TG_COVERS(error, fused_reduce);
TEST(FuseReduce, TypeInferenceRejectsAnOutputOutsideTheProgram) {
  ir::Node n;
  n.kind = ir::OpKind::fused_reduce;
  ir::FusedAttrs a;
  a.shape = {3, 2};
  a.steps = {{ir::OpKind::neg, {0}, DType::f32}};
  a.outputs = {2};  // values: input 0, step 1
  a.reduce_axes = {0};
  n.attrs = a;
  std::vector<TensorType> in{{{3, 2}, DType::f32}};
  EXPECT_TG_ERROR(ops::infer_types(n, in), ErrorCode::internal, "[fused_reduce] output value 2 is not a step");
  a.outputs = {0, 1};  // an input (summed directly) and the step
  n.attrs = a;
  std::vector<TensorType> out = ops::infer_types(n, in);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1], (TensorType{{2}, DType::f32}));
}

// Batch norm (NHWC, training) + relu, its gradients and the running-statistics updates: with the
// passes every reduction reads its program's inputs, no full-size broadcast is materialized, and
// every value, gradient and variable equals the unfused run's.
TEST(FuseReduce, BatchNormTrainingStepMatchesTheUnfusedGraph) {
  TensorData xv = TensorData::random_normal({4, 3, 3, 8}, 0.5f, 2.f, 7);
  TensorData on = TensorData::from_vector<bool>({true}, {});
  std::vector<float> gv(8), bv(8);
  for (int c = 0; c < 8; ++c) gv[c] = 1.f + 0.1f * c, bv[c] = 0.05f * c - 0.2f;
  auto run = [&](const char* fusion, std::string* text) {
    testing::BatchNormStep s({4, 3, 3, 8}, f32_data(gv, {8}), f32_data(bv, {8}));
    ScopedFusion f(fusion);
    Executable exe = s.g.compile(Device::cpu(), {{s.x, xv.type()}, {s.training, on.type()}}, s.targets());
    *text = exe.to_string();
    return s.with_statistics(exe.run({xv, on}));
  };
  std::string plain_text, fused_text;
  std::vector<TensorData> plain = run("0", &plain_text);
  std::vector<TensorData> fused = run("1", &fused_text);
  EXPECT_GT(count(plain_text, "reduce_sum"), 5) << plain_text;
  // Left: the sums of x (forward, and its recomputation in the backward branch), which read one
  // tensor each; every other sum reads its program's inputs (the cotangent's sum shares the
  // pass of sum(dy * (x - mean))).
  EXPECT_EQ(count(fused_text, "= reduce_sum(%0)"), 2) << fused_text;
  EXPECT_EQ(count(fused_text, "reduce_sum"), 2) << fused_text;
  EXPECT_GT(count(fused_text, "fused_reduce"), 3) << fused_text;
  EXPECT_EQ(count(fused_text, "broadcast_to"), 0) << fused_text;
  testing::expect_matches_unfused(plain, fused);
  // The running mean moved towards the batch mean (momentum 0.1 from 0): 0.1 * mean(x[..., 0]).
  double m0 = 0;
  std::vector<float> xs = xv.to_vector<float>();
  for (size_t k = 0; k < xs.size(); k += 8) m0 += xs[k];
  EXPECT_NEAR(fused[4].to_vector<float>()[0], 0.1 * m0 / 36, 1e-5);
}


// A branch's assignment that no result reads survives the fusion of that branch: the sum of the
// then-branch becomes an identity fused_reduce (a one-element sum of a value no program makes),
// and the dead-code elimination that follows in the body keeps its side effects (an empty list of
// the body's root ops once dropped the assign_variable there).
TEST(FuseReduce, AssignmentInAFusedBranchIsKept) {
  Graph g;
  Tensor v = g.variable(TensorData::scalar<int32_t>(0), "v");
  Tensor x = g.placeholder({4}, DType::f32, "x");
  Tensor p = g.placeholder({}, DType::bool_, "p");
  Tensor r = if_else(
      p,
      [&] {
        assign_variable(v, g.constant(TensorData::scalar<int32_t>(1)));
        return std::vector{reduce_sum(x)};
      },
      [&] {
        assign_variable(v, g.constant(TensorData::scalar<int32_t>(2)));
        return std::vector{reduce_max(x)};
      })[0];
  ScopedFusion f("1");
  Executable exe = g.compile(Device::cpu(), {{x, TensorType{{4}, DType::f32}}, {p, TensorType{{}, DType::bool_}}}, {r});
  const std::string text = exe.to_string();
  EXPECT_EQ(count(text, "fused_reduce"), 1) << text;
  EXPECT_EQ(count(text, "reduce_sum"), 0) << text;
  EXPECT_EQ(count(text, "assign_variable"), 2) << text;
  const TensorData xv = f32_data({1, 2, 3, 4.5f}, {4});
  testing::expect_equal(exe.run({xv, TensorData::scalar<bool>(true)})[0], {10.5}, {});  // 1 + 2 + 3 + 4.5
  testing::expect_equal(g.variable_value(v), {1}, {});
  testing::expect_equal(exe.run({xv, TensorData::scalar<bool>(false)})[0], {4.5}, {});
  testing::expect_equal(g.variable_value(v), {2}, {});
}

}  // namespace
}  // namespace tg
