// CUDA backend internals: per-device context (stream, library handles, workspace), error checks
// and launch helpers for the kernels in src/backends/cuda/<family>.cpp.
#pragma once
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstdint>
#include <mutex>
#include <string_view>

#include "backends/cuda/runtime.h"
#include "backends/kernel.h"
#include "tg/tensor_data.h"

namespace tg::cuda {

/// Raises tg::Error(internal) "[op] what: <cudaGetErrorName>: <cudaGetErrorString>" unless e is
/// cudaSuccess; cudaErrorMemoryAllocation raises tg::Error(out_of_memory).
void check(cudaError_t e, std::string_view op, std::string_view what);
void check(cublasStatus_t s, std::string_view op, std::string_view what);
void check(cudnnStatus_t s, std::string_view op, std::string_view what);
/// check(cudaGetLastError()) after a kernel launch.
void check_launch(std::string_view op, std::string_view kernel);

/// One device's state. All work of the backend on a device runs on `stream`, so buffers freed to
/// the caching allocator can be reused by later work without waiting.
struct DeviceContext {
  int device = 0;
  cudaStream_t stream = nullptr;
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
  size_t max_shared_per_block = 0;
  /// Library handles, created on first use and bound to `stream`.
  cublasLtHandle_t cublaslt();
  cudnnHandle_t cudnn();
  /// A scratch buffer of at least `bytes` on this device, valid until the next call of
  /// workspace() on this device (stream order makes reuse by the next kernel safe).
  void* workspace(size_t bytes);

  std::mutex mu;  ///< guards the lazily created members below
  cublasLtHandle_t cublaslt_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  std::shared_ptr<void> workspace_;
  size_t workspace_bytes_ = 0;
};

/// Makes `device` current for the calling thread (cudaSetDevice) and returns its context.
/// Raises tg::Error(unsupported) for a device that is not there.
DeviceContext& activate(int device);

/// The context of the kernel's device, made current.
inline DeviceContext& context_of(const backends::KernelContext& ctx) { return activate(ctx.device.index); }
inline cudaStream_t stream_of(const backends::KernelContext& ctx) { return context_of(ctx).stream; }

template <typename T = void>
T* ptr(TensorData& t) { return static_cast<T*>(t.storage_ptr()); }
template <typename T = void>
const T* ptr(const TensorData& t) { return static_cast<const T*>(t.storage_ptr()); }

/// Blocks for a grid-stride loop over n elements with `threads` threads a block (at least 1,
/// at most 65535 * 32 blocks).
inline unsigned grid_for(int64_t n, int threads = 256) {
  int64_t b = (n + threads - 1) / threads;
  if (b < 1) b = 1;
  if (b > 65535LL * 32) b = 65535LL * 32;
  return static_cast<unsigned>(b);
}

}  // namespace tg::cuda
