// Host emulation of the CUDA built-ins that TensorGraph's generated kernels use, so a generated
// kernel source (NVRTC input) compiles with g++ and runs on the CPU: a thread per CUDA thread, a
// block at a time, std::barrier for __syncthreads, __shared__ as function statics (one block at a
// time), warp shuffles through a per-block exchange array (every thread of the block must reach
// them, as in the kernels' uniform reduction code). Slow (an OS thread per CUDA thread): meant for
// small shapes and for checking a kernel's logic (indexing, vector loads, splits, reductions)
// where no GPU is at hand. Compile with -DTG_HOST_EMULATION (elementwise.cuh then converts f16 in
// software) and `-include shim.h`; see tools/kernel_emu/README.md.
#pragma once
#include <algorithm>
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "tg/half.h"

using std::max;
using std::min;

#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __global__
#define __launch_bounds__(...)
#define __restrict__
#define __shared__ static

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
inline thread_local dim3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;

namespace tg_emu {
inline std::barrier<>* block_barrier = nullptr;
inline std::vector<uint64_t> shuffle_slots;  ///< one 8-byte slot per thread of the block
inline float f16_bits_to_float(unsigned short h) { return tg::f16_t::to_float(h); }
inline unsigned short float_to_f16_bits(float f) { return tg::f16_t::from_float(f); }

/// Runs `body` once per thread of `grid` x `block` (2-D), a block at a time.
inline void launch(dim3 grid, dim3 block, const std::function<void()>& body) {
  gridDim = grid;
  blockDim = block;
  const unsigned n = block.x * block.y;
  shuffle_slots.assign(n, 0);
  for (unsigned by = 0; by < grid.y; ++by) {
    for (unsigned bx = 0; bx < grid.x; ++bx) {
      std::barrier<> bar(static_cast<std::ptrdiff_t>(n));
      block_barrier = &bar;
      std::vector<std::thread> threads;
      threads.reserve(n);
      for (unsigned ty = 0; ty < block.y; ++ty) {
        for (unsigned tx = 0; tx < block.x; ++tx) {
          threads.emplace_back([&, tx, ty] {
            threadIdx = dim3(tx, ty);
            blockIdx = dim3(bx, by);
            body();
          });
        }
      }
      for (std::thread& t : threads) t.join();
    }
  }
}
}  // namespace tg_emu

inline void __syncthreads() { tg_emu::block_barrier->arrive_and_wait(); }
// A block's threads are OS threads (real atomics); blocks run one after another (fences order
// nothing more).
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline unsigned atomicAdd(unsigned* p, unsigned v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
template <class T>
inline T __ldcg(const T* p) { return *p; }
namespace tg_emu {
inline std::atomic<int> or_flag{0};
}
/// __syncthreads, returning whether `p` was non-zero for any thread of the block.
inline int __syncthreads_or(int p) {
  __syncthreads();  // readers of the previous call are done
  if (p) tg_emu::or_flag.store(1);
  __syncthreads();
  const int r = tg_emu::or_flag.load();
  __syncthreads();
  if (threadIdx.x == 0 && threadIdx.y == 0) tg_emu::or_flag.store(0);  // before anyone's next call
  return r;
}
inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
inline unsigned __umulhi(unsigned a, unsigned b) { return static_cast<unsigned>((uint64_t{a} * b) >> 32); }
inline long long __double_as_longlong(double d) { long long u; std::memcpy(&u, &d, 8); return u; }
inline double __longlong_as_double(long long u) { double d; std::memcpy(&d, &u, 8); return d; }

namespace tg_emu {
/// A warp shuffle: every thread of the block publishes `v`, then reads the value of thread
/// source(tid); a source past the block (~0u: not a lane of its warp) gives its own value.
template <class T, class Source>
T shuffle(T v, Source source) {
  static_assert(sizeof(T) <= 8, "8-byte shuffle slots");
  const unsigned tid = threadIdx.y * blockDim.x + threadIdx.x;
  std::memcpy(&shuffle_slots[tid], &v, sizeof(T));
  __syncthreads();
  T r = v;
  const unsigned src = source(tid);
  if (src < shuffle_slots.size()) std::memcpy(&r, &shuffle_slots[src], sizeof(T));
  __syncthreads();
  return r;
}
}  // namespace tg_emu

/// The value of lane + off of the calling thread's warp (its own value past the warp's end).
template <class T>
T __shfl_down_sync(unsigned, T v, int off) {
  const auto o = static_cast<unsigned>(off);
  return tg_emu::shuffle(v, [o](unsigned tid) { return (tid & 31u) + o < 32u ? tid + o : ~0u; });
}

/// The value of lane - off of the calling thread's warp (its own value before the warp's start).
template <class T>
T __shfl_up_sync(unsigned, T v, int off) {
  const auto o = static_cast<unsigned>(off);
  return tg_emu::shuffle(v, [o](unsigned tid) { return (tid & 31u) >= o ? tid - o : ~0u; });
}

/// The value of lane (lane ^ mask) of the calling thread's warp.
template <class T>
T __shfl_xor_sync(unsigned, T v, int mask) {
  const auto m = static_cast<unsigned>(mask);
  return tg_emu::shuffle(v, [m](unsigned tid) { return (tid & ~31u) | ((tid & 31u) ^ m); });
}

/// The value of lane `lane` of the calling thread's warp.
template <class T>
T __shfl_sync(unsigned, T v, int lane) {
  const auto l = static_cast<unsigned>(lane & 31);
  return tg_emu::shuffle(v, [l](unsigned tid) { return (tid & ~31u) | l; });
}
