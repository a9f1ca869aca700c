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


// Weights that live on the GPU (tensorgraph.torch's frozen parameters, shared with PyTorch through
// DLPack) are folded too: their transposes (ONNX Gemm's transB, the layout pass's OIHW -> HWIO)
// and autocast's casts are computed once at compile time, not by a kernel in every run.
TEST(FoldConstants, WeightsOnTheGpuAreCastAndTransposedAtCompileTime) {
  if (Device::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA GPU usable here (or a build without CUDA)";
  const Device gpu = Device::cuda(0);
  Graph g;
  Tensor x = g.placeholder({2, 3}, DType::f32, "x");
  TensorData wv = TensorData::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {4, 3});
  Tensor w = g.constant(wv.to(gpu), "w");
  Tensor y = matmul(x, transpose(w, {1, 0}));
  TensorData xv = TensorData::from_vector<float>({1, 0.5f, -1, 2, 0, 0.25f}, {2, 3});
  for (const ComputePrecision p : {ComputePrecision::f32, ComputePrecision::bf16}) {
    SCOPED_TRACE(p == ComputePrecision::f32 ? "f32" : "bf16");
    Executable exe = g.compile(gpu, {{x, xv.type()}}, {y}, {}, {.precision = p});
    const std::string text = exe.to_string();
    EXPECT_EQ(count_occurrences(text, "= transpose("), 0) << text;
    EXPECT_NE(text.find(p == ComputePrecision::f32 ? "constant() {value=f32[3,4]" : "constant() {value=bf16[3,4]"),
              std::string::npos)
        << text;
    for (int run = 0; run < 2; ++run) {  // the second run replays the recorded CUDA graph
      testing::expect_close(exe.run({xv.to(gpu)})[0].to(Device::cpu()), {-1, 0.5, 2, 3.5, 2.75, 9.5, 16.25, 23}, {2, 4});
    }
  }
  // An NCHW convolution under the layout pass (TG_CHANNELS_LAST=1): its OIHW weights are stored
  // OHWI at compile time (passes::pack_conv_weights; cuDNN reads NHWC data with OHWI filters), so
  // no run permutes them; the data's NCHW -> NHWC and back stay. Values: the CPU's NCHW convolution.
  setenv("TG_CHANNELS_LAST", "1", 1);
  Graph cg;
  TensorData xs = TensorData::random_uniform({1, 4, 9, 7}, -1, 1, 3);
  TensorData ks = TensorData::random_uniform({8, 4, 3, 3}, -1, 1, 4);
  Tensor cx = cg.placeholder(xs.shape(), DType::f32, "x");
  Tensor conv_gpu = conv2d(cx, cg.constant(ks.to(gpu), "k"), {.padding = Padding::explicit_padding, .explicit_padding = {1, 1, 1, 1}, .data_layout = Layout::nchw, .weights_layout = Layout::oihw});
  Executable exe = cg.compile(gpu, {{cx, xs.type()}}, {conv_gpu}, {}, {.precision = ComputePrecision::f32});
  unsetenv("TG_CHANNELS_LAST");
  const std::string text = exe.to_string();
  EXPECT_EQ(count_occurrences(text, "= transpose("), 2) << text;
  EXPECT_NE(text.find("constant() {value=f32[8,3,3,4]"), std::string::npos) << text;
  EXPECT_NE(text.find("weights_layout=ohwi"), std::string::npos) << text;
  Graph ref;
  Tensor rx = ref.placeholder(xs.shape(), DType::f32, "x");
  Tensor conv_cpu = conv2d(rx, ref.constant(ks, "k"), {.padding = Padding::explicit_padding, .explicit_padding = {1, 1, 1, 1}, .data_layout = Layout::nchw, .weights_layout = Layout::oihw});
  TensorData want = ref.compile(Device::cpu(), {{rx, xs.type()}}, {conv_cpu}).run({xs})[0];
  const std::vector<double> expected(want.data<float>(), want.data<float>() + want.num_elements());
  for (int run = 0; run < 2; ++run) {
    testing::expect_close(exe.run({xs.to(gpu)})[0].to(Device::cpu()), expected, {1, 8, 9, 7}, 1e-4, 1e-5);
  }
}

}  // namespace
}  // namespace tg
