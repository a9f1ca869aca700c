// The CUDA runtime layer seen by core code (TensorData, Device): device discovery, the caching
// device allocator and copies. No CUDA types here; backend code includes backends/cuda/context.h.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "core/device_runtime.h"
#include "tg/device.h"
#include "tg/tensor_data.h"

namespace tg::cuda {

/// CUDA GPUs usable now (0 when the driver or a GPU is missing; never throws).
int device_count();

/// Raises tg::Error(unsupported) "[cuda] ..." when `device` is not a usable CUDA device.
void check_device(int device);

/// A block of at least `bytes` bytes (256-byte aligned) on `device` from the caching allocator.
/// Freed blocks return to the cache and are reused in stream order (all work of a device runs on
/// its one stream). When cudaMalloc fails the cache is emptied and the call retried; if that
/// fails too: tg::Error(out_of_memory) "[cuda] out of memory: asked for N bytes on cuda:i, F free
/// of T (C cached)". The process can go on after it.
std::shared_ptr<void> device_allocate(int device, size_t bytes);

struct DeviceAllocatorStats {
  size_t bytes_in_use = 0;       ///< bytes of live blocks (size classes, not requested sizes)
  size_t peak_bytes_in_use = 0;  ///< highest bytes_in_use since start or the last reset_peak
  size_t bytes_cached = 0;       ///< bytes of free blocks kept for reuse
  size_t bytes_reserved = 0;     ///< bytes obtained from cudaMalloc and not yet returned
  size_t allocations = 0;        ///< device_allocate calls, cache hits included
  size_t cache_hits = 0;         ///< allocations served from the cache
  size_t cuda_mallocs = 0;       ///< calls to cudaMalloc
  size_t oom_retries = 0;        ///< cudaMalloc failures that emptied the cache and retried
};
DeviceAllocatorStats device_allocator_stats(int device);
void device_allocator_reset_peak(int device);
/// Returns every cached block of `device` to the driver (waits for the device first).
void device_allocator_trim(int device);

/// Copies `bytes` bytes between any two of: host memory, CUDA devices, in the order of `stream`
/// (a cudaStream_t; null: the device's own stream). Host->device: `src` may be reused when this
/// returns; the data reaches the device before any kernel queued later (no wait for the device).
/// Device->host: waits for the stream (earlier kernels writing `src` have finished) and the copy
/// is complete on return. Large host<->device copies go through two pinned staging buffers.
void copy(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes, void* stream = nullptr);

/// Allocations of the calling thread (device_allocate on `device`) come from a private pool while
/// a CapturePoolScope lives: the runtime records a CUDA graph, whose replays reuse the same
/// memory, so the pool keeps every block until the last reference to it goes (the recorded run).
class CapturePool;
std::shared_ptr<CapturePool> make_capture_pool(int device);
class CapturePoolScope {
 public:
  explicit CapturePoolScope(std::shared_ptr<CapturePool> pool);
  ~CapturePoolScope();
  CapturePoolScope(const CapturePoolScope&) = delete;
  CapturePoolScope& operator=(const CapturePoolScope&) = delete;

 private:
  std::shared_ptr<CapturePool> previous_;
};
/// Allocations made while it lives bypass the capture pool (caches shared with later runs).
class GlobalAllocationScope {
 public:
  GlobalAllocationScope();
  ~GlobalAllocationScope();

 private:
  std::shared_ptr<CapturePool> previous_;
};

/// A copy of the host tensor `host` on cuda:`device`, made once and cached while `host`'s storage
/// lives (for constants: host values are immutable once produced). Work queued on `stream` (a
/// cudaStream_t; null: the device's own) after this call sees the copy. Thread-safe.
TensorData upload_cached(const TensorData& host, int device, void* stream = nullptr);

/// Starts uploading the host tensors `hosts` (a loaded executable's constants, in the order of
/// their first use) to cuda:`device` in the background, so that upload_cached finds them: one
/// device block for all, copied through the staging buffers in chunks on a stream of its own by a
/// thread of its own, while the caller goes on (parsing the rest of the file, enqueueing the first
/// run). upload_cached of a constant not queued yet waits until it is, then makes the caller's
/// stream wait for its chunk's copy (a host wait while that stream records a CUDA graph). Returns
/// a handle whose release waits for the thread (null when there was nothing to upload). On a
/// failure the constants not queued are uploaded at first use, as without this.
/// Opt-in for now (not yet run on a GPU): TG_PREFETCH_CONSTANTS=1 turns it on; otherwise it returns
/// null and each constant is uploaded at its first use.
std::shared_ptr<void> prefetch_constants(std::span<const TensorData> hosts, int device);

/// The CUDA backend's runtime seen by core code (core::device_runtime).
const core::DeviceRuntime& device_runtime();

/// Waits for every kernel queued on `device`'s stream; raises tg::Error(internal) naming the CUDA
/// error when one of them failed.
void synchronize(int device);

}  // namespace tg::cuda
