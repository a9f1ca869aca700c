// Caching host allocator: 64-byte aligned blocks in size classes, returned to a free list when
// their last TensorData goes away, so repeated runs reuse memory instead of faulting in fresh
// pages. Thread-safe.
#pragma once
#include <cstddef>
#include <memory>

namespace tg {

struct HostAllocatorStats {
  size_t bytes_in_use = 0;
  size_t bytes_cached = 0;
  size_t allocations = 0;
  size_t cache_hits = 0;
};

/// A block of at least `bytes` bytes (64-byte aligned), freed to the cache on release. Raises
/// tg::Error(out_of_memory) when the system has no memory left.
std::shared_ptr<void> host_allocate(size_t bytes);
HostAllocatorStats host_allocator_stats();
/// Returns every cached block to the system.
void host_allocator_trim();

}  // namespace tg
