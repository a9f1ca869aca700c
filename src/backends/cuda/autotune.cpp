// Timing a library's candidate algorithms (autotune.h).
#include "backends/cuda/autotune.h"

#include <algorithm>
#include <limits>

#include "core/phase_times.h"

namespace tg::cuda {
namespace {

constexpr float kLargeMs = 20.0f;    // candidate 0 slower than this: keep it, no tuning
constexpr float kBudgetMs = 1.0f;    // timed launches per candidate fill about this much
constexpr int kMaxReps = 16;
constexpr float kMargin = 0.97f;     // a candidate must beat the best by 3%

struct Events {
  cudaEvent_t start = nullptr, stop = nullptr;
  ~Events() {
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
  }
};

// Milliseconds of `reps` launches of candidate i (negative when one was refused or CUDA failed).
float time_launches(int i, int reps, const std::function<bool(int)>& launch, cudaStream_t stream, const Events& e) {
  if (cudaEventRecord(e.start, stream) != cudaSuccess) return -1;
  for (int r = 0; r < reps; ++r) {
    if (!launch(i)) return -1;
  }
  if (cudaEventRecord(e.stop, stream) != cudaSuccess || cudaEventSynchronize(e.stop) != cudaSuccess) return -1;
  float ms = 0;
  if (cudaEventElapsedTime(&ms, e.start, e.stop) != cudaSuccess) return -1;
  return ms / static_cast<float>(reps);
}

// fastest_candidate after its checks; may leave candidates' launches running.
int time_candidates(int count, const std::function<bool(int)>& launch, cudaStream_t stream) {
  Events e;
  if (cudaStreamSynchronize(stream) != cudaSuccess || cudaEventCreate(&e.start) != cudaSuccess ||
      cudaEventCreate(&e.stop) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  int best = -1;
  float best_ms = std::numeric_limits<float>::infinity();
  for (int i = 0; i < count; ++i) {
    if (!launch(i)) {  // untimed: loads the candidate's kernels
      cudaGetLastError();
      continue;
    }
    const float once = time_launches(i, 1, launch, stream, e);
    if (once < 0) {
      cudaGetLastError();
      if (cudaStreamSynchronize(stream) != cudaSuccess) {  // a failed kernel: stop tuning
        cudaGetLastError();
        return std::max(best, 0);
      }
      continue;
    }
    if (i == 0 && once > kLargeMs) return 0;
    const int reps = std::clamp(static_cast<int>(kBudgetMs / std::max(once, 1e-3f)), 1, kMaxReps);
    const float ms = reps > 1 ? time_launches(i, reps, launch, stream, e) : once;
    if (ms < 0) {
      cudaGetLastError();
      continue;
    }
    if (ms < best_ms * kMargin) {  // the first that ran always (infinity)
      best = i;
      best_ms = ms;
    }
  }
  return best;
}

}  // namespace

int fastest_candidate(int count, const std::function<bool(int)>& launch, cudaStream_t stream) {
  if (count < 2) return 0;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess || capture != cudaStreamCaptureStatusNone) {
    cudaGetLastError();
    return 0;
  }
  phases::Scope timed("autotune");
  const int best = time_candidates(count, launch, stream);
  if (cudaStreamSynchronize(stream) != cudaSuccess) cudaGetLastError();  // before the caller frees scratch
  return best;
}

}  // namespace tg::cuda
