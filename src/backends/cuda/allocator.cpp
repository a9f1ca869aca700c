// The caching device allocator (runtime.h): blocks in size classes, kept on per-device free lists
// when released and reused by later allocations of the same class. All backend work on a device
// runs on one stream, so a block released by the host while kernels that use it are still queued
// is only handed to work queued after them (the same rule as PyTorch's caching allocator).
#include <map>
#include <mutex>
#include <vector>

#include "backends/cuda/context.h"
#include "core/error_util.h"

namespace tg::cuda {
namespace {

constexpr size_t kSmallLimit = 1u << 20;   // below: 512-byte classes
constexpr size_t kSmallRound = 512;
constexpr size_t kLargeRound = 2u << 20;   // at or above: 2 MiB classes

size_t size_class(size_t bytes) {
  if (bytes == 0) bytes = 1;
  size_t r = bytes < kSmallLimit ? kSmallRound : kLargeRound;
  return (bytes + r - 1) / r * r;
}

struct DeviceCache {
  std::mutex mu;
  std::multimap<size_t, void*> free;  // class -> blocks
  DeviceAllocatorStats stats;
};

struct Caches {
  std::mutex mu;
  std::vector<std::unique_ptr<DeviceCache>> devices;
};
Caches& caches() {
  static auto* c = new Caches;  // never destroyed: blocks may be released at exit
  return *c;
}

DeviceCache& cache(int device) {
  Caches& c = caches();
  std::lock_guard<std::mutex> lock(c.mu);
  if (c.devices.size() <= static_cast<size_t>(device)) c.devices.resize(static_cast<size_t>(device) + 1);
  auto& d = c.devices[static_cast<size_t>(device)];
  if (!d) d = std::make_unique<DeviceCache>();
  return *d;
}

// Returns every free block to the driver; the caller holds dc.mu and has made the device current.
void release_cached(DeviceCache& dc) {
  for (auto& [size, p] : dc.free) {
    cudaFree(p);
    dc.stats.bytes_cached -= size;
    dc.stats.bytes_reserved -= size;
  }
  dc.free.clear();
}

void release_block(int device, size_t size, void* p) {
  DeviceCache& dc = cache(device);
  std::lock_guard<std::mutex> lock(dc.mu);
  dc.free.emplace(size, p);
  dc.stats.bytes_in_use -= size;
  dc.stats.bytes_cached += size;
}

}  // namespace

std::shared_ptr<void> device_allocate(int device, size_t bytes) {
  DeviceContext& ctx = activate(device);
  size_t size = size_class(bytes);
  DeviceCache& dc = cache(device);
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(dc.mu);
    dc.stats.allocations++;
    auto it = dc.free.find(size);
    if (it != dc.free.end()) {
      p = it->second;
      dc.free.erase(it);
      dc.stats.cache_hits++;
      dc.stats.bytes_cached -= size;
    } else {
      cudaError_t e = cudaMalloc(&p, size);
      if (e == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        dc.stats.oom_retries++;
        cudaStreamSynchronize(ctx.stream);  // cached blocks may still be in use by queued work
        release_cached(dc);
        e = cudaMalloc(&p, size);
      }
      if (e != cudaSuccess) {
        cudaGetLastError();
        size_t free_bytes = 0, total = 0;
        cudaMemGetInfo(&free_bytes, &total);
        fail(e == cudaErrorMemoryAllocation ? ErrorCode::out_of_memory : ErrorCode::internal, "cuda",
             "out of memory: asked for {} bytes on cuda:{}, {} free of {} ({} cached, {} in use by tg): {}", bytes,
             device, free_bytes, total, dc.stats.bytes_cached, dc.stats.bytes_in_use, cudaGetErrorName(e));
      }
      dc.stats.cuda_mallocs++;
      dc.stats.bytes_reserved += size;
    }
    dc.stats.bytes_in_use += size;
    if (dc.stats.bytes_in_use > dc.stats.peak_bytes_in_use) dc.stats.peak_bytes_in_use = dc.stats.bytes_in_use;
  }
  return std::shared_ptr<void>(p, [device, size](void* q) { release_block(device, size, q); });
}

DeviceAllocatorStats device_allocator_stats(int device) {
  check_device(device);
  DeviceCache& dc = cache(device);
  std::lock_guard<std::mutex> lock(dc.mu);
  return dc.stats;
}

void device_allocator_reset_peak(int device) {
  check_device(device);
  DeviceCache& dc = cache(device);
  std::lock_guard<std::mutex> lock(dc.mu);
  dc.stats.peak_bytes_in_use = dc.stats.bytes_in_use;
}

void device_allocator_trim(int device) {
  DeviceContext& ctx = activate(device);
  check(cudaStreamSynchronize(ctx.stream), "cuda", "trim");
  DeviceCache& dc = cache(device);
  std::lock_guard<std::mutex> lock(dc.mu);
  release_cached(dc);
}

}  // namespace tg::cuda
