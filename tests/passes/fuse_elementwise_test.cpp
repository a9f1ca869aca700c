// The elementwise fusion pass (passes/fuse_elementwise.cpp) and the fused_elementwise op: which
// nodes it groups, and that fused graphs compute exactly what the unfused ones do. TG_FUSION=1
// forces the pass on the CPU (which runs fused nodes step by step).
#include <gtest/gtest.h>

#include <string>

#include "passes/fusion_test_util.h"
#include "test_util.h"
#include "tg/autodiff.h"
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


// Slice views (rows of 256 bytes) read by fused elementwise kernels and by their gradients, in
// two SGD steps on a variable: a = x * W; loss = sum(a[0] * a[1]) + sum(a[2:4]^2 / 2) +
// sum(2 * W[3]); W -= 0.1 * dloss/dW. The loss, the gradient, a view target and W after each step
// equal a float64 host computation, with fusion off and on.
TEST(FuseElementwise, SliceViewsInAFusedTrainingStep) {
  constexpr int64_t kCols = 64;
  std::vector<float> xs(4 * kCols), w0(4 * kCols);
  for (size_t k = 0; k < xs.size(); ++k) {
    xs[k] = static_cast<float>(static_cast<int>(k % 13) - 6) * 0.125f;
    w0[k] = static_cast<float>(static_cast<int>(k % 7) - 3) * 0.25f;
  }
  for (const char* fusion : {"0", "1"}) {
    SCOPED_TRACE(fusion);
    ScopedFusion f(fusion);
    Graph g;
    Tensor x = g.placeholder({4, kCols}, DType::f32, "x");
    Tensor w = g.variable(TensorData::from_vector<float>(w0, {4, kCols}), "w");
    auto rows = [](Tensor t, int64_t r0, int64_t r1) { return slice(t, {.begin = {r0}, .end = {r1}, .axes = {0}}); };
    Tensor a = x * w;
    Tensor q = rows(a, 0, 1), k = rows(a, 1, 2), v = rows(a, 2, 4);
    Tensor loss = reduce_sum(q * k) + reduce_sum(v * v * 0.5f) + reduce_sum(rows(w, 3, 4) * 2.0f);
    Tensor gw = gradients(loss, {w})[0];
    Operation step = assign_variable(w, w - gw * 0.1f);
    Executable exe = g.compile(Device::cpu(), {{x, {{4, kCols}, DType::f32}}}, {loss, gw, q, k}, {step});
    std::vector<double> wd(w0.begin(), w0.end());
    for (int run = 0; run < 2; ++run) {
      std::vector<double> ad(wd.size()), gd(wd.size());
      for (size_t i = 0; i < wd.size(); ++i) ad[i] = xs[i] * wd[i];
      double want_loss = 0;
      for (int64_t j = 0; j < kCols; ++j) {
        const auto c = static_cast<size_t>(j);
        want_loss += ad[c] * ad[kCols + c] + 0.5 * ad[2 * kCols + c] * ad[2 * kCols + c] +
                     0.5 * ad[3 * kCols + c] * ad[3 * kCols + c] + 2.0 * wd[3 * kCols + c];
        gd[c] = ad[kCols + c] * xs[c];
        gd[kCols + c] = ad[c] * xs[kCols + c];
        gd[2 * kCols + c] = ad[2 * kCols + c] * xs[2 * kCols + c];
        gd[3 * kCols + c] = ad[3 * kCols + c] * xs[3 * kCols + c] + 2.0;
      }
      const std::vector<TensorData> out = exe.run({TensorData::from_vector<float>(xs, {4, kCols})});
      testing::expect_close(out[0], {want_loss}, {}, 1e-5, 1e-5);
      testing::expect_close(out[1], gd, {4, kCols}, 1e-5, 1e-6);
      testing::expect_close(out[2], std::vector<double>(ad.begin(), ad.begin() + kCols), {1, kCols}, 1e-6, 1e-7);
      testing::expect_close(out[3], std::vector<double>(ad.begin() + kCols, ad.begin() + 2 * kCols), {1, kCols}, 1e-6,
                            1e-7);
      for (size_t i = 0; i < wd.size(); ++i) wd[i] -= 0.1 * gd[i];
      testing::expect_close(g.variable_value(w), wd, {4, kCols}, 1e-5, 1e-6);
    }
  }
}

}  // namespace
}  // namespace tg
