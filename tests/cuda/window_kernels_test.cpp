// The CUDA kernels of issue 18 against the CPU backend, bit for bit: the generated tiled stencil
// kernel (interior tiles read directly, border tiles through the boundary mode, several tiles a
// block, register blocking along y and z), max pooling over contiguous planes through it, and the
// gathers that check their indices where the copy reads them (first bad position reported after
// the run, also from a replayed CUDA graph). Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

#include "test_util.h"
#include "tg/nn.h"
#include "tg/tg.h"

namespace tg {
namespace {

#define TG_NEEDS_GPU() \
  if (Device::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA GPU usable here (or a build without CUDA)"

// Runs `build` on placeholders fed with `inputs` on `device` (twice: the second run replays the
// recorded CUDA graph) and returns the second run's results on the host.
using GraphBuild = std::function<std::vector<Tensor>(Graph&, const std::vector<Tensor>&)>;

// `build` on placeholders of `inputs`' types, compiled for `device`.
Executable compile_on(Device device, const std::vector<TensorData>& inputs, const GraphBuild& build) {
  Graph g;
  std::vector<Tensor> in;
  FeedTypes feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    in.push_back(g.placeholder(inputs[i].shape(), inputs[i].dtype(), "in" + std::to_string(i)));
    feeds.push_back({in.back(), inputs[i].type()});
  }
  return g.compile(device, feeds, build(g, in));
}

std::vector<TensorData> run_on(Device device, const std::vector<TensorData>& inputs, const GraphBuild& build) {
  Executable exe = compile_on(device, inputs, build);
  exe.run(inputs);
  std::vector<TensorData> out;
  for (TensorData& t : exe.run(inputs)) out.push_back(t.to(Device::cpu()));
  return out;
}

std::vector<TensorData> run_on(Device device, const std::vector<TensorData>& inputs,
                               const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& build) {
  return run_on(device, inputs, GraphBuild([&](Graph&, const std::vector<Tensor>& in) { return build(in); }));
}

void expect_bitwise_equal(const TensorData& a, const TensorData& b) {
  ASSERT_EQ(a.type(), b.type());
  const size_t n = a.nbytes();
  int64_t first = -1, count = 0;
  const auto* pa = static_cast<const unsigned char*>(a.storage_ptr());
  const auto* pb = static_cast<const unsigned char*>(b.storage_ptr());
  const size_t es = dtype_size(a.dtype());
  for (size_t i = 0; i < n; i += es) {
    if (std::memcmp(pa + i, pb + i, es) != 0) {
      if (first < 0) first = static_cast<int64_t>(i / es);
      ++count;
    }
  }
  EXPECT_EQ(count, 0) << "first difference at element " << first << ": cuda " << a.element_as_double(first)
                      << ", cpu " << b.element_as_double(first);
}

void expect_same_on_cuda_and_cpu(const std::vector<TensorData>& inputs, const GraphBuild& build) {
  std::vector<TensorData> gpu = run_on(Device::cuda(0), inputs, build);
  std::vector<TensorData> cpu = run_on(Device::cpu(), inputs, build);
  ASSERT_EQ(gpu.size(), cpu.size());
  for (size_t i = 0; i < gpu.size(); ++i) expect_bitwise_equal(gpu[i], cpu[i]);
}

void expect_same_on_cuda_and_cpu(const std::vector<TensorData>& inputs,
                                 const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& build) {
  expect_same_on_cuda_and_cpu(inputs, GraphBuild([&](Graph&, const std::vector<Tensor>& in) { return build(in); }));
}

TEST(CudaWindowKernels, LaplacianReflectEqualsTheCpu) {
  TG_NEEDS_GPU();
  TensorData x = TensorData::random_uniform({2, 300, 260}, -1, 1, 1);  // partial 32 x 64 tiles
  TensorData w = TensorData::from_vector<float>({0, 1, 0, 1, -4, 1, 0, 1, 0}, {3, 3});
  expect_same_on_cuda_and_cpu({x, w}, [](const std::vector<Tensor>& in) {
    return std::vector{stencil(in[0], in[1], {.explicit_padding = {1, 1, 1, 1}, .boundary_mode = BoundaryMode::reflect})};
  });
}

TEST(CudaWindowKernels, ThreeDimensionalWindowsEqualTheCpu) {
  TG_NEEDS_GPU();
  // 3x3x3 with zero boundary: several z outputs and y outputs a thread (rows of 66: the march;
  // of 68 and 136 with a reflect boundary: the column march, every tap of run-time weights, border
  // tiles and partial tiles); then a [5, 1, 1] channel window (local response normalization's sum)
  // with a periodic boundary.
  for (int64_t cols : {66, 68, 136}) {
    TensorData x = TensorData::random_uniform({40, 70, cols}, -1, 1, 2);
    TensorData w = TensorData::random_uniform({3, 3, 3}, -1, 1, 3);
    const BoundaryMode mode = cols == 136 ? BoundaryMode::reflect : BoundaryMode::zero;
    expect_same_on_cuda_and_cpu({x, w}, [mode](const std::vector<Tensor>& in) {
      return std::vector{stencil(in[0], in[1], {.explicit_padding = {1, 1, 1, 1, 1, 1}, .boundary_mode = mode})};
    });
  }
  TensorData c = TensorData::random_uniform({2, 20, 10, 70}, -1, 1, 4);
  TensorData ones = TensorData::full({5, 1, 1}, DType::f32, 1.0);
  expect_same_on_cuda_and_cpu({c, ones}, [](const std::vector<Tensor>& in) {
    return std::vector{stencil(in[0] * in[0], in[1],
                               {.explicit_padding = {2, 2, 0, 0, 0, 0}, .boundary_mode = BoundaryMode::periodic})};
  });
}

TEST(CudaWindowKernels, MaxPoolOverPlanesEqualsTheCpu) {
  TG_NEEDS_GPU();
  TensorData x = TensorData::random_uniform({2, 3, 200, 90}, -1, 1, 5);  // >= 128 rows: 4 x 16 a thread
  expect_same_on_cuda_and_cpu({x}, [](const std::vector<Tensor>& in) {
    Pool2dDesc s1{.kernel_size = {3, 3},
                  .strides = {1, 1},
                  .padding = Padding::explicit_padding,
                  .explicit_padding = {1, 1, 1, 1},
                  .data_layout = Layout::nchw};
    Pool2dDesc s2{.kernel_size = {3, 2}, .strides = {2, 2}, .dilations = {2, 1}, .ceil_mode = true,
                  .data_layout = Layout::nchw};
    return std::vector{max_pool2d(in[0], s1), max_pool2d(in[0], s2)};
  });
}

TEST(CudaWindowKernels, GatherChecksIndicesWhereTheCopyReadsThem) {
  TG_NEEDS_GPU();
  TensorData table = TensorData::random_uniform({1000, 64}, -1, 1, 6);
  TensorData good = TensorData::from_vector<int64_t>({5, -1, 999, 0, -1000, 17}, {6});
  TensorData bad = TensorData::from_vector<int64_t>({5, -1, 1000, 0, -1001, 17}, {6});
  auto build = [](const std::vector<Tensor>& in) { return std::vector{gather(in[0], in[1])}; };
  expect_same_on_cuda_and_cpu({table, good}, build);
  for (Device d : {Device::cpu(), Device::cuda(0)}) {
    EXPECT_TG_ERROR(run_on(d, {table, bad}, build), ErrorCode::out_of_range,
                    "[gather] index 1000 at indices position [2] is out of range for dim 0 of x (size 1000");
  }
}

TEST(CudaWindowKernels, GatherNdChecksEveryComponent) {
  TG_NEEDS_GPU();
  TensorData x = TensorData::random_uniform({3, 20, 30, 16}, -1, 1, 7);
  std::vector<int32_t> idx(3 * 50 * 2);
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int32_t>((i * 7919) % 20) - (i % 3 == 0 ? 20 : 0);
  TensorData good = TensorData::from_vector<int32_t>(idx, {3, 50, 2});
  auto build = [](const std::vector<Tensor>& in) { return std::vector{gather_nd(in[0], in[1], {.batch_dims = 1})}; };
  expect_same_on_cuda_and_cpu({x, good}, build);
  idx[2 * 50 * 2 + 7 * 2 + 1] = 30;  // batch 2, tuple 7, x component: past the dim of 30
  idx[2 * 50 * 2 + 9 * 2 + 1] = 31;  // a later one: the first is reported
  TensorData bad = TensorData::from_vector<int32_t>(idx, {3, 50, 2});
  for (Device d : {Device::cpu(), Device::cuda(0)}) {
    EXPECT_TG_ERROR(run_on(d, {x, bad}, build), ErrorCode::out_of_range,
                    "[gather_nd] index 30 at indices position [2,7,1] is out of range for dim 2 of x (size 30");
  }
}

// Occurrences of `what` in `text`.
int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

TEST(CudaWindowKernels, FusedReluStencilIsOneKernelAndEqualsTheUnfusedGraph) {
  TG_NEEDS_GPU();
  // relu(stencil(x * a + b)) with constant weights (zero corners skipped) and with run-time
  // weights: on CUDA one fused_stencil node, the only kernel of the executable; values bit for bit
  // the CPU's unfused graph (the CPU backend does not fuse).
  TensorData x = TensorData::random_uniform({2, 300, 260}, -1, 1, 21);
  TensorData a = TensorData::scalar<float>(1.75f), b = TensorData::scalar<float>(-0.125f);
  TensorData w = TensorData::from_vector<float>({0, 1, 0, 1, -4, 1, 0, 1, 0}, {3, 3});
  for (const bool constant : {true, false}) {
    SCOPED_TRACE(constant ? "constant weights" : "run-time weights");
    std::vector<TensorData> inputs{x, a, b};
    if (!constant) inputs.push_back(w);
    GraphBuild build = [&](Graph& graph, const std::vector<Tensor>& in) {
      Tensor weights = constant ? graph.constant(w) : in[3];
      return std::vector{relu(stencil(in[0] * in[1] + in[2], weights,
                                          {.explicit_padding = {1, 1, 1, 1}, .boundary_mode = BoundaryMode::reflect}))};
    };
    const std::string text = compile_on(Device::cuda(0), inputs, build).to_string();
    EXPECT_EQ(count(text, "= fused_stencil("), 1) << text;
    // Besides placeholders only relu's scalar 0 (a constant: uploaded once, no kernel) and, with
    // constant weights, no [3,3] constant: they are folded into the kernel.
    for (const char* op : {"= stencil(", "= fused_elementwise(", "= maximum(", "= mul(", "= add(", "= select("}) {
      EXPECT_EQ(count(text, op), 0) << op << " in\n" << text;
    }
    EXPECT_EQ(count(text, "= constant() {value=f32[] {0}} : f32[]"), 1) << text;
    EXPECT_EQ(count(text, "= constant("), 1) << text;
    EXPECT_EQ(count(text, "weights=[0,1,0,1,-4,1,0,1,0]"), constant ? 1 : 0) << text;
    expect_same_on_cuda_and_cpu(inputs, build);
  }
}

TEST(CudaWindowKernels, SevenPointStencilWithConstantWeightsEqualsTheCpu) {
  TG_NEEDS_GPU();
  // A 7-point stencil written as a 3x3x3 window of constants: the fused kernel skips its 20 zero
  // taps. A block of zeros of random signs makes outputs whose 7 taps give -0, which are folded
  // again over all 27 taps (the unfused result is +0 unless every term is -0). Rows of 66: the
  // march; of 68: the column march.
  for (int64_t cols : {66, 68}) {
    TensorData x = TensorData::random_uniform({40, 70, cols}, -1, 1, 22);
    float* v = x.data<float>();
    std::mt19937 rng(5);
    for (int64_t z = 0; z < 12; ++z)
      for (int64_t y = 0; y < 12; ++y)
        for (int64_t i = 0; i < 12; ++i) v[(z * 70 + y) * cols + i] = (rng() & 1) ? -0.f : 0.f;
    std::vector<float> w(27, 0.f);
    for (int n : {4, 10, 12, 14, 16, 22}) w[static_cast<size_t>(n)] = 0.5f;
    w[13] = 3.f;  // positive: +0 * 3 = +0, so -0 results need -0 everywhere
    expect_same_on_cuda_and_cpu({x}, GraphBuild([&](Graph& graph, const std::vector<Tensor>& in) {
      Tensor c = graph.constant(TensorData::from_vector<float>(w, {3, 3, 3}));
      return std::vector{stencil(in[0], c, {.explicit_padding = {1, 1, 1, 1, 1, 1}})};
    }));
  }
}

// f32 results equal bit for bit, except that any two NaNs count as equal (the CPU's and the GPU's
// inf * 0 differ in sign bit and payload).
void expect_equal_nans_alike(const std::vector<TensorData>& inputs,
                             const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& build) {
  const GraphBuild b([&](Graph&, const std::vector<Tensor>& in) { return build(in); });
  std::vector<TensorData> gpu = run_on(Device::cuda(0), inputs, b), cpu = run_on(Device::cpu(), inputs, b);
  ASSERT_EQ(gpu.size(), cpu.size());
  for (size_t i = 0; i < gpu.size(); ++i) {
    ASSERT_EQ(gpu[i].type(), cpu[i].type());
    const float* g = gpu[i].data<float>();
    const float* c = cpu[i].data<float>();
    int64_t count = 0, first = -1, nans = 0;
    for (int64_t e = 0; e < gpu[i].num_elements(); ++e) {
      if (std::isnan(g[e]) && std::isnan(c[e])) {
        ++nans;
        continue;
      }
      if (std::memcmp(&g[e], &c[e], sizeof(float)) != 0 && count++ == 0) first = e;
    }
    EXPECT_EQ(count, 0) << "first difference at element " << first << ": cuda " << g[first] << ", cpu " << c[first];
    EXPECT_GT(nans, 0) << "the case should make NaNs (an inf in a skipped tap)";
  }
}

TEST(CudaWindowKernels, RunTimeZeroWeightsAreSkippedExactly) {
  TG_NEEDS_GPU();
  // Weights fed at run time, 20 of 27 (4 of 9) of them +-0. Zeros of random signs (outputs whose
  // nonzero-weight taps are all -0), infs and a NaN (inf * 0 = NaN in a zero-weight tap); rows of
  // 68 floats take the column march (the 7-point star chosen at run time; 3-D) or the cp.async
  // ring's 16-byte copies (2-D), rows of 66 single-element copies. The second
  // pass turns on run-time zero-tap skipping (TG_STENCIL_TILE's skip field; off by default, measured
  // slower): the kernel leaves out the taps of weight +-0 (read at launch) and folds again where
  // that could change a result.
  const char* outer = std::getenv("TG_STENCIL_TILE");  // restored after (tuning runs set it)
  const std::string saved = outer != nullptr ? outer : "";
  for (const char* tile : {"", ",,,,,,2"}) {
    if (*tile) setenv("TG_STENCIL_TILE", tile, 1);
    for (int64_t cols : {68, 66}) {
      TensorData x = TensorData::random_uniform({20, 70, cols}, -1, 1, 23);
      float* v = x.data<float>();
      std::mt19937 rng(6);
      for (int64_t z = 0; z < 10; ++z)
        for (int64_t y = 0; y < 12; ++y)
          for (int64_t i = 0; i < 12; ++i) v[(z * 70 + y) * cols + i] = (rng() & 1) ? -0.f : 0.f;
      v[(5 * 70 + 30) * cols + 40] = INFINITY;
      v[(12 * 70 + 66) * cols + 3] = -INFINITY;
      v[(15 * 70 + 2) * cols + 60] = NAN;
      std::vector<float> w(27, 0.f);
      for (int n : {4, 10, 12, 14, 16, 22}) w[static_cast<size_t>(n)] = 0.5f;
      w[13] = 3.f;
      w[0] = -0.f;
      TensorData wt = TensorData::from_vector<float>(w, {3, 3, 3});
      expect_equal_nans_alike({x, wt}, [](const std::vector<Tensor>& in) {
        return std::vector{stencil(in[0], in[1], {.explicit_padding = {1, 1, 1, 1, 1, 1}})};
      });
      // 2-D: the 5-point Laplacian as a 3x3 window, reflect boundary, tall tiles.
      TensorData x2 = TensorData::random_uniform({300, cols * 2}, -1, 1, 24);
      float* v2 = x2.data<float>();
      for (int64_t y = 0; y < 20; ++y)
        for (int64_t i = 0; i < 40; ++i) v2[y * cols * 2 + i] = (rng() & 1) ? -0.f : 0.f;
      v2[150 * cols * 2 + 77] = INFINITY;
      TensorData lap = TensorData::from_vector<float>({0, 1, 0, 1, -4, 1, -0.f, 1, 0}, {3, 3});
      expect_equal_nans_alike({x2, lap}, [](const std::vector<Tensor>& in) {
        return std::vector{
            stencil(in[0], in[1],
                    {.explicit_padding = {1, 1, 1, 1}, .boundary_mode = BoundaryMode::reflect})};
      });
    }
    if (outer != nullptr) {
      setenv("TG_STENCIL_TILE", saved.c_str(), 1);
    } else {
      unsetenv("TG_STENCIL_TILE");
    }
  }
}

}  // namespace
}  // namespace tg
