// Device faults (issue 19): an executable that needs more memory than the device has raises
// tg::Error(out_of_memory) with the sizes and the process goes on to run a smaller one; an
// out-of-range index found by a kernel is a tg::Error naming the op and leaves every variable as
// it was; a corrupted on-disk kernel cache entry is detected and rebuilt. CPU and, when there is
// one, cuda:0.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "reliability_util.h"
#include "test_util.h"
#include "tg/tg.h"
#ifdef TG_HAVE_CUDA
#include <cuda_runtime.h>

#include "backends/cuda/nvrtc/compiler.h"
#endif

namespace tg {
namespace {

using testing::expect_equal;

TEST(DeviceFaults, OutOfMemoryNamesTheSizesAndTheProcessGoesOn) {
  for (Device dev : testing::test_devices()) {
    SCOPED_TRACE(dev.to_string());
    // 2^58 f32 values (1 EiB) on the CPU, 2^38 (1 TiB) on a GPU: more than either has.
    const int64_t n = dev.is_cpu() ? int64_t{1} << 58 : int64_t{1} << 38;
    Graph g;
    Tensor x = g.placeholder({1}, DType::f32, "x");
    Tensor v = g.variable(TensorData::from_vector<float>({5}, {1}), "v");
    Tensor big = broadcast_to(x, {n}) * 2.0;
    Tensor total = reduce_max(big, {.axes = {0}, .keep_dims = true});
    Operation set = assign_variable(v, v + total);
    try {
      // big is a result: it must be materialized (a fused reduction alone would need no memory).
      Executable exe = g.compile(dev, {{x, {{1}, DType::f32}}}, {big, total}, {set});
      exe.run({TensorData::from_vector<float>({1}, {1})});
      FAIL() << "ran with " << 4 * n << " bytes of intermediates";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::out_of_memory) << e.what();
      // The size asked for: at least the big intermediate's bytes, as a number in the message.
      const std::string what = e.what();
      EXPECT_NE(what.find("bytes"), std::string::npos) << what;
      bool has_size = false;
      for (const char* digits : {"1099511627776", "1152921504606846976"}) has_size |= what.find(digits) != std::string::npos;
      for (size_t i = 0; i < what.size() && !has_size; ++i) {
        size_t j = i;
        while (j < what.size() && std::isdigit(static_cast<unsigned char>(what[j]))) ++j;
        if (j - i >= 13) has_size = true;  // a byte count of at least 10^12
        i = j;
      }
      EXPECT_TRUE(has_size) << what;
    }
    expect_equal(g.variable_value(v), {5}, {1});
    // The process goes on: a smaller executable of the same graph runs and commits.
    Tensor small = reduce_max(broadcast_to(x, {1024}) * 2.0, {.axes = {0}, .keep_dims = true});
    Operation set_small = assign_variable(v, v + small);
    Executable ok = g.compile(dev, {{x, {{1}, DType::f32}}}, {small}, {set_small});
    expect_equal(ok.run({TensorData::from_vector<float>({1.5}, {1})})[0].to(Device::cpu()), {3}, {1});
    expect_equal(g.variable_value(v), {8}, {1});
  }
}

// The index is computed in the graph (idx + shift), so only the kernel sees it out of range.
TEST(DeviceFaults, OutOfRangeIndexNamesTheOpAndLeavesVariablesUnchanged) {
  for (Device dev : testing::test_devices()) {
    SCOPED_TRACE(dev.to_string());
    Graph g;
    Tensor idx = g.placeholder({3}, DType::i64, "idx");
    Tensor shift = g.placeholder({}, DType::i64, "shift");
    Tensor table = g.constant(TensorData::from_vector<float>({1, 2, 4, 8}, {4}));
    Tensor count = g.variable(TensorData::from_vector<int64_t>({0}, {1}), "count");
    Tensor acc = g.variable(TensorData::from_vector<float>({0, 0, 0, 0}, {4}), "acc");
    Tensor picked = gather(table, idx + shift);
    Tensor updated = scatter_elements(read_variable(acc), idx + shift, picked);
    Operation a = assign_variable(acc, updated);
    Operation c = assign_variable(count, count + g.constant(TensorData::from_vector<int64_t>({1}, {1})));
    Executable exe = g.compile(dev, {{idx, {{3}, DType::i64}}, {shift, {{}, DType::i64}}},
                               {reduce_sum(picked, {.axes = {0}})}, {a, c});
    auto feeds = [](std::vector<int64_t> i, int64_t s) {
      return std::vector<TensorData>{TensorData::from_vector<int64_t>(i, {3}), TensorData::scalar<int64_t>(s)};
    };
    for (int round = 0; round < 3; ++round) {  // on CUDA: the first run walks, later runs replay
      expect_equal(exe.run(feeds({0, 1, 2}, 1))[0].to(Device::cpu()), {14}, {});  // 2 + 4 + 8
      const double acc0 = round == 0 ? 0 : 1;  // the last run of a round wrote acc[0] = 1
      expect_equal(g.variable_value(acc), {acc0, 2, 4, 8}, {4});
      expect_equal(g.variable_value(count), {static_cast<double>(2 * round + 1)}, {1});
      try {
        exe.run(feeds({0, 1, 2}, 2));  // index 4 of a dim of 4
        ADD_FAILURE() << "an out-of-range index ran";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::out_of_range) << e.what();
        const std::string what = e.what();
        EXPECT_TRUE(what.find("[gather]") != std::string::npos || what.find("[scatter_elements]") != std::string::npos)
            << what;
        EXPECT_NE(what.find("index 4"), std::string::npos) << what;
      }
      expect_equal(g.variable_value(acc), {acc0, 2, 4, 8}, {4});  // unchanged by the failed run
      expect_equal(g.variable_value(count), {static_cast<double>(2 * round + 1)}, {1});
      expect_equal(exe.run(feeds({-4, -3, 0}, 0))[0].to(Device::cpu()), {4}, {});  // 1 + 2 + 1
      expect_equal(g.variable_value(count), {static_cast<double>(2 * round + 2)}, {1});
    }
  }
}

#ifdef TG_HAVE_CUDA
// A generated kernel's disk cache entry with flipped bytes is detected (checksum), compiled
// again and rewritten; the kernel then computes the right values.
TEST(DeviceFaults, CorruptedKernelCacheEntryIsDetectedAndRebuilt) {
  if (Device::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA GPU usable here";
  namespace nvrtc = cuda::nvrtc;
  if (nvrtc::cache_dir().empty()) GTEST_SKIP() << "no disk kernel cache (TG_KERNEL_CACHE_DIR)";
  const std::string nonce = std::to_string(::getpid()) + "_" +
                            std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  const std::string source = "// probe " + nonce +
                             "\nextern \"C\" __global__ void tg_cache_probe(float* out) { out[threadIdx.x] = "
                             "3.0f * threadIdx.x + 1.0f; }\n";
  auto compile_and_check = [&] {
    auto program = nvrtc::compile(source, 0, "cache_probe");
    float* d = nullptr;
    ASSERT_EQ(cudaMalloc(&d, 32 * sizeof(float)), cudaSuccess);
    void* args[] = {&d};
    nvrtc::launch(program->kernel("tg_cache_probe", "cache_probe"), dim3(1), dim3(32), args, nullptr, "cache_probe");
    std::vector<float> got(32);
    ASSERT_EQ(cudaMemcpy(got.data(), d, 32 * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    cudaFree(d);
    for (int i = 0; i < 32; ++i) EXPECT_EQ(got[static_cast<size_t>(i)], 3.0f * static_cast<float>(i) + 1.0f);
  };
  const RuntimeStats s0 = runtime_stats();
  compile_and_check();  // compiled, written to the disk cache
  const std::string path = nvrtc::cache_entry_path(source, 0);
  ASSERT_TRUE(std::filesystem::exists(path)) << path;
  EXPECT_EQ(runtime_stats().kernel_compiles - s0.kernel_compiles, 1);
  nvrtc::forget_loaded_programs();
  compile_and_check();  // a disk hit: nothing compiled
  EXPECT_EQ(runtime_stats().kernel_compiles - s0.kernel_compiles, 1);
  {  // flip bytes in the middle of the image
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(0, std::ios::end);
    const auto size = static_cast<std::streamoff>(f.tellg());
    for (std::streamoff at = size - 64; at > size - 72; --at) {
      f.seekg(at);
      char c = 0;
      f.read(&c, 1);
      f.seekp(at);
      c = static_cast<char>(c ^ 0x5a);
      f.write(&c, 1);
    }
  }
  nvrtc::forget_loaded_programs();
  compile_and_check();  // detected: compiled again
  EXPECT_EQ(runtime_stats().kernel_compiles - s0.kernel_compiles, 2);
  EXPECT_EQ(runtime_stats().kernel_cache_rejects - s0.kernel_cache_rejects, 1);
  nvrtc::forget_loaded_programs();
  compile_and_check();  // the rewritten entry is good: a hit again
  EXPECT_EQ(runtime_stats().kernel_compiles - s0.kernel_compiles, 2);
  std::filesystem::remove(path);
}
#endif

}  // namespace
}  // namespace tg
