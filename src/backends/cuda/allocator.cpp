// The caching device allocator (runtime.h): blocks in size classes, kept on per-device free lists
// when released and reused by later allocations of the same class. All backend work on a device
// runs on one stream, so a block released by the host while kernels that use it are still queued
// is only handed to work queued after them (the same rule as PyTorch's caching allocator).
// While the runtime records a CUDA graph, the recording thread allocates from a private pool
// (CapturePool) instead, whose blocks are reused only within that recording and freed with it:
// PyTorch's private graph memory pools follow the same rule. While the recording queues work on
// several streams (ControlRecorder::hold_pool), released blocks are handed out again only once
// the streams have joined.
#include <map>
#include <mutex>
#include <vector>

#include "backends/cuda/context.h"
#include "backends/cuda/control_recorder.h"
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

class CapturePool {
 public:
  explicit CapturePool(int device) : device_(device) {}
  ~CapturePool() {
    for (void* p : all_) cudaFree(p);
  }
  int device() const { return device_; }
  std::shared_ptr<void> allocate(const std::shared_ptr<CapturePool>& self, size_t bytes) {
    const size_t size = size_class(bytes);
    void* p = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = free_.find(size);
      if (it != free_.end()) {  // released before any hold began, or after the last ended
        p = it->second;
        free_.erase(it);
      }
    }
    if (p == nullptr) {
      cudaError_t e = cudaMalloc(&p, size);
      if (e != cudaSuccess) {
        cudaGetLastError();
        fail(e == cudaErrorMemoryAllocation ? ErrorCode::out_of_memory : ErrorCode::internal, "cuda",
             "out of memory recording a CUDA graph: asked for {} bytes on cuda:{}: {}", bytes, device_,
             cudaGetErrorName(e));
      }
      std::lock_guard<std::mutex> lock(mu_);
      all_.push_back(p);
    }
    // Freed blocks go back to the pool (reused by later allocations of the same recording); the
    // pool itself lives as long as the recorded run (and any block still referenced).
    return std::shared_ptr<void>(p, [pool = self, size](void* q) {
      std::lock_guard<std::mutex> lock(pool->mu_);
      (pool->holds_ > 0 ? pool->held_ : pool->free_).emplace(size, q);
    });
  }
  /// ControlRecorder::hold_pool: while held, released blocks wait in held_ (work on another
  /// stream may still use them) and go back to free_ when the last hold ends.
  void hold(bool on) {
    std::lock_guard<std::mutex> lock(mu_);
    holds_ += on ? 1 : -1;
    if (holds_ == 0) {
      free_.merge(held_);
      held_.clear();
    }
  }

 private:
  int device_;
  std::mutex mu_;
  int holds_ = 0;
  std::multimap<size_t, void*> held_;
  std::multimap<size_t, void*> free_;
  std::vector<void*> all_;
};

namespace {
thread_local std::shared_ptr<CapturePool> t_capture_pool;
}  // namespace

std::shared_ptr<CapturePool> make_capture_pool(int device) { return std::make_shared<CapturePool>(device); }

CapturePoolScope::CapturePoolScope(std::shared_ptr<CapturePool> pool) : previous_(std::move(t_capture_pool)) {
  t_capture_pool = std::move(pool);
}
CapturePoolScope::~CapturePoolScope() { t_capture_pool = std::move(previous_); }

void hold_capture_pool(bool hold) {
  if (t_capture_pool) t_capture_pool->hold(hold);
}

GlobalAllocationScope::GlobalAllocationScope() : previous_(std::move(t_capture_pool)) { t_capture_pool = nullptr; }
GlobalAllocationScope::~GlobalAllocationScope() { t_capture_pool = std::move(previous_); }

std::shared_ptr<void> device_allocate(int device, size_t bytes) {
  DeviceContext& ctx = activate(device);
  if (t_capture_pool && t_capture_pool->device() == device) return t_capture_pool->allocate(t_capture_pool, bytes);
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
