// The kernels of kernels/control.h.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backends/cuda/kernels/control.h"

namespace tg::cuda::kernels {
namespace {

constexpr int kThreads = 256;

__device__ double load(const void* p, CondType t) {
  switch (t) {
    case CondType::b8: return *static_cast<const unsigned char*>(p) != 0 ? 1.0 : 0.0;
    case CondType::i8: return *static_cast<const signed char*>(p);
    case CondType::u8: return *static_cast<const unsigned char*>(p);
    case CondType::i32: return *static_cast<const int*>(p);
    case CondType::i64: return static_cast<double>(*static_cast<const long long*>(p));
    case CondType::f16: return __half2float(*static_cast<const __half*>(p));
    case CondType::bf16: return __bfloat162float(*static_cast<const __nv_bfloat16*>(p));
    case CondType::f32: return *static_cast<const float*>(p);
    default: return *static_cast<const double*>(p);
  }
}

__device__ bool truthy(const void* p, CondType t) {
  const double v = load(p, t);
  return v != 0.0 || v != v;
}

__device__ long long load_integer(const void* p, CondType t) {
  switch (t) {
    case CondType::i8: return *static_cast<const signed char*>(p);
    case CondType::u8: return *static_cast<const unsigned char*>(p);
    case CondType::i32: return *static_cast<const int*>(p);
    case CondType::i64: return *static_cast<const long long*>(p);
    default: return static_cast<long long>(load(p, t));
  }
}

__global__ void set_condition_kernel(cudaGraphConditionalHandle handle, const ConditionArgs a) {
  unsigned go = 0;
  if (a.below) {
    if (a.indices != nullptr) {
      for (int j = 0; j < a.index_count; ++j) a.indices[4 * j] = a.index_base + *a.counter * a.index_count + j;
    }
    if (a.increment) ++*a.counter;
    const long long bound = a.value != nullptr ? load_integer(a.value, a.type) : a.limit;
    if (bound > 2147483647LL) {
      if (a.rec != nullptr && atomicCAS(&a.rec->tag, 0ULL, a.tag) == 0ULL) a.rec->detail[0] = bound;
    } else {
      go = *a.counter < bound ? 1u : 0u;
    }
  } else {
    go = truthy(a.value, a.type) && (a.counter == nullptr || a.limit < 0 || *a.counter < a.limit) ? 1u : 0u;
    if (go && a.increment && a.counter != nullptr) ++*a.counter;
  }
  cudaGraphSetConditional(handle, go);
}

__global__ void select_state_kernel(cudaGraphConditionalHandle handle, const __grid_constant__ SelectArgs a) {
  int j = a.k;  // 1-based: the iteration whose state the loop keeps
  for (int i = 0; i < a.k; ++i) {
    if (!truthy(a.cond[i], a.type)) {
      j = i + 1;
      break;
    }
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) cudaGraphSetConditional(handle, j == a.k && truthy(a.cond[a.k - 1], a.type) ? 1u : 0u);
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  const unsigned long long t = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int v = 0; v < a.n; ++v) {
    const auto* src = static_cast<const unsigned char*>(a.src[v][j - 1]);
    auto* dst = static_cast<unsigned char*>(a.dst[v]);
    if (src == dst) continue;
    const unsigned long long bytes = a.bytes[v];
    const bool wide = ((reinterpret_cast<unsigned long long>(src) | reinterpret_cast<unsigned long long>(dst) | bytes) % 16) == 0;
    if (wide) {
      for (unsigned long long i = t; i < bytes / 16; i += stride) {
        reinterpret_cast<uint4*>(dst)[i] = reinterpret_cast<const uint4*>(src)[i];
      }
    } else {
      for (unsigned long long i = t; i < bytes; i += stride) dst[i] = src[i];
    }
  }
}

__global__ void iota_kernel(int* out, long long n, int start) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[4 * i] = start + static_cast<int>(i);
}

}  // namespace

void launch_set_condition(unsigned long long handle, const ConditionArgs& a, cudaStream_t stream) {
  set_condition_kernel<<<1, 1, 0, stream>>>(handle, a);
}

void launch_select_state(unsigned long long handle, const SelectArgs& a, cudaStream_t stream) {
  unsigned long long most = 0;
  for (int v = 0; v < a.n; ++v) most = a.bytes[v] > most ? a.bytes[v] : most;
  unsigned long long blocks = (most / 16 + kThreads - 1) / kThreads;
  if (blocks < 1) blocks = 1;
  if (blocks > 256) blocks = 256;  // the copy runs once a loop (at its exit); most launches copy nothing
  select_state_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(handle, a);
}

void launch_iota_i32(int* out, long long n, int start, cudaStream_t stream) {
  if (n <= 0) return;
  iota_kernel<<<static_cast<unsigned>((n + kThreads - 1) / kThreads), kThreads, 0, stream>>>(out, n, start);
}

}  // namespace tg::cuda::kernels
