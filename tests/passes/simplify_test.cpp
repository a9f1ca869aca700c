// The simplification pass (passes/simplify.cpp): graphs built with dynamic dims lose their
// element-counting and zeros_like work once compile knows the shapes, and compute the same values.
#include <gtest/gtest.h>

#include "test_util.h"
#include "tg/nn.h"
#include "tg/tg.h"

namespace tg {
namespace {

using testing::count_occurrences;

TEST(Simplify, BatchNormCountsAreFoldedForStaticShapes) {
  Graph g;
  Tensor x = g.placeholder({-1, 2, 2, 3}, DType::f32, "x");  // batch dim dynamic when built
  Tensor tr = g.placeholder({}, DType::bool_, "is_training");
  Tensor gamma = g.variable(TensorData::full({3}, DType::f32, 1.0), "gamma");
  Tensor beta = g.variable(TensorData::full({3}, DType::f32, 0.0), "beta");
  Tensor rm = g.variable(TensorData::full({3}, DType::f32, 0.0), "rm");
  Tensor rv = g.variable(TensorData::full({3}, DType::f32, 1.0), "rv");
  Tensor y = batch_norm(x, gamma, beta, rm, rv, tr);
  EXPECT_GT(count_occurrences(g.to_string(), "is_nan"), 0) << "the builder counts elements at run time";
  TensorData feed = TensorData::from_vector<float>(
      {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, -1, -2, -3, -4, -5, -6, -7, -8, -9, -10, -11, -12}, {2, 2, 2, 3});
  Executable exe = g.compile(Device::cpu(), {{x, feed.type()}, {tr, {{}, DType::bool_}}}, {y});
  const std::string text = exe.to_string();
  EXPECT_EQ(count_occurrences(text, "is_nan"), 0) << text;
  EXPECT_NE(text.find("fill() {value=8}"), std::string::npos) << text;  // 2*2*2 elements per channel
  std::vector<float> r = exe.run({feed, TensorData::scalar(true)})[0].to_vector<float>();
  // Channel 0 holds 1, 4, 7, 10, -1, -4, -7, -10: mean 0, biased variance 41.5.
  EXPECT_NEAR(r[0], 1.0 / std::sqrt(41.5 + 1e-5), 1e-6);
  EXPECT_NEAR(r[12], -1.0 / std::sqrt(41.5 + 1e-5), 1e-6);
  // The running variance uses the unbiased factor 8/7, folded to a constant too.
  EXPECT_NEAR(g.variable_value(rv).to_vector<float>()[0], 0.9 + 0.1 * 41.5 * 8 / 7, 1e-4);
}

TEST(Simplify, SelectOfOneValueAndAddOfZero) {
  Graph g;
  Tensor x = g.placeholder({4}, DType::f32, "x");
  Tensor zero = g.constant(0.0, DType::f32);
  Tensor z = select(is_nan(x), zero, zero);  // zeros_like for a shape unknown when built
  Tensor y = exp(x) + z;
  Executable exe = g.compile(Device::cpu(), {{x, {{4}, DType::f32}}}, {y, z});
  const std::string text = exe.to_string();
  EXPECT_EQ(count_occurrences(text, "is_nan"), 0) << text;
  EXPECT_EQ(count_occurrences(text, "select"), 0) << text;
  EXPECT_EQ(count_occurrences(text, "add("), 0) << text;
  auto r = exe.run({TensorData::from_vector<float>({0, 1, -1, 2}, {4})});
  EXPECT_EQ(r[0].to_vector<float>(), (std::vector<float>{1, std::exp(1.f), std::exp(-1.f), std::exp(2.f)}));
  EXPECT_EQ(r[1].to_vector<float>(), (std::vector<float>{0, 0, 0, 0}));
}

}  // namespace
}  // namespace tg
