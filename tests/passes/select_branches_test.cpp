// Cheap branches as selects (passes/select_branches.cpp), run by compile on backends that fuse
// (TG_FUSION=1 forces it on the CPU; TG_BRANCH_SELECT=0 turns it off): an if_else of a few
// elementwise ops a branch on a one-element bool predicate computes both sides and selects.
#include <gtest/gtest.h>

#include "passes/fusion_test_util.h"
#include "test_util.h"
#include "tg/control_flow.h"
#include "tg/tg.h"

namespace tg {
namespace {

using testing::count;
using testing::ScopedEnv;
using testing::ScopedFusion;

// r = if sum(x) > 0: (x * 2 + 1, x - 3) else: (x * x, x + 0.5), the predicate reshaped to
// `pred_shape` (one element).
struct TwoResults {
  Graph g;
  Tensor x = g.placeholder({4}, DType::f32, "x");
  std::vector<Tensor> r;
  explicit TwoResults(const Shape& pred_shape) {
    Tensor p = reshape(greater(reduce_sum(x), g.constant(0.0, DType::f32)), pred_shape);
    r = if_else(
        p, [&] { return std::vector{x * 2.f + 1.f, x - 3.f}; }, [&] { return std::vector{x * x, x + 0.5f}; });
  }
  Executable compile() { return g.compile(Device::cpu(), {{x, {{4}, DType::f32}}}, r); }
};

TensorData vec4(std::vector<float> v) { return TensorData::from_vector<float>(std::move(v), {4}); }

void expect_both_branches(Executable& exe) {
  std::vector<TensorData> then = exe.run({vec4({1, -2, 3, 0.5})});  // sum 2.5 > 0
  testing::expect_equal(then[0], {3, -3, 7, 2}, {4});
  testing::expect_equal(then[1], {-2, -5, 0, -2.5}, {4});
  std::vector<TensorData> other = exe.run({vec4({-1, -2, -3, 0.5})});  // sum -5.5
  testing::expect_equal(other[0], {1, 4, 9, 0.25}, {4});
  testing::expect_equal(other[1], {-0.5, -1.5, -2.5, 1}, {4});
}

TEST(SelectBranches, CheapBranchesBecomeOneSelectPerResult) {
  ScopedFusion f("1");
  for (const Shape& pred : {Shape{}, Shape{1}, Shape{1, 1}}) {
    TwoResults t(pred);
    Executable exe = t.compile();
    const std::string ir = exe.to_string();
    EXPECT_EQ(count(ir, "if_else"), 0) << ir;
    EXPECT_EQ(exe.output_types()[0].shape, Shape{4});  // a [1, 1] predicate does not broadcast the results
    expect_both_branches(exe);
  }
}

TEST(SelectBranches, OffByTheVariableOrWithoutFusionTheBranchStays) {
  for (const char* fusion : {"1", "0"}) {
    ScopedFusion f(fusion);
    ScopedEnv off("TG_BRANCH_SELECT", fusion[0] == '1' ? "0" : "1");
    TwoResults t(Shape{});
    Executable exe = t.compile();
    EXPECT_EQ(count(exe.to_string(), "if_else"), 1) << exe.to_string();
    expect_both_branches(exe);
  }
}

TEST(SelectBranches, BranchesThatCouldFailOrHoldMoreThanElementwiseOpsStay) {
  ScopedFusion f("1");
  Graph g;
  Tensor a = g.placeholder({3}, DType::i32, "a");
  Tensor b = g.placeholder({3}, DType::i32, "b");
  Tensor p = greater(reduce_sum(b), g.constant(0.0, DType::i32));
  // Integer division by b: computed on the side not taken it would raise.
  Tensor q = if_else(p, [&] { return std::vector{a / b}; }, [&] { return std::vector{a}; })[0];
  // A reduction in a branch.
  Tensor s = if_else(p, [&] { return std::vector{a + reduce_sum(a)}; }, [&] { return std::vector{a}; })[0];
  Executable exe = g.compile(Device::cpu(), {{a, {{3}, DType::i32}}, {b, {{3}, DType::i32}}}, {q, s});
  EXPECT_EQ(count(exe.to_string(), "if_else"), 2) << exe.to_string();
  const TensorData av = TensorData::from_vector<int32_t>({6, 7, 8}, {3});
  std::vector<TensorData> r = exe.run({av, TensorData::from_vector<int32_t>({0, -1, 0}, {3})});  // else: no division
  testing::expect_equal(r[0], {6, 7, 8}, {3});
  testing::expect_equal(r[1], {6, 7, 8}, {3});
  r = exe.run({av, TensorData::from_vector<int32_t>({2, 7, 1}, {3})});
  testing::expect_equal(r[0], {3, 1, 8}, {3});
  testing::expect_equal(r[1], {27, 28, 29}, {3});
}

TEST(SelectBranches, AnIfElseInALoopBodyBecomesASelect) {
  ScopedFusion f("1");
  // 5 times: y = mean(y) > 1.5 ? y * 0.5 + 0.25 : y * 2 (the benchmark's for-with-if, small).
  Graph g;
  Tensor y0 = g.placeholder({2}, DType::f32, "y");
  Tensor out = for_loop(5, {y0}, [&](Tensor, std::span<const Tensor> v) {
    Tensor y = v[0];
    return if_else(
        greater(reduce_mean(y), g.constant(1.5, DType::f32)), [&] { return std::vector{y * 0.5f + 0.25f}; },
        [&] { return std::vector{y * 2.f}; });
  })[0];
  Executable exe = g.compile(Device::cpu(), {{y0, {{2}, DType::f32}}}, {out});
  EXPECT_EQ(count(exe.to_string(), "if_else"), 0) << exe.to_string();
  // y = (2, 4): mean 3 -> (1.25, 2.25): 1.75 -> (0.875, 1.375): 1.125 -> (1.75, 2.75): 2.25
  // -> (1.125, 1.625): 1.375 -> (2.25, 3.25).
  testing::expect_equal(exe.run({TensorData::from_vector<float>({2, 4}, {2})})[0], {2.25, 3.25}, {2});
}

}  // namespace
}  // namespace tg
