#include "core/allocator.h"

#include <fmt/format.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

#include "tg/error.h"

namespace tg {
namespace {

constexpr size_t kAlignment = 64;
constexpr size_t kMaxCachedBytes = size_t{2} << 30;

// Size classes: powers of two up to 1 MiB, then multiples of 1 MiB (waste at most 1 MiB).
size_t size_class(size_t bytes) {
  if (bytes == 0) bytes = 1;
  if (bytes <= (size_t{1} << 20)) {
    size_t c = kAlignment;
    while (c < bytes) c <<= 1;
    return c;
  }
  const size_t mib = size_t{1} << 20;
  return (bytes + mib - 1) / mib * mib;
}

class HostPool {
 public:
  void* allocate(size_t cls) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.allocations;
      auto it = free_.find(cls);
      if (it != free_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        stats_.bytes_cached -= cls;
        add_in_use(cls);
        ++stats_.cache_hits;
        return p;
      }
    }
    void* p = std::aligned_alloc(kAlignment, cls);
    if (p == nullptr) {
      host_allocator_trim();
      p = std::aligned_alloc(kAlignment, cls);
    }
    if (p == nullptr) {
      throw Error(ErrorCode::out_of_memory,
                  fmt::format("[host_allocate] out of memory allocating {} bytes", cls));
    }
    std::lock_guard<std::mutex> lock(mu_);
    add_in_use(cls);
    return p;
  }
  void release(void* p, size_t cls) {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.bytes_in_use -= cls;
    if (stats_.bytes_cached + cls > kMaxCachedBytes) {
      std::free(p);
      return;
    }
    free_[cls].push_back(p);
    stats_.bytes_cached += cls;
  }
  void trim() {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [cls, blocks] : free_) {
      for (void* p : blocks) std::free(p);
      blocks.clear();
    }
    stats_.bytes_cached = 0;
  }
  HostAllocatorStats stats() {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }
  void reset_peak() {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.peak_bytes_in_use = stats_.bytes_in_use;
  }

 private:
  // Callers hold mu_.
  void add_in_use(size_t cls) {
    stats_.bytes_in_use += cls;
    if (stats_.bytes_in_use > stats_.peak_bytes_in_use) stats_.peak_bytes_in_use = stats_.bytes_in_use;
  }

  std::mutex mu_;
  std::map<size_t, std::vector<void*>> free_;
  HostAllocatorStats stats_;
};

HostPool& pool() {
  static HostPool* p = new HostPool;  // never destroyed: TensorData may outlive static dtors
  return *p;
}

}  // namespace

std::shared_ptr<void> host_allocate(size_t bytes) {
  size_t cls = size_class(bytes);
  void* p = pool().allocate(cls);
  return std::shared_ptr<void>(p, [cls](void* q) { pool().release(q, cls); });
}

HostAllocatorStats host_allocator_stats() { return pool().stats(); }
void host_allocator_reset_peak() { pool().reset_peak(); }
void host_allocator_trim() { pool().trim(); }

}  // namespace tg
