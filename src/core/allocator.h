// Caching host allocator: 64-byte aligned blocks in size classes, returned to a free list when
// their last TensorData goes away, so repeated runs reuse memory instead of faulting in fresh
// pages. Thread-safe.
#pragma once
#include <cstddef>
#include <memory>

namespace tg {

struct HostAllocatorStats {
  size_t bytes_in_use = 0;       ///< bytes of live blocks (size classes, not requested sizes)
  size_t peak_bytes_in_use = 0;  ///< highest bytes_in_use since start or the last reset_peak
  size_t bytes_cached = 0;       ///< bytes of free blocks kept for reuse
  size_t allocations = 0;        ///< host_allocate calls, cache hits included
  size_t cache_hits = 0;         ///< allocations served from the cache
};

/// A block of at least `bytes` bytes (64-byte aligned), freed to the cache on release. Raises
/// tg::Error(out_of_memory) when the system has no memory left.
std::shared_ptr<void> host_allocate(size_t bytes);
HostAllocatorStats host_allocator_stats();
/// Sets peak_bytes_in_use to the current bytes_in_use (to measure the peak of one section).
void host_allocator_reset_peak();
/// Returns every cached block to the system.
void host_allocator_trim();

}  // namespace tg
