// The stencil fusion pass (passes/fuse_stencil.cpp) and the fused_stencil op: a stencil with its
// elementwise producer, constant weights and elementwise reader becomes one node, which computes
// what the unfused graph does (TG_FUSION=1 forces the passes on the CPU, which runs fused_stencil
// stage by stage) and what float64 references give.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "ops/registry.h"
#include "passes/fusion_test_util.h"
#include "test_util.h"
#include "tg/nn.h"
#include "tg/tg.h"

namespace tg {
namespace {

using testing::count;
using testing::ScopedFusion;

const std::vector<float> kLaplacian = {0, 1, 0, 1, -4, 1, 0, 1, 0};

/// float64 relu(laplacian(x * a + b)) of an [h, w] x with zero padding 1.
std::vector<double> relu_laplacian_reference(const TensorData& x, double a, double b) {
  const int64_t h = x.shape()[0], w = x.shape()[1];
  auto src = [&](int64_t i, int64_t j) {
    if (i < 0 || j < 0 || i >= h || j >= w) return 0.0;
    return x.element_as_double(i * w + j) * a + b;
  };
  std::vector<double> out;
  for (int64_t i = 0; i < h; ++i) {
    for (int64_t j = 0; j < w; ++j) {
      const double v = src(i - 1, j) + src(i + 1, j) + src(i, j - 1) + src(i, j + 1) - 4 * src(i, j);
      out.push_back(std::max(v, 0.0));
    }
  }
  return out;
}

void expect_bitwise_equal(const TensorData& a, const TensorData& b) {
  ASSERT_EQ(a.type(), b.type());
  EXPECT_EQ(std::memcmp(a.storage_ptr(), b.storage_ptr(), a.nbytes()), 0);
}

struct ReluLaplacian {
  Graph g;
  Tensor x, a, b, w, y;
  explicit ReluLaplacian(bool constant_weights) {
    x = g.placeholder({6, 7}, DType::f32, "x");
    a = g.placeholder({}, DType::f32, "a");
    b = g.placeholder({}, DType::f32, "b");
    w = constant_weights ? g.constant(TensorData::from_vector<float>(kLaplacian, {3, 3}))
                         : g.placeholder({3, 3}, DType::f32, "w");
    y = relu(stencil(x * a + b, w, {.explicit_padding = {1, 1, 1, 1}}));
  }
};

TG_COVERS(value, fused_stencil);
TEST(FuseStencil, ReluOfAStencilOfAnAffineSourceIsOneNode) {
  ReluLaplacian m(true);
  TensorData xv = TensorData::random_uniform({6, 7}, -2, 2, 11);
  TensorData av = TensorData::scalar<float>(1.5f), bv = TensorData::scalar<float>(-0.25f);
  const FeedTypes feeds = {{m.x, xv.type()}, {m.a, av.type()}, {m.b, bv.type()}};
  std::vector<TensorData> fused, unfused;
  {
    ScopedFusion f("1");
    Executable exe = m.g.compile(Device::cpu(), feeds, {m.y});
    const std::string text = exe.to_string();
    EXPECT_EQ(count(text, "= fused_stencil("), 1) << text;
    EXPECT_EQ(count(text, "= stencil("), 0) << text;
    EXPECT_EQ(count(text, "= fused_elementwise("), 0) << text;
    EXPECT_EQ(count(text, "= maximum("), 0) << text;
    EXPECT_EQ(count(text, ": f32[3,3]"), 0) << text;  // the weights are folded into the node
    EXPECT_EQ(count(text, "weights=[0,1,0,1,-4,1,0,1,0]"), 1) << text;
    fused = exe.run({xv, av, bv});
  }
  {
    ScopedFusion f("0");
    unfused = m.g.compile(Device::cpu(), feeds, {m.y}).run({xv, av, bv});
  }
  expect_bitwise_equal(fused[0], unfused[0]);
  testing::expect_close(fused[0], relu_laplacian_reference(xv, 1.5, -0.25), {6, 7}, 1e-5);
}

TEST(FuseStencil, RunTimeWeightsStayAnInput) {
  ReluLaplacian m(false);
  TensorData xv = TensorData::random_uniform({6, 7}, -2, 2, 12);
  TensorData av = TensorData::scalar<float>(-0.5f), bv = TensorData::scalar<float>(2.f);
  TensorData wv = TensorData::from_vector<float>(kLaplacian, {3, 3});
  ScopedFusion f("1");
  Executable exe = m.g.compile(Device::cpu(), {{m.x, xv.type()}, {m.a, av.type()}, {m.b, bv.type()}, {m.w, wv.type()}},
                               {m.y});
  const std::string text = exe.to_string();
  EXPECT_EQ(count(text, "= fused_stencil("), 1) << text;
  EXPECT_EQ(count(text, "weights=["), 0) << text;
  testing::expect_close(exe.run({xv, av, bv, wv})[0], relu_laplacian_reference(xv, -0.5, 2), {6, 7}, 1e-5);
}

TEST(FuseStencil, AResultThatIsAlsoReadElsewhereIsNotAnEpilogue) {
  // y = stencil(x * 2), z = y + 1 and y itself are results: the producer fuses, the reader not.
  Graph g;
  Tensor x = g.placeholder({5, 5}, DType::f32, "x");
  Tensor w = g.placeholder({2, 2}, DType::f32, "w");
  Tensor y = stencil(x * 2.0, w, {.reduction = StencilReduction::max});
  Tensor z = y + 1.0;
  TensorData xv = TensorData::random_uniform({5, 5}, -1, 1, 13), wv = TensorData::random_uniform({2, 2}, -1, 1, 14);
  std::vector<TensorData> fused, unfused;
  {
    ScopedFusion f("1");
    Executable exe = g.compile(Device::cpu(), {{x, xv.type()}, {w, wv.type()}}, {y, z});
    const std::string text = exe.to_string();
    EXPECT_EQ(count(text, "= fused_stencil("), 1) << text;
    EXPECT_EQ(count(text, "= fused_elementwise("), 0) << text;
    EXPECT_EQ(count(text, "= add("), 1) << text;
    fused = exe.run({xv, wv});
  }
  {
    ScopedFusion f("0");
    unfused = g.compile(Device::cpu(), {{x, xv.type()}, {w, wv.type()}}, {y, z}).run({xv, wv});
  }
  expect_bitwise_equal(fused[0], unfused[0]);
  expect_bitwise_equal(fused[1], unfused[1]);
  // y[0, 0] = max over the 2x2 window at (0, 0) of 2x.
  const double want = 2 * std::max({xv.element_as_double(0) * wv.element_as_double(0),
                                    xv.element_as_double(1) * wv.element_as_double(1),
                                    xv.element_as_double(5) * wv.element_as_double(2),
                                    xv.element_as_double(6) * wv.element_as_double(3)});
  EXPECT_NEAR(fused[0].element_as_double(0), want, 1e-6);
}

TEST(FuseStencil, SevenPointStencilWithConstantWeightsEqualsTheUnfusedGraph) {
  // A 3x3x3 window with 20 zero weights, periodic boundary, argmax of another window on top
  // (an int32 result no epilogue takes).
  Graph g;
  Tensor x = g.placeholder({6, 7, 8}, DType::f32, "x");
  std::vector<float> w(27, 0.f);
  for (int n : {4, 10, 12, 14, 16, 22}) w[static_cast<size_t>(n)] = 1.f / 6;
  w[13] = -1.f;
  Tensor y = stencil(x, g.constant(TensorData::from_vector<float>(w, {3, 3, 3})),
                     {.explicit_padding = {1, 1, 1, 1, 1, 1}, .boundary_mode = BoundaryMode::periodic});
  TensorData xv = TensorData::random_uniform({6, 7, 8}, -1, 1, 15);
  std::vector<TensorData> fused, unfused;
  {
    ScopedFusion f("1");
    Executable exe = g.compile(Device::cpu(), {{x, xv.type()}}, {y});
    EXPECT_EQ(count(exe.to_string(), "= fused_stencil("), 1) << exe.to_string();
    fused = exe.run({xv});
  }
  {
    ScopedFusion f("0");
    unfused = g.compile(Device::cpu(), {{x, xv.type()}}, {y}).run({xv});
  }
  expect_bitwise_equal(fused[0], unfused[0]);
  // Output (0, 0, 0): the six neighbours wrap around.
  auto at = [&](int64_t i, int64_t j, int64_t k) { return xv.element_as_double(((i + 6) % 6 * 7 + (j + 7) % 7) * 8 + (k + 8) % 8); };
  const double want = (at(-1, 0, 0) + at(1, 0, 0) + at(0, -1, 0) + at(0, 1, 0) + at(0, 0, -1) + at(0, 0, 1)) / 6 - at(0, 0, 0);
  EXPECT_NEAR(fused[0].element_as_double(0), want, 1e-5);
}

TG_COVERS(error, fused_stencil);
TEST(FuseStencil, TypeInferenceChecksTheStages) {
  ir::Node n;
  n.kind = ir::OpKind::fused_stencil;
  ir::FusedStencilAttrs a;
  a.stencil.strides = {1}, a.stencil.dilations = {1}, a.stencil.explicit_padding = {0, 0};
  a.window = {3};
  a.weights = {1, 2};  // 3 taps
  a.prologue.shape = {10};
  a.prologue.outputs = {0};
  a.epilogue.shape = {8};
  a.epilogue.outputs = {0};
  n.attrs = a;
  std::vector<TensorType> in{{{10}, DType::f32}};
  EXPECT_TG_ERROR(ops::infer_types(n, in), ErrorCode::internal, "[fused_stencil] 2 constant weights for window [3]");
  a.weights = {1, 2, 3};
  n.attrs = a;
  std::vector<TensorType> out = ops::infer_types(n, in);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], (TensorType{{8}, DType::f32}));
  a.epilogue.shape = {10};
  n.attrs = a;
  EXPECT_TG_ERROR(ops::infer_types(n, in), ErrorCode::internal, "the epilogue's shape [10] is not the stencil's result");
  a.epilogue.shape = {8};
  a.epilogue.steps = {{ir::OpKind::add, {0, 1}, DType::f32}};
  a.epilogue.outputs = {2};
  n.attrs = a;
  in.push_back({{4}, DType::f32});  // neither [8] nor one element
  EXPECT_TG_ERROR(ops::infer_types(n, in), ErrorCode::internal, "epilogue input f32[4] is neither");
}

}  // namespace
}  // namespace tg
