// Determinism (issue 19): with CompileOptions::deterministic (or TG_DETERMINISTIC=1) a training
// step of a small convolutional network (convolutions forward and backward, a matmul, reductions)
// gives bit-identical loss and gradients across runs, across executables compiled again, and
// across processes (this test binary run again with TG_DETERMINISTIC=1 writes its results to a
// file). CPU and, when there is one, cuda:0.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "reliability_util.h"
#include "test_util.h"
#include "tg/tg.h"

namespace tg {
namespace {

using testing::bit_identical;

// loss and the gradients of a conv - relu - conv - mean - matmul network, for fixed inputs.
std::vector<TensorData> conv_step(Device dev, bool deterministic) {
  Graph g;
  Tensor x = g.placeholder({8, 16, 16, 4}, DType::f32, "x");
  Tensor w1 = g.placeholder({3, 3, 4, 16}, DType::f32, "w1");
  Tensor w2 = g.placeholder({3, 3, 16, 16}, DType::f32, "w2");
  Tensor w3 = g.placeholder({16, 10}, DType::f32, "w3");
  Tensor h = relu(conv2d(x, w1, {.padding = Padding::same}));
  h = relu(conv2d(h, w2, {.strides = {2, 2}, .padding = Padding::same}));
  Tensor pooled = reduce_mean(h, {.axes = {1, 2}});
  Tensor logits = matmul(pooled, w3);
  Tensor loss = reduce_mean(square(logits - 0.5));
  std::vector<Tensor> grads = gradients(loss, {w1, w2, w3, x});
  std::vector<Tensor> targets = {loss};
  targets.insert(targets.end(), grads.begin(), grads.end());
  CompileOptions options;
  options.deterministic = deterministic;
  Executable exe = g.compile(dev,
                             {{x, {{8, 16, 16, 4}, DType::f32}}, {w1, {{3, 3, 4, 16}, DType::f32}},
                              {w2, {{3, 3, 16, 16}, DType::f32}}, {w3, {{16, 10}, DType::f32}}},
                             targets, {}, options);
  std::vector<TensorData> in = {TensorData::random_uniform({8, 16, 16, 4}, -1.f, 1.f, 1),
                                TensorData::random_normal({3, 3, 4, 16}, 0.f, 0.3f, 2),
                                TensorData::random_normal({3, 3, 16, 16}, 0.f, 0.2f, 3),
                                TensorData::random_normal({16, 10}, 0.f, 0.5f, 4)};
  std::vector<TensorData> first = exe.run(in);
  for (int r = 0; r < 3; ++r) {  // the same executable again (on CUDA: graph replays)
    std::vector<TensorData> again = exe.run(in);
    for (size_t i = 0; i < first.size(); ++i) EXPECT_TRUE(bit_identical(first[i], again[i])) << "run " << r << " target " << i;
  }
  for (auto& t : first) t = t.to(Device::cpu());
  return first;
}

std::string results_file(Device dev) {
  return (std::filesystem::temp_directory_path() /
          ("tg_determinism_" + std::to_string(::getpid()) + "_" + dev.to_string() + ".bin")).string();
}

void write_results(const std::string& path, const std::vector<TensorData>& r) {
  std::ofstream out(path, std::ios::binary);
  for (const auto& t : r) out.write(static_cast<const char*>(t.raw_data()), static_cast<std::streamsize>(t.nbytes()));
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(Determinism, BitIdenticalAcrossRunsAndCompiles) {
  for (Device dev : testing::test_devices()) {
    SCOPED_TRACE(dev.to_string());
    std::vector<TensorData> a = conv_step(dev, true);
    std::vector<TensorData> b = conv_step(dev, true);  // another graph, compiled again
    ASSERT_EQ(a.size(), 5u);
    for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(bit_identical(a[i], b[i])) << "target " << i;
    // The values are a real training step's: finite, a positive loss, non-zero gradients.
    const double loss = a[0].element_as_double(0);
    EXPECT_GT(loss, 0.01);
    EXPECT_LT(loss, 100.0);
    for (size_t i = 1; i < a.size(); ++i) {
      double norm = 0;
      for (int64_t k = 0; k < a[i].num_elements(); ++k) norm += a[i].element_as_double(k) * a[i].element_as_double(k);
      EXPECT_GT(norm, 0.0) << "gradient " << i;
      EXPECT_TRUE(std::isfinite(norm)) << "gradient " << i;
    }
  }
}

// The child: this binary with --gtest_filter=Determinism.ChildWritesResults, TG_DETERMINISTIC=1
// (the environment switch, compiled here with deterministic = false) and TG_DETERMINISM_OUT.
TEST(Determinism, ChildWritesResults) {
  const char* out = std::getenv("TG_DETERMINISM_OUT");
  if (!out) GTEST_SKIP() << "run by Determinism.BitIdenticalAcrossProcesses";
  for (Device dev : testing::test_devices()) write_results(std::string(out) + "." + dev.to_string(), conv_step(dev, false));
}

TEST(Determinism, BitIdenticalAcrossProcesses) {
  if (std::getenv("TG_DETERMINISM_OUT")) GTEST_SKIP() << "in the child";
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string base = results_file(Device::cpu()) + ".child";
  // Without the gtest sharding variables of a sharded run (the child's one test would be in
  // another shard, and it would run nothing).
  const std::string cmd = "env -u GTEST_TOTAL_SHARDS -u GTEST_SHARD_INDEX TG_DETERMINISTIC=1 TG_DETERMINISM_OUT='" + base + "' '" + exe +
                          "' --gtest_filter=Determinism.ChildWritesResults > '" + base + ".log' 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << read_all(base + ".log");
  for (Device dev : testing::test_devices()) {
    SCOPED_TRACE(dev.to_string());
    const std::string mine = results_file(dev);
    write_results(mine, conv_step(dev, true));
    const std::string a = read_all(mine), b = read_all(base + "." + dev.to_string());
    ASSERT_FALSE(b.empty()) << "the child wrote nothing: " << read_all(base + ".log");
    EXPECT_GT(a.size(), 10000u);
    EXPECT_TRUE(a == b) << "the child process computed other bits (" << b.size() << " bytes vs " << a.size() << ")";
    std::remove(mine.c_str());
    std::remove((base + "." + dev.to_string()).c_str());
  }
  std::remove((base + ".log").c_str());
}

}  // namespace
}  // namespace tg
