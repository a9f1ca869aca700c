// Graph::compile and Executable: explicit feed types, input validation, dead-code elimination
// (data and control edges), options, and concurrent runs.
#include <thread>

#include "ir/graph.h"
#include "test_util.h"

namespace tg {
namespace {

using testing::expect_close;
using testing::expect_equal;

struct TwoInputs {
  Graph g;
  Tensor x, y, ex, ny;
  TwoInputs() {
    x = g.placeholder({2, -1}, DType::f32, "x");
    y = g.placeholder({3}, DType::f64, "y");
    ex = exp(x);
    ny = neg(y);
  }
};

TEST(Compile, ExplicitFeedTypesAndRunInFeedOrder) {
  TwoInputs t;
  // Feed order y, x: run takes inputs in that order.
  Executable exe = t.g.compile(Device::cpu(), {{t.y, {{3}, DType::f64}}, {t.x, {{2, 2}, DType::f32}}},
                               {t.ny, t.ex});
  ASSERT_TRUE(exe.valid());
  EXPECT_EQ(exe.device(), Device::cpu());
  EXPECT_EQ(exe.input_types(), (std::vector<TensorType>{{{3}, DType::f64}, {{2, 2}, DType::f32}}));
  EXPECT_EQ(exe.output_types(), (std::vector<TensorType>{{{3}, DType::f64}, {{2, 2}, DType::f32}}));
  std::vector<TensorData> out = exe.run({TensorData::from_vector<double>({1, -2, 0.5}, {3}),
                                         TensorData::from_vector<float>({0, 1, 2, -1}, {2, 2})});
  ASSERT_EQ(out.size(), 2u);
  expect_equal(out[0], {-1, 2, -0.5}, {3});
  expect_close(out[1], {1, 2.718281828459045, 7.38905609893065, 0.36787944117144233}, {2, 2});
  // Runs again with other values.
  out = exe.run({TensorData::from_vector<double>({3, 3, 3}, {3}), TensorData::zeros({2, 2})});
  expect_equal(out[0], {-3, -3, -3}, {3});
  expect_equal(out[1], {1, 1, 1, 1}, {2, 2});
}

TEST(Compile, ExecutableRunValidatesInputs) {
  TwoInputs t;
  Executable exe = t.g.compile(Device::cpu(), {{t.x, {{2, 2}, DType::f32}}, {t.y, {{3}, DType::f64}}},
                               {t.ex, t.ny});
  TensorData xv = TensorData::zeros({2, 2}), yv = TensorData::zeros({3}, DType::f64);
  EXPECT_TG_ERROR(exe.run({xv}), ErrorCode::not_found, "[run] executable takes 2 inputs, got 1");
  EXPECT_TG_ERROR(exe.run({xv, yv, yv}), ErrorCode::not_found, "takes 2 inputs, got 3");
  EXPECT_TG_ERROR(exe.run({yv, xv}), ErrorCode::dtype_mismatch, "[run] placeholder 'x' expects f32[2,2], got f64[3]");
  EXPECT_TG_ERROR(exe.run({TensorData::zeros({2, 3}), yv}), ErrorCode::shape_mismatch,
                  "placeholder 'x' expects f32[2,2], got f32[2,3]");
  EXPECT_TG_ERROR(exe.run({xv, TensorData::zeros({1, 3}, DType::f64)}), ErrorCode::shape_mismatch,
                  "placeholder 'y' expects f64[3], got f64[1,3]");
  EXPECT_TG_ERROR(exe.run({xv, TensorData()}), ErrorCode::invalid_argument, "input 1 ('y') is empty");
  EXPECT_NO_THROW(exe.run({xv, yv}));
  Executable none;
  EXPECT_FALSE(none.valid());
  EXPECT_TG_ERROR(none.run({}), ErrorCode::invalid_argument, "empty Executable");
  EXPECT_TG_ERROR(none.input_types(), ErrorCode::invalid_argument, "[executable]");
}

TEST(Compile, FeedTypeErrors) {
  TwoInputs t;
  EXPECT_TG_ERROR(t.g.compile(Device::cpu(), {{t.x, {{2, 2}, DType::f32}}}, {t.ex, t.ny}), ErrorCode::not_found,
                  "[compile] placeholder 'y' (f64[3]) is needed but not fed");
  EXPECT_TG_ERROR(t.g.compile(Device::cpu(), {{t.x, {{3, 2}, DType::f32}}}, {t.ex}), ErrorCode::shape_mismatch,
                  "placeholder 'x' is f32[2,?], fed f32[3,2]");
  EXPECT_TG_ERROR(t.g.compile(Device::cpu(), {{t.x, {{2, -1}, DType::f32}}}, {t.ex}), ErrorCode::shape_mismatch,
                  "fed f32[2,?] (a varying dim (-1 or a symbol) compiles once for every size only with "
                  "CompileOptions::disable_type_inference");  // feed types must be static
  EXPECT_TG_ERROR(t.g.compile(Device::cpu(), {{t.x, {{2, 2}, DType::f16}}}, {t.ex}), ErrorCode::dtype_mismatch,
                  "placeholder 'x' is f32[2,?], fed f16[2,2]");
  EXPECT_TG_ERROR(t.g.compile(Device::cpu(), {{t.ex, {{2, 2}, DType::f32}}}, {t.ex}), ErrorCode::invalid_argument,
                  "feed %2 (exp) is not a placeholder");
  EXPECT_TG_ERROR(t.g.compile(Device::cuda(99), {{t.x, {{2, 2}, DType::f32}}}, {t.ex}), ErrorCode::unsupported,
                  "cuda:99");
}

TEST(Compile, HandlesMadeFromRawIdsAreChecked) {
  TwoInputs t;
  Tensor bogus(t.g.impl(), 99, 0), bad_index(t.g.impl(), t.ex.node_id(), 1);
  EXPECT_TG_ERROR(t.g.compile(Device::cpu(), {{t.x, {{2, 2}, DType::f32}}}, {bogus}), ErrorCode::invalid_argument,
                  "a target tensor refers to %99:0, which is not in the graph");
  EXPECT_TG_ERROR(t.g.run({{t.x, TensorData::zeros({2, 2})}}, {bad_index}, {}, Device::cpu()),
                  ErrorCode::invalid_argument, "%2:1");
  EXPECT_TG_ERROR(t.g.compile(Device::cpu(), {{bogus, {{2}, DType::f32}}}, {t.ex}), ErrorCode::invalid_argument,
                  "a feed refers to %99:0");
  EXPECT_TG_ERROR(t.g.compile(Device::cpu(), {{t.x, {{2, 2}, DType::f32}}}, {}, {Operation(t.g.impl(), -1)}),
                  ErrorCode::invalid_argument, "a target operation refers to %-1:0");
}

TEST(Compile, TypesAreInferredForTheFeeds) {
  Graph g;
  Tensor x = g.placeholder({-1, -1}, DType::f32, "x");
  Tensor y = is_nan(sqrt(x));
  EXPECT_EQ(y.type(), (TensorType{{-1, -1}, DType::bool_}));
  Executable exe = g.compile(Device::cpu(), {{x, {{1, 3}, DType::f32}}}, {y});
  EXPECT_EQ(exe.output_types(), (std::vector<TensorType>{{{1, 3}, DType::bool_}}));
  EXPECT_EQ(exe.to_string(),
            "%0 = placeholder() : f32[1,3]  # x\n"
            "%1 = sqrt(%0) : f32[1,3]\n"
            "%2 = is_nan(%1) : bool[1,3]\n");
  expect_equal(exe.run({TensorData::from_vector<float>({4, -1, 0}, {1, 3})})[0], {0, 1, 0}, {1, 3});
  EXPECT_EQ(y.shape(), (Shape{-1, -1}));  // the user's graph keeps its dynamic types
}

TEST(Compile, DeadCodeIsRemoved) {
  Graph g;
  Tensor x = g.placeholder({2}, DType::f32, "x");
  Tensor unused = g.placeholder({2}, DType::f32, "unused");
  Tensor a = exp(x);
  neg(x);          // not reached
  sqrt(unused);    // not reached
  Tensor c = sqrt(a);
  g.constant(1.0); // not reached
  Executable exe = g.compile(Device::cpu(), {{x, {{2}, DType::f32}}}, {c});
  EXPECT_EQ(exe.to_string(),
            "%0 = placeholder() : f32[2]  # x\n"
            "%1 = exp(%0) : f32[2]\n"
            "%2 = sqrt(%1) : f32[2]\n");
  expect_close(exe.run({TensorData::from_vector<float>({0, 2}, {2})})[0], {1, 2.718281828459045}, {2});
  // A fed placeholder is kept (it is an input) even when no target reads it.
  Executable exe2 = g.compile(Device::cpu(), {{x, {{2}, DType::f32}}, {unused, {{2}, DType::f32}}}, {c});
  EXPECT_EQ(exe2.input_types().size(), 2u);
  EXPECT_NE(exe2.to_string().find("# unused"), std::string::npos);
  EXPECT_EQ(exe2.to_string().find("neg"), std::string::npos);
}

TEST(Compile, NodeReachedOnlyThroughAControlInputIsKept) {
  Graph g;
  Tensor x = g.placeholder({2}, DType::f32, "x");
  Tensor side = exp(x);  // nothing reads it
  neg(x);                // dead
  g.impl()->push_control_scope({side.node_id()});
  Tensor y = sqrt(x);
  g.impl()->pop_control_scope();
  Executable exe = g.compile(Device::cpu(), {{x, {{2}, DType::f32}}}, {y});
  EXPECT_EQ(exe.to_string(),
            "%0 = placeholder() : f32[2]  # x\n"
            "%1 = exp(%0) : f32[2]\n"
            "%2 = sqrt(%0) after(%1) : f32[2]\n");
  expect_equal(exe.run({TensorData::from_vector<float>({4, 9}, {2})})[0], {2, 3}, {2});
}

TEST(Compile, TargetOperationsAreKeptAndRun) {
  Graph g;
  Tensor x = g.placeholder({2}, DType::f32, "x");
  Tensor a = exp(x);
  Tensor b = neg(x);
  Executable exe = g.compile(Device::cpu(), {{x, {{2}, DType::f32}}}, {b}, {a.op()});
  EXPECT_EQ(exe.to_string(),
            "%0 = placeholder() : f32[2]  # x\n"
            "%1 = exp(%0) : f32[2]\n"
            "%2 = neg(%0) : f32[2]\n");
  EXPECT_EQ(exe.output_types().size(), 1u);
  // Only target operations, no target tensors: runs and returns nothing.
  std::vector<TensorData> out = g.run({{x, TensorData::zeros({2})}}, {}, {a.op()}, Device::cpu());
  EXPECT_TRUE(out.empty());
}

TEST(Compile, ValuesWithSeveralReadersAndTargetsThatAreAlsoRead) {
  Graph g;
  Tensor x = g.placeholder({3}, DType::f64, "x");
  Tensor a = exp(x);
  Tensor b = neg(a);
  Tensor c = sqrt(a);  // a's last reader
  Tensor d = neg(b);
  // a is a target and read later: it must not be released; b is read by d.
  std::vector<TensorData> out = g.run({{x, TensorData::from_vector<double>({0, 2, -2}, {3})}},
                                      {a, d, c, b}, {}, Device::cpu());
  const double e2 = 7.38905609893065, em2 = 0.1353352832366127;
  expect_close(out[0], {1, e2, em2}, {3}, 1e-14);
  expect_close(out[1], {1, e2, em2}, {3}, 1e-14);
  expect_close(out[2], {1, 2.718281828459045, 0.36787944117144233}, {3}, 1e-14);
  expect_close(out[3], {-1, -e2, -em2}, {3}, 1e-14);
}

TEST(Compile, ExecutableRunsConcurrently) {
  Graph g;
  Tensor x = g.placeholder({4}, DType::f64, "x");
  Tensor y = neg(sqrt(x));
  Executable exe = g.compile(Device::cpu(), {{x, {{4}, DType::f64}}}, {y});
  std::vector<std::thread> threads;
  std::vector<std::vector<double>> results(4);
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      double v = (i + 1) * (i + 1);
      for (int rep = 0; rep < 50; ++rep) {
        results[static_cast<size_t>(i)] =
            exe.run({TensorData::full({4}, DType::f64, v)})[0].to_vector<double>();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(results[static_cast<size_t>(i)], std::vector<double>(4, -(i + 1.0))) << i;
  }
}

}  // namespace
}  // namespace tg
