// Long runs (issue 19): training steps of a small model on the CPU and of ResNet-18 on a GPU keep
// host RSS and device memory (allocator statistics) flat after warm-up. The CI versions are
// short; TG_LONG_TESTS=1 runs the long ones (10,000 CPU steps, 2,000 ResNet-18 steps; command in
// docs/reliability.md). Each prints its figures ("[long run] ..."), quoted in the closing note.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "core/allocator.h"
#include "reliability_util.h"
#include "tg/tg.h"
#ifdef TG_HAVE_CUDA
#include "backends/cuda/runtime.h"
#endif

namespace tg {
namespace {

// Steps of an MLP (784-256-128-10, Adam) on batches of 32 MNIST-shaped examples, drawn from 8
// fixed batches. RSS and the host allocator's live bytes at the warm-up step and at the end.
TEST(LongRun, SmallModelTrainingKeepsHostMemoryFlat) {
  const bool full = testing::long_runs_enabled();
  const int steps = full ? 10000 : 600, warm = full ? 1000 : 200;
  nn::Model model = nn::zoo::mlp({.seed = 7});
  model.compile(nn::Optimizer::adam(1e-3), nn::Loss::sparse_categorical_crossentropy, {nn::Metric::accuracy},
                Device::cpu());
  std::vector<TensorData> xs, ys;
  for (int b = 0; b < 8; ++b) {
    xs.push_back(TensorData::random_uniform({32, 28, 28, 1}, 0.f, 1.f, static_cast<uint64_t>(b)));
    std::vector<int64_t> labels(32);
    for (int i = 0; i < 32; ++i) labels[static_cast<size_t>(i)] = (i * 7 + b) % 10;
    ys.push_back(TensorData::from_vector<int64_t>(labels, {32}));
  }
  int64_t rss_warm = 0, live_warm = 0;
  double first_loss = 0, last_loss = 0;
  for (int s = 1; s <= steps; ++s) {
    nn::Logs logs = model.train_on_batch(xs[static_cast<size_t>(s % 8)], ys[static_cast<size_t>(s % 8)]);
    if (s == 1) first_loss = logs.at("loss");
    last_loss = logs.at("loss");
    if (s == warm) {
      rss_warm = testing::resident_bytes();
      live_warm = static_cast<int64_t>(host_allocator_stats().bytes_in_use);
    }
  }
  const int64_t rss_end = testing::resident_bytes();
  const int64_t live_end = static_cast<int64_t>(host_allocator_stats().bytes_in_use);
  std::printf("[long run] cpu mlp: %d steps; RSS %.1f MiB at step %d, %.1f MiB at the end; host allocator "
              "live %lld bytes at step %d, %lld at the end; loss %.4f -> %.4f\n",
              steps, rss_warm / 1048576.0, warm, rss_end / 1048576.0, static_cast<long long>(live_warm), warm,
              static_cast<long long>(live_end), first_loss, last_loss);
  EXPECT_EQ(model.global_step(), steps);
  EXPECT_LT(last_loss, first_loss);  // it trained
  EXPECT_EQ(live_end, live_warm);    // no tensor leaks: the same live bytes
  EXPECT_LE(rss_end - rss_warm, int64_t{8} << 20) << "RSS grew after warm-up";
}

#ifdef TG_HAVE_CUDA
// ResNet-18 training steps on 64x64 images (batch 32, 10 classes) on cuda:0: the device
// allocator's live and reserved bytes equal at warm-up and at the end, RSS within 16 MiB.
TEST(LongRun, ResNet18TrainingKeepsDeviceMemoryFlat) {
  if (Device::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA GPU usable here";
  const bool full = testing::long_runs_enabled();
  const int steps = full ? 2000 : 300, warm = full ? 1000 : 100;
  nn::Model model = nn::zoo::resnet18({.input_shape = {64, 64, 3}, .num_classes = 10, .seed = 3});
  model.compile(nn::Optimizer::sgd(0.01), nn::Loss::sparse_categorical_crossentropy, {nn::Metric::accuracy},
                Device::cuda(0));
  std::vector<TensorData> xs, ys;
  for (int b = 0; b < 4; ++b) {
    xs.push_back(TensorData::random_uniform({32, 64, 64, 3}, 0.f, 1.f, static_cast<uint64_t>(b)).to(Device::cuda(0)));
    std::vector<int64_t> labels(32);
    for (int i = 0; i < 32; ++i) labels[static_cast<size_t>(i)] = (i + b) % 10;
    ys.push_back(TensorData::from_vector<int64_t>(labels, {32}).to(Device::cuda(0)));
  }
  cuda::DeviceAllocatorStats at_warm{};
  int64_t rss_warm = 0;
  double first_loss = 0, last_loss = 0;
  for (int s = 1; s <= steps; ++s) {
    nn::Logs logs = model.train_on_batch(xs[static_cast<size_t>(s % 4)], ys[static_cast<size_t>(s % 4)]);
    if (s == 1) first_loss = logs.at("loss");
    last_loss = logs.at("loss");
    if (s == warm) {
      at_warm = cuda::device_allocator_stats(0);
      rss_warm = testing::resident_bytes();
    }
  }
  const cuda::DeviceAllocatorStats at_end = cuda::device_allocator_stats(0);
  const int64_t rss_end = testing::resident_bytes();
  std::printf("[long run] cuda resnet18: %d steps; device live %zu / reserved %zu bytes at step %d, %zu / %zu at "
              "the end; RSS %.1f MiB -> %.1f MiB; loss %.4f -> %.4f\n",
              steps, at_warm.bytes_in_use, at_warm.bytes_reserved, warm, at_end.bytes_in_use, at_end.bytes_reserved,
              rss_warm / 1048576.0, rss_end / 1048576.0, first_loss, last_loss);
  EXPECT_EQ(model.global_step(), steps);
  EXPECT_TRUE(std::isfinite(last_loss));
  EXPECT_EQ(at_end.bytes_in_use, at_warm.bytes_in_use);
  EXPECT_EQ(at_end.bytes_reserved, at_warm.bytes_reserved);
  EXPECT_LE(rss_end - rss_warm, int64_t{16} << 20) << "RSS grew after warm-up";
}
#endif

}  // namespace
}  // namespace tg
