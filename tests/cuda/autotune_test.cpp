// Choosing among candidate algorithms by timing them (src/backends/cuda/autotune.h), with
// candidates whose times are known in advance: device memsets of different sizes. Skipped (with a
// message) without a GPU.
#include <gtest/gtest.h>

#include <vector>

#include "cuda/require_gpu.h"
#include "tg/tg.h"
#ifdef TG_HAVE_CUDA
#include <cuda_runtime.h>

#include "backends/cuda/autotune.h"
#endif

namespace tg {
namespace {

#ifdef TG_HAVE_CUDA
struct Scratch {
  void* p = nullptr;
  cudaStream_t s = nullptr;
  explicit Scratch(size_t bytes) {
    EXPECT_EQ(cudaMalloc(&p, bytes), cudaSuccess);
    EXPECT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  }
  ~Scratch() {
    cudaStreamDestroy(s);
    cudaFree(p);
  }
};
#endif

TEST(Autotune, PicksTheFastestCandidateAndSkipsRefusedOnes) {
  REQUIRE_GPU();
#ifdef TG_HAVE_CUDA
  constexpr size_t kMiB = size_t{1} << 20;
  const std::vector<size_t> bytes = {128 * kMiB, 32 * kMiB, 2 * kMiB, 64 * kMiB};  // index 2 is fastest
  Scratch buf(128 * kMiB);
  std::vector<int> launches(bytes.size(), 0);
  std::vector<bool> refused(bytes.size(), false);
  auto launch = [&](int i) {
    if (refused[static_cast<size_t>(i)]) return false;
    ++launches[static_cast<size_t>(i)];
    return cudaMemsetAsync(buf.p, 0, bytes[static_cast<size_t>(i)], buf.s) == cudaSuccess;
  };
  EXPECT_EQ(cuda::fastest_candidate(4, launch, buf.s), 2);
  for (size_t i = 0; i < bytes.size(); ++i) EXPECT_GE(launches[i], 3) << "candidate " << i << " timed";
  refused[2] = true;  // the library refuses the fastest: the next fastest
  EXPECT_EQ(cuda::fastest_candidate(4, launch, buf.s), 1);
  refused = {true, true, true, true};
  EXPECT_EQ(cuda::fastest_candidate(4, launch, buf.s), -1);
  launches.assign(bytes.size(), 0);
  refused.assign(bytes.size(), false);
  EXPECT_EQ(cuda::fastest_candidate(1, launch, buf.s), 0);  // nothing to choose: nothing runs
  EXPECT_EQ(launches[0], 0);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
#endif
}

TEST(Autotune, KeepsTheFirstCandidateWhileTheStreamCaptures) {
  REQUIRE_GPU();
#ifdef TG_HAVE_CUDA
  Scratch buf(size_t{4} << 20);
  int launches = 0;
  auto launch = [&](int i) {
    ++launches;
    return cudaMemsetAsync(buf.p, 0, i == 0 ? size_t{4} << 20 : 1024, buf.s) == cudaSuccess;
  };
  ASSERT_EQ(cudaStreamBeginCapture(buf.s, cudaStreamCaptureModeRelaxed), cudaSuccess);
  EXPECT_EQ(cuda::fastest_candidate(2, launch, buf.s), 0);
  cudaGraph_t graph = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(buf.s, &graph), cudaSuccess);  // the capture was not broken
  if (graph) cudaGraphDestroy(graph);
  EXPECT_EQ(launches, 0);
#endif
}

}  // namespace
}  // namespace tg
