// Multi-threading on the CPU (OpenMP underneath): kernels (backends/cpu/parallel.h) and host-side
// work such as random initialization (src/nn).
// Without OpenMP (TG_OPENMP=OFF, the ThreadSanitizer build) everything runs on the caller's thread.
#pragma once
#ifdef _OPENMP
#include <omp.h>
#endif

#include <algorithm>
#include <cstdint>
#include <exception>

namespace tg::core {

/// Number of threads kernels use (OMP_NUM_THREADS, default: the cores).
inline int num_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

/// Calls f(begin, end) on disjoint chunks covering [0, n), in parallel when n > grain. An
/// exception thrown by f is rethrown on the calling thread after all chunks finish.
template <typename F>
void parallel_for(int64_t n, int64_t grain, F&& f) {
  if (n <= 0) return;
  int threads = num_threads();
  if (n <= grain || threads <= 1) {
    f(int64_t{0}, n);
    return;
  }
#ifdef _OPENMP
  int64_t chunks = std::min<int64_t>(threads, (n + grain - 1) / grain);
  std::exception_ptr error;
#pragma omp parallel num_threads(static_cast<int>(chunks))
  {
    int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    int64_t begin = n * t / nt, end = n * (t + 1) / nt;
    try {
      if (begin < end) f(begin, end);
    } catch (...) {
#pragma omp critical(tg_parallel_for_error)
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
#endif
}

/// Elements per chunk below which kernels stay on one thread.
inline constexpr int64_t kGrain = 32768;

}  // namespace tg::core
