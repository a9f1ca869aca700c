// Constant folding of casts and transposes of constants (passes/fold_constants.cpp): a model's
// weights are cast to the compute precision and transposed once, at compile time.
#include <cstdlib>

#include "test_util.h"

namespace tg {
namespace {

using testing::count_occurrences;

// The fusing pipeline (as on CUDA) on the CPU.
struct FusionOn {
  FusionOn() { setenv("TG_FUSION", "1", 1); }
  ~FusionOn() { unsetenv("TG_FUSION"); }
};

TEST(FoldConstants, WeightsAreCastAndTransposedAtCompileTime) {
  FusionOn fusion;
  Graph g;
  Tensor x = g.placeholder({2, 3}, DType::f32, "x");
  // Gemm with transB as an ONNX import makes it: the weight stored [out, in], transposed.
  Tensor w = g.constant(TensorData::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {4, 3}), "w");
  Tensor y = matmul(x, transpose(w, {1, 0}));
  TensorData xv = TensorData::from_vector<float>({1, 0.5f, -1, 2, 0, 0.25f}, {2, 3});
  // f32: the transpose is folded.
  Executable f32 = g.compile(Device::cpu(), {{x, xv.type()}}, {y});
  EXPECT_EQ(count_occurrences(f32.to_string(), "= transpose("), 0) << f32.to_string();
  testing::expect_close(f32.run({xv})[0], {-1, 0.5, 2, 3.5, 2.75, 9.5, 16.25, 23}, {2, 4});
  // bf16 (autocast casts the weight to bf16 for the matmul): the cast is folded too; the values
  // are those of bf16 operands (exact here: small integers and halves).
  Executable low = g.compile(Device::cpu(), {{x, xv.type()}}, {y}, {}, {.precision = ComputePrecision::bf16});
  const std::string text = low.to_string();
  EXPECT_EQ(count_occurrences(text, "= transpose("), 0) << text;
  EXPECT_NE(text.find("constant() {value=bf16[3,4]"), std::string::npos) << text;  // the weight, cast
  EXPECT_EQ(count_occurrences(text, "= cast("), 2) << text;  // x's cast (it is fed) and the result's widening stay
  testing::expect_close(low.run({xv})[0], {-1, 0.5, 2, 3.5, 2.75, 9.5, 16.25, 23}, {2, 4});
}

TEST(FoldConstants, ValuesComputedPerRunStayInTheGraph) {
  FusionOn fusion;
  Graph g;
  Tensor x = g.placeholder({2, 2}, DType::f32, "x");
  Tensor v = g.variable(TensorData::from_vector<float>({1, 2, 3, 4}, {2, 2}), "v");
  Tensor y = transpose(v, {1, 0}) + transpose(x, {1, 0});  // a variable and a feed: not constants
  Executable exe = g.compile(Device::cpu(), {{x, {{2, 2}, DType::f32}}}, {y});
  EXPECT_EQ(count_occurrences(exe.to_string(), "= transpose("), 2) << exe.to_string();
  testing::expect_equal(exe.run({TensorData::from_vector<float>({10, 20, 30, 40}, {2, 2})})[0], {11, 33, 22, 44},
                        {2, 2});
}

}  // namespace
}  // namespace tg
