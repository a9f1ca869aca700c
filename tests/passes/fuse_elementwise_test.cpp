// The elementwise fusion pass (passes/fuse_elementwise.cpp) and the fused_elementwise op: which
// nodes it groups, and that fused graphs compute exactly what the unfused ones do. TG_FUSION=1
// forces the pass on the CPU (which runs fused nodes step by step).
#include <gtest/gtest.h>

#include <string>

#include "passes/fusion_test_util.h"
#include "test_util.h"
#include "tg/tg.h"

namespace tg {
namespace {

using testing::count;
using testing::ScopedFusion;

// y = exp(x * 2 + b) - x (b broadcast [3]); z = y * y; w = reduce_sum(z) (not elementwise) + 1.
struct Chain {
  Graph g;
  Tensor x = g.placeholder({2, 3}, DType::f32, "x");
  Tensor b = g.constant(TensorData::from_vector<float>({0.5f, -1.f, 2.f}, {3}));
  Tensor y = exp(x * 2.0 + b) - x;
  Tensor z = y * y;
  Tensor w = reduce_sum(z) + 1.0;
  TensorData feed = TensorData::from_vector<float>({0.1f, -0.2f, 0.3f, 1.f, -1.f, 0.f}, {2, 3});

  std::pair<std::vector<TensorData>, std::string> run(const char* fusion) {
    ScopedFusion f(fusion);
    Executable exe = g.compile(Device::cpu(), {{x, feed.type()}}, {y, z, w});
    return {exe.run({feed}), exe.to_string()};
  }
};

TG_COVERS(value, fused_elementwise);
TEST(FuseElementwise, FusesAChainAndComputesTheSameValues) {
  Chain c;
  auto [plain, plain_text] = c.run("0");
  auto [fused, fused_text] = c.run("1");
  EXPECT_EQ(count(plain_text, "fused_elementwise"), 0) << plain_text;
  // mul, add, exp, sub, mul: one fused node with outputs y and z; the reduction recomputes z from
  // x (fused_reduce, passes/fuse_reduce.cpp) and the scalar add after it stays (another shape: a
  // group of one is left alone).
  EXPECT_EQ(count(fused_text, "fused_elementwise"), 1) << fused_text;
  EXPECT_NE(fused_text.find("steps={mul("), std::string::npos) << fused_text;
  EXPECT_EQ(count(fused_text, "fused_reduce"), 1) << fused_text;
  ASSERT_EQ(fused.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(fused[i].to_vector<float>(), plain[i].to_vector<float>()) << i;
  // Hand check of one element: x = 0.1, b = 0.5: y = e^0.7 - 0.1.
  EXPECT_NEAR(fused[0].to_vector<float>()[0], std::exp(0.7) - 0.1, 1e-6);
}

TEST(FuseElementwise, KeepsConsumersOrderedAndSideEffectsInPlace) {
  // v <- x + 1 is a side effect; a read ordered after it must see the assignment, and values
  // read by the assignment come from the fused node.
  Graph g;
  Tensor v = g.variable(TensorData::from_vector<float>({1, 2}, {2}), "v");
  Tensor x = g.placeholder({2}, DType::f32, "x");
  Tensor t = x * 3.0 + 1.0;
  Operation set = assign_variable(v, t);
  Tensor after = g.control_dependency({set}, [&] { return std::vector<Tensor>{read_variable(v)}; })[0];
  Tensor out = after * 2.0 - t;
  TensorData feed = TensorData::from_vector<float>({1, -1}, {2});
  ScopedFusion f("1");
  Executable exe = g.compile(Device::cpu(), {{x, feed.type()}}, {out}, {set});
  std::vector<float> r = exe.run({feed})[0].to_vector<float>();
  // t = [4, -2]; after = t; out = 2t - t = t.
  EXPECT_EQ(r, (std::vector<float>{4, -2}));
  EXPECT_EQ(g.variable_value(v).to_vector<float>(), (std::vector<float>{4, -2}));
}

TEST(FuseElementwise, MixedDtypesAndCasts) {
  Graph g;
  Tensor x = g.placeholder({4}, DType::i32, "x");
  Tensor f = cast(x, DType::f32);
  Tensor y = select(greater(f, g.constant(1.5, DType::f32)), sqrt(f), neg(f));  // bool, f32 steps
  Tensor z = cast(floor(y * 10.0), DType::i64);
  TensorData feed = TensorData::from_vector<int32_t>({0, 1, 2, 9}, {4});
  std::vector<int64_t> want{0, -10, 14, 30};
  for (const char* mode : {"0", "1"}) {
    ScopedFusion s(mode);
    Executable exe = g.compile(Device::cpu(), {{x, feed.type()}}, {z});
    EXPECT_EQ(exe.run({feed})[0].to_vector<int64_t>(), want) << mode;
    if (std::string(mode) == "1") EXPECT_EQ(count(exe.to_string(), "fused_elementwise"), 1) << exe.to_string();
  }
}

TG_COVERS(error, fused_elementwise);
TEST(FuseElementwise, ErrorsInsideAFusedChainNameTheStepAndLoseNothing) {
  Graph g;
  Tensor v = g.variable(TensorData::from_vector<int32_t>({5, 5}, {2}), "v");
  Tensor x = g.placeholder({2}, DType::i32, "x");
  Tensor q = (x + 1.0) / (x - 2.0) + 1.0;  // x = 2: integer division by zero
  Operation set = assign_variable(v, q);
  ScopedFusion f("1");
  Executable exe = g.compile(Device::cpu(), {{x, {{2}, DType::i32}}}, {q}, {set});
  EXPECT_EQ(count(exe.to_string(), "fused_elementwise"), 1) << exe.to_string();
  EXPECT_TG_ERROR(exe.run({TensorData::from_vector<int32_t>({2, 3}, {2})}), ErrorCode::invalid_argument,
                  "[div] integer division by zero");
  EXPECT_EQ(g.variable_value(v).to_vector<int32_t>(), (std::vector<int32_t>{5, 5}));
  EXPECT_EQ(exe.run({TensorData::from_vector<int32_t>({0, 3}, {2})})[0].to_vector<int32_t>(),
            (std::vector<int32_t>{1, 5}));  // (0+1)/(0-2) = 0 (truncation), +1; (3+1)/1 + 1
}

}  // namespace
}  // namespace tg
