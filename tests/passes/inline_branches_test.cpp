// Constant-predicate branch inlining (passes/inline_branches.cpp) and common-subexpression
// elimination (passes/cse.cpp), run by compile on backends that fuse (TG_FUSION=1 forces them on
// the CPU). A placeholder bound at compile time (runtime::compile_graph's `bound`, as nn::Model
// binds is_training) becomes a constant, so the if_else it drives folds to one branch.
#include <gtest/gtest.h>

#include "passes/fusion_test_util.h"
#include "runtime/compile.h"
#include "test_util.h"
#include "tg/control_flow.h"
#include "tg/tg.h"

namespace tg {
namespace {

using testing::count;
using testing::ScopedFusion;

// y = if p: v <- v + x (side effect), x * 2 + 1   else: x - 1.
struct Branchy {
  Graph g;
  Tensor x = g.placeholder({3}, DType::f32, "x");
  Tensor p = g.placeholder({}, DType::bool_, "p");
  Tensor v = g.variable(TensorData::from_vector<float>({10, 20, 30}, {3}), "v");
  Tensor y = if_else(
      p,
      [&] {
        Operation set = assign_variable(v, v + x);
        return g.control_dependency({set}, [&] { return std::vector<Tensor>{x * 2.0 + 1.0}; });
      },
      [&] { return std::vector<Tensor>{x - 1.0}; })[0];
  TensorData feed = TensorData::from_vector<float>({1, 2, 3}, {3});

  Executable compile(bool on) {
    return runtime::compile_graph(g.impl(), Device::cpu(), {{x, feed.type()}}, {y}, {}, {},
                                  {{p, TensorData::from_vector<bool>({on}, {})}});
  }
};

TEST(InlineBranches, ABoundPredicateInlinesTheTakenBranchWithItsSideEffects) {
  ScopedFusion f("1");
  Branchy b;
  Executable on = b.compile(true);
  EXPECT_EQ(count(on.to_string(), "if_else"), 0) << on.to_string();
  EXPECT_EQ(on.input_types().size(), 1u);  // p is not fed
  testing::expect_equal(on.run({b.feed})[0], {3, 5, 7}, {3});
  testing::expect_equal(b.g.variable_value(b.v), {11, 22, 33}, {3});  // the assignment ran once
  Executable off = b.compile(false);
  EXPECT_EQ(count(off.to_string(), "if_else"), 0) << off.to_string();
  EXPECT_EQ(count(off.to_string(), "assign_variable"), 0) << off.to_string();
  testing::expect_equal(off.run({b.feed})[0], {0, 1, 2}, {3});
  testing::expect_equal(b.g.variable_value(b.v), {11, 22, 33}, {3});  // untouched
}

TEST(InlineBranches, WithoutFusionTheBranchStaysAndTheBoundValueChoosesIt) {
  ScopedFusion f("0");
  Branchy b;
  Executable on = b.compile(true);
  EXPECT_EQ(count(on.to_string(), "if_else"), 1) << on.to_string();
  testing::expect_equal(on.run({b.feed})[0], {3, 5, 7}, {3});
  testing::expect_equal(b.g.variable_value(b.v), {11, 22, 33}, {3});
}

TEST(InlineBranches, ABoundValueMustBeAnUnfedPlaceholderOfItsType) {
  Branchy b;
  EXPECT_TG_ERROR(runtime::compile_graph(b.g.impl(), Device::cpu(), {{b.x, b.feed.type()}}, {b.y}, {}, {},
                                         {{b.p, TensorData::from_vector<float>({1}, {})}}),
                  ErrorCode::dtype_mismatch, "p");
  EXPECT_TG_ERROR(runtime::compile_graph(b.g.impl(), Device::cpu(), {{b.x, b.feed.type()}}, {b.y}, {}, {},
                                         {{b.x, b.feed}}),
                  ErrorCode::invalid_argument, "is not an unfed placeholder");
}

TEST(Cse, RepeatedExpressionsAreComputedOnce) {
  ScopedFusion f("1");
  Graph g;
  Tensor x = g.placeholder({2}, DType::f32, "x");
  Tensor a = reduce_sum(exp(x), {.axes = {0}});
  Tensor b = reduce_sum(exp(x), {.axes = {0}});  // the same again
  Tensor c = reduce_sum(exp(x), {.axes = {0}, .keep_dims = true});  // other attributes
  Executable exe = g.compile(Device::cpu(), {{x, {{2}, DType::f32}}}, {a + b, c});
  const std::string text = exe.to_string();
  // a and b are one node (their sum adds it to itself); c differs in keep_dims: two sums in all,
  // each computing exp(x) in its program.
  EXPECT_EQ(count(text, "fused_reduce"), 2) << text;
  EXPECT_EQ(count(text, "add(%1, %1)"), 1) << text;
  std::vector<TensorData> r = exe.run({TensorData::from_vector<float>({0, 1}, {2})});
  const double s = 1 + std::exp(1.0);
  testing::expect_close(r[0], {2 * s}, {}, 1e-6, 0);
  testing::expect_close(r[1], {s}, {1}, 1e-6, 0);
}

}  // namespace
}  // namespace tg
