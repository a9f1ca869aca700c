// Graph::run: feeds, feed errors naming the placeholder, dynamic dims, the run cache, and
// recovery after a failed run.
#include "runtime/slice_views_check.h"
#include "test_util.h"

namespace tg {
namespace {

using testing::expect_close;
using testing::expect_equal;

// Pass-pipeline runs since `since` (runtime statistics): one per executable Graph::run compiled.
int64_t compiles_since(const RuntimeStats& since) { return runtime_stats().compiles - since.compiles; }

TEST(Run, FeedsAndTargets) {
  Graph g;
  Tensor x = g.placeholder({2, 2}, DType::f64, "x");
  Tensor y = g.placeholder({3}, DType::f32, "y");
  Tensor ex = exp(x);
  Tensor ny = neg(y);
  std::vector<TensorData> out =
      g.run({{x, TensorData::from_vector<double>({0, 1, -1, 2}, {2, 2})},
             {y, TensorData::from_vector<float>({1.5f, -2, 0}, {3})}},
            {ex, ny, ex}, {}, Device::cpu());
  ASSERT_EQ(out.size(), 3u);
  expect_close(out[0], {1, 2.718281828459045, 0.36787944117144233, 7.38905609893065}, {2, 2}, 1e-15);
  expect_equal(out[1], {-1.5, 2, -0}, {3});
  expect_close(out[2], {1, 2.718281828459045, 0.36787944117144233, 7.38905609893065}, {2, 2}, 1e-15);
  EXPECT_EQ(out[0].dtype(), DType::f64);
  EXPECT_EQ(out[1].dtype(), DType::f32);
}

TEST(Run, SlicesOfABlockAreViews) { testing::check_slice_views(Device::cpu(), 2); }

TEST(Run, PlaceholderAndConstantTargetsAndNoFeeds) {
  Graph g;
  Tensor x = g.placeholder({2}, DType::i32, "x");
  Tensor c = g.constant(TensorData::from_vector<float>({4, 9}, {2}));
  TensorData fed = TensorData::from_vector<int32_t>({7, -7}, {2});
  std::vector<TensorData> out = g.run({{x, fed}}, {x, c, sqrt(c)}, {}, Device::cpu());
  expect_equal(out[0], {7, -7}, {2});
  expect_equal(out[1], {4, 9}, {2});
  expect_equal(out[2], {2, 3}, {2});
  expect_equal(g.run({}, {sqrt(c)})[0], {2, 3}, {2});  // default device, no feeds
  EXPECT_TRUE(g.run({}, {}, {}, Device::cpu()).empty());
}

TEST(Run, MissingFeedNamesThePlaceholder) {
  Graph g;
  Tensor x = g.placeholder({2}, DType::f32, "x");
  Tensor w = g.placeholder({2}, DType::f32, "weights");
  Tensor y = exp(w);
  EXPECT_TG_ERROR(g.run({}, {y}, {}, Device::cpu()), ErrorCode::not_found,
                  "placeholder 'weights' (f32[2]) is needed but not fed");
  EXPECT_TG_ERROR(g.run({{x, TensorData::zeros({2})}}, {y}, {}, Device::cpu()), ErrorCode::not_found,
                  "'weights'");
}

TEST(Run, WrongFeedDtypeOrShapeNamesThePlaceholder) {
  Graph g;
  Tensor x = g.placeholder({2, 3}, DType::f32, "input_x");
  Tensor y = exp(x);
  EXPECT_TG_ERROR(g.run({{x, TensorData::zeros({2, 3}, DType::f64)}}, {y}, {}, Device::cpu()),
                  ErrorCode::dtype_mismatch, "placeholder 'input_x' is f32[2,3], fed f64[2,3]");
  EXPECT_TG_ERROR(g.run({{x, TensorData::zeros({3, 2})}}, {y}, {}, Device::cpu()),
                  ErrorCode::shape_mismatch, "placeholder 'input_x' is f32[2,3], fed f32[3,2]");
  EXPECT_TG_ERROR(g.run({{x, TensorData::zeros({6})}}, {y}, {}, Device::cpu()), ErrorCode::shape_mismatch,
                  "'input_x'");
  EXPECT_TG_ERROR(g.run({{x, TensorData()}}, {y}, {}, Device::cpu()), ErrorCode::invalid_argument,
                  "feed for placeholder 'input_x' is empty");
}

TEST(Run, FeedingANonPlaceholderOrTwiceRaises) {
  const RuntimeStats start = runtime_stats();
  Graph g;
  Tensor x = g.placeholder({2}, DType::f32, "x");
  Tensor c = g.constant(TensorData::zeros({2}));
  Tensor y = exp(x);
  TensorData v = TensorData::zeros({2});
  EXPECT_TG_ERROR(g.run({{x, v}, {y, v}}, {y}, {}, Device::cpu()), ErrorCode::invalid_argument,
                  "feed %2 (exp) is not a placeholder");
  EXPECT_TG_ERROR(g.run({{c, v}}, {y}, {}, Device::cpu()), ErrorCode::invalid_argument,
                  "(constant) is not a placeholder");
  EXPECT_TG_ERROR(g.run({{x, v}, {x, v}}, {y}, {}, Device::cpu()), ErrorCode::invalid_argument,
                  "placeholder 'x' is fed twice");
  EXPECT_EQ(compiles_since(start), 0);  // failed compiles are not cached
}

TEST(Run, DynamicDimCompilesOncePerShape) {
  const RuntimeStats start = runtime_stats();
  Graph g;
  Tensor x = g.placeholder({-1, 3}, DType::f32, "x");
  Tensor y = neg(x);
  EXPECT_EQ(y.shape(), (Shape{-1, 3}));
  TensorData a = TensorData::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  std::vector<float> five(15);
  for (int i = 0; i < 15; ++i) five[static_cast<size_t>(i)] = static_cast<float>(i);
  TensorData b = TensorData::from_vector<float>(five, {5, 3});
  expect_equal(g.run({{x, a}}, {y}, {}, Device::cpu())[0], {-1, -2, -3, -4, -5, -6}, {2, 3});
  EXPECT_EQ(compiles_since(start), 1);
  TensorData rb = g.run({{x, b}}, {y}, {}, Device::cpu())[0];
  expect_equal(rb, {-0., -1, -2, -3, -4, -5, -6, -7, -8, -9, -10, -11, -12, -13, -14}, {5, 3});
  EXPECT_EQ(compiles_since(start), 2);
  // Both executables stay cached and correct.
  expect_equal(g.run({{x, a}}, {y}, {}, Device::cpu())[0], {-1, -2, -3, -4, -5, -6}, {2, 3});
  EXPECT_EQ(compiles_since(start), 2);
  EXPECT_TG_ERROR(g.run({{x, TensorData::zeros({2, 4})}}, {y}, {}, Device::cpu()), ErrorCode::shape_mismatch,
                  "placeholder 'x' is f32[?,3], fed f32[2,4]");
  // A zero-sized dynamic dim is a valid feed.
  expect_equal(g.run({{x, TensorData::zeros({0, 3})}}, {y}, {}, Device::cpu())[0], {}, {0, 3});
}

TEST(Run, CacheReusesTheExecutable) {
  Graph g;
  Tensor x = g.placeholder({2}, DType::f32, "x");
  Tensor y = exp(x);
  Tensor z = sqrt(x);
  TensorData v = TensorData::from_vector<float>({0, 4}, {2});
  const RuntimeStats start = runtime_stats();
  g.run({{x, v}}, {y}, {}, Device::cpu());
  EXPECT_EQ(compiles_since(start), 1);
  expect_close(g.run({{x, v}}, {y}, {}, Device::cpu())[0], {1, 54.598150033144236}, {2}, 1e-6);
  EXPECT_EQ(compiles_since(start), 1);
  g.run({{x, v}}, {z}, {}, Device::cpu());  // other targets: another entry
  EXPECT_EQ(compiles_since(start), 2);
  g.run({{x, v}}, {y, z}, {}, Device::cpu());
  EXPECT_EQ(compiles_since(start), 3);
  g.run({{x, TensorData::from_vector<float>({1, 1}, {2})}}, {y}, {}, Device::cpu());  // same types
  EXPECT_EQ(compiles_since(start), 3);
}

TEST(Run, TensorsOfAnotherGraphAreRejected) {
  Graph g1, g2;
  Tensor x1 = g1.placeholder({2}, DType::f32, "x1");
  Tensor y1 = exp(x1);
  Tensor x2 = g2.placeholder({2}, DType::f32, "x2");
  Tensor y2 = neg(x2);  // same node ids as x1 and y1
  TensorData v = TensorData::from_vector<float>({0, 1}, {2});
  expect_close(g1.run({{x1, v}}, {y1}, {}, Device::cpu())[0], {1, 2.718281828459045}, {2});
  // Same ids as the cached entry: must not be served from g1's cache.
  EXPECT_TG_ERROR(g1.run({{x1, v}}, {y2}, {}, Device::cpu()), ErrorCode::invalid_argument,
                  "a target tensor belongs to another graph");
  EXPECT_TG_ERROR(g1.run({{x2, v}}, {y1}, {}, Device::cpu()), ErrorCode::invalid_argument,
                  "a feed belongs to another graph");
  EXPECT_TG_ERROR(g1.run({{x1, v}}, {y1}, {y2.op()}, Device::cpu()), ErrorCode::invalid_argument,
                  "a target operation belongs to another graph");
  EXPECT_TG_ERROR(g1.compile(Device::cpu(), {{x1, v.type()}}, {y2}), ErrorCode::invalid_argument,
                  "[compile] a target tensor belongs to another graph");
  EXPECT_TG_ERROR(g1.compile(Device::cpu(), {{x2, v.type()}}, {y1}), ErrorCode::invalid_argument,
                  "[compile] a feed belongs to another graph");
  EXPECT_TG_ERROR(g1.run({}, {Tensor()}, {}, Device::cpu()), ErrorCode::invalid_argument,
                  "a target tensor is empty");
}

TEST(Run, FailedRunLeavesTheGraphUsable) {
  const RuntimeStats start = runtime_stats();
  Graph g;
  Tensor x = g.placeholder({2}, DType::f32, "x");
  Tensor y = sqrt(x);
  EXPECT_TG_ERROR(g.run({}, {y}, {}, Device::cpu()), ErrorCode::not_found, "'x'");
  EXPECT_TG_ERROR(g.run({{x, TensorData::zeros({3})}}, {y}, {}, Device::cpu()), ErrorCode::shape_mismatch, "'x'");
  EXPECT_EQ(compiles_since(start), 0);
  Tensor z = neg(y);  // the graph can still grow
  std::vector<TensorData> out = g.run({{x, TensorData::from_vector<float>({9, 16}, {2})}}, {y, z}, {}, Device::cpu());
  expect_equal(out[0], {3, 4}, {2});
  expect_equal(out[1], {-3, -4}, {2});
  EXPECT_EQ(compiles_since(start), 1);
}

TEST(Run, TensorToString) {
  Graph g;
  Tensor x = g.placeholder({2, 3}, DType::f32, "x");
  Tensor y = exp(x);
  Tensor b = is_nan(y);
  EXPECT_EQ(x.to_string(), "%0:0 f32[2,3]");
  EXPECT_EQ(y.to_string(), "%1:0 f32[2,3]");
  EXPECT_EQ(b.to_string(), "%2:0 bool[2,3]");
  EXPECT_EQ(y.rank(), 2);
  EXPECT_EQ(y.type(), (TensorType{{2, 3}, DType::f32}));
  EXPECT_EQ(y.op().kind_name(), "exp");
  EXPECT_EQ(y.op().name(), "");
  EXPECT_EQ(x.op().name(), "x");
}

TEST(Run, PlaceholderRejectsDimsBelowMinusOne) {
  Graph g;
  EXPECT_TG_ERROR(g.placeholder({2, -2}, DType::f32, "bad"), ErrorCode::invalid_argument,
                  "[placeholder] 'bad' has invalid dim -2 in [2,-2] (use -1 for dynamic)");
}

}  // namespace
}  // namespace tg
