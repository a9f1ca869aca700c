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

/// The cuDNN handle of a device, held by one thread at a time and bound to one stream.
struct CudnnUse {
  std::unique_lock<std::mutex> lock;
  cudnnHandle_t handle = nullptr;
};

/// One device's state. All work of the backend on a device runs on `stream` (the device's own
/// stream), so buffers freed to the caching allocator can be reused by later work without
/// waiting; kernels queue on the run's stream (stream_of), which is `stream` except while the
/// runtime captures a CUDA graph.
struct DeviceContext {
  int device = 0;
  cudaStream_t stream = nullptr;
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
  size_t max_shared_per_block = 0;
  /// The cuBLASLt handle (thread-safe; the stream is given per call), created on first use.
  cublasLtHandle_t cublaslt();
  /// The cuDNN handle, locked for the caller and bound to `on` until the CudnnUse goes.
  CudnnUse cudnn(cudaStream_t on);

  std::mutex mu;  ///< guards the lazily created members below
  cublasLtHandle_t cublaslt_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  cudaStream_t cudnn_stream_ = nullptr;
  std::mutex cudnn_mu;  ///< held while a thread queues cuDNN work
};

/// Makes `device` current for the calling thread (cudaSetDevice) and returns its context.
/// Raises tg::Error(unsupported) for a device that is not there.
DeviceContext& activate(int device);

/// The context of the kernel's device, made current.
inline DeviceContext& context_of(const backends::KernelContext& ctx) { return activate(ctx.device.index); }
/// Makes `s` wait for the collectives still running on NCCL's stream whose buffers the kernel's
/// inputs or outputs overlap (backends/cuda/side_work.h).
void join_conflicting_side_work(const backends::KernelContext& ctx, cudaStream_t s);
/// The stream a kernel queues its work on: the run's (a capturing stream while the runtime
/// records a CUDA graph), ordered after the collectives running on a side stream that touch the
/// kernel's buffers.
inline cudaStream_t stream_of(const backends::KernelContext& ctx) {
  cudaStream_t s = ctx.run != nullptr ? static_cast<cudaStream_t>(ctx.run->stream()) : context_of(ctx).stream;
  join_conflicting_side_work(ctx, s);
  return s;
}
/// Scratch for the kernel's work (RunServices::workspace): declared, so steady-state runs
/// allocate nothing. Raises tg::Error(internal) outside a run.
void* workspace_of(const backends::KernelContext& ctx, size_t bytes);

/// A device check of the kernel (RunServices::device_error): the record and tag its device code
/// writes on failure; `describe` builds the error from the record.
backends::DeviceErrorSlot device_check(const backends::KernelContext& ctx, backends::DeviceErrorFormatter describe);

/// Queues `report_error` after a kernel that left a flag: when `*flag` differs from `ok` the
/// record gets `tag` (unless an earlier check set it) and detail[0] = the flag's value.
/// `flag64`: the flag is an unsigned long long, else an int. `index`/`index_i64`: when given,
/// detail[1] = index[flag] (the offending index value).
void report_flag(const void* flag, bool flag64, unsigned long long ok, const void* index, bool index_i64,
                 backends::DeviceErrorSlot slot, cudaStream_t stream, std::string_view op);

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
