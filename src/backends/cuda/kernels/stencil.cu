// The stencil kernel of the CUDA backend: one thread per output element (grid-stride), looping
// over the window in row-major order exactly as backends/cpu/stencil.cpp does: the value at
// window offset 0 times its weight starts the result, later offsets fold in (sum, product, min,
// max, argmin, argmax: strictly better replaces, a NaN beats a number, so ties keep the first
// offset). Arithmetic in the compute type (f32 for f16/bf16, rounded once at the end), integers
// wrap, float products/sums use round-to-nearest intrinsics so that no FMA contraction changes
// results against the CPU. Outputs whose window lies inside the source read directly; the others
// map every coordinate through the boundary mode (ops/boundary.h). Window rank 1..4; weights are
// read through the read-only cache (one copy shared by all threads).
#include "backends/cuda/kernels/compute.cuh"
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "backends/cuda/kernels/stencil.h"

namespace tg::cuda::kernels {
namespace {

typedef long long i64;
typedef unsigned long long u64;
constexpr int kThreads = 256;


template <typename C>
__device__ __forceinline__ C mul(C a, C b) {
  if constexpr (std::is_same_v<C, float>)
    return __fmul_rn(a, b);
  else if constexpr (std::is_same_v<C, double>)
    return __dmul_rn(a, b);
  else
    return static_cast<C>(static_cast<u64>(a) * static_cast<u64>(b));
}
template <typename C>
__device__ __forceinline__ C add(C a, C b) {
  if constexpr (std::is_same_v<C, float>)
    return __fadd_rn(a, b);
  else if constexpr (std::is_same_v<C, double>)
    return __dadd_rn(a, b);
  else
    return static_cast<C>(static_cast<u64>(a) + static_cast<u64>(b));
}

template <bool kMax, typename C>
__device__ __forceinline__ bool better(C v, C best) {
  const bool beats = kMax ? v > best : v < best;
  if constexpr (std::is_floating_point_v<C>)
    return beats || (v != v && best == best);
  else
    return beats;
}

__device__ __forceinline__ i64 floor_mod(i64 a, i64 n) {
  i64 r = a % n;
  return r < 0 ? r + n : r;
}

// ops::boundary_index with BoundaryMode numbering (0 zero, 1 constant, 2 reflect, 3 symmetric,
// 4 clamp_to_edge, 5 periodic).
__device__ __forceinline__ i64 boundary_index(i64 p, i64 n, int mode) {
  if (p >= 0 && p < n) return p;
  switch (mode) {
    case 4:
      return p < 0 ? 0 : n - 1;
    case 5:
      return floor_mod(p, n);
    case 3: {
      const i64 q = floor_mod(p, 2 * n);
      return q < n ? q : 2 * n - 1 - q;
    }
    case 2: {
      if (n == 1) return 0;
      const i64 q = floor_mod(p, 2 * n - 2);
      return q < n ? q : 2 * n - 2 - q;
    }
    default:
      return -1;
  }
}

template <typename T, int R>
__global__ void stencil_kernel(const T* __restrict__ x, const T* __restrict__ w,
                               std::conditional_t<(R >= 4), int, T>* __restrict__ y,
                               StencilParams p) {
  typedef compute_t<T> C;
  C boundary;
  memcpy(&boundary, &p.boundary, sizeof(C));
  const i64 total = p.batch * p.out_block;
  for (i64 e = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += static_cast<i64>(gridDim.x) * blockDim.x) {
    const i64 b = e / p.out_block;
    i64 rem = e - b * p.out_block;
    i64 o[kMaxStencilRank] = {}, j[kMaxStencilRank] = {};
    bool inside = true;
    for (int i = p.k - 1; i >= 0; --i) {
      o[i] = rem % p.out[i];
      rem /= p.out[i];
      const i64 first = o[i] * p.stride[i] - p.before[i];
      inside = inside && first >= 0 && first + (p.win[i] - 1) * p.dilation[i] < p.in[i];
    }
    const T* s = x + b * p.in_block;
    C acc = C(0);
    int at = 0;
    for (i64 n = 0; n < p.window; ++n) {
      C v;
      if (inside) {
        i64 off = 0;
        for (int i = 0; i < p.k; ++i)
          off += (o[i] * p.stride[i] + j[i] * p.dilation[i] - p.before[i]) * p.src_stride[i];
        v = to_c(s[off]);
      } else {
        i64 off = 0;
        bool outside = false;
        for (int i = 0; i < p.k; ++i) {
          const i64 c = boundary_index(o[i] * p.stride[i] + j[i] * p.dilation[i] - p.before[i],
                                       p.in[i], p.mode);
          outside = outside || c < 0;
          off += c * p.src_stride[i];
        }
        if (outside)
          v = boundary;  // (no read: the source may be empty)
        else
          v = to_c(s[off]);
      }
      v = mul(v, to_c(w[n]));
      if (n == 0) {
        acc = v;
      } else if constexpr (R == 0) {
        acc = add(acc, v);
      } else if constexpr (R == 1) {
        acc = mul(acc, v);
      } else {
        constexpr bool kMax = R == 3 || R == 5;
        if (better<kMax>(v, acc)) {
          acc = v;
          at = static_cast<int>(n);
        }
      }
      for (int i = p.k - 1; i >= 0 && ++j[i] == p.win[i]; --i) j[i] = 0;
    }
    if constexpr (R >= 4)
      y[e] = at;
    else
      y[e] = from_c<T>(acc);
  }
}

unsigned blocks_for(i64 n) {
  i64 b = (n + kThreads - 1) / kThreads;
  if (b < 1) b = 1;
  if (b > 65535LL * 32) b = 65535LL * 32;
  return static_cast<unsigned>(b);
}

template <typename T, int R>
void launch(const void* x, const void* w, void* y, const StencilParams& p, cudaStream_t stream) {
  typedef std::conditional_t<(R >= 4), int, T> Out;
  stencil_kernel<T, R><<<blocks_for(p.batch * p.out_block), kThreads, 0, stream>>>(
      static_cast<const T*>(x), static_cast<const T*>(w), static_cast<Out*>(y), p);
}

template <typename T>
void by_reduction(const void* x, const void* w, void* y, const StencilParams& p,
                  cudaStream_t stream) {
  switch (p.reduction) {
    case 0:
      return launch<T, 0>(x, w, y, p, stream);
    case 1:
      return launch<T, 1>(x, w, y, p, stream);
    case 2:
      return launch<T, 2>(x, w, y, p, stream);
    case 3:
      return launch<T, 3>(x, w, y, p, stream);
    case 4:
      return launch<T, 4>(x, w, y, p, stream);
    default:
      return launch<T, 5>(x, w, y, p, stream);
  }
}

}  // namespace

void stencil(ScalarType type, const void* x, const void* w, void* y, const StencilParams& p,
             cudaStream_t stream) {
  if (p.batch * p.out_block == 0) return;
  switch (type) {
    case ScalarType::i8:
      return by_reduction<signed char>(x, w, y, p, stream);
    case ScalarType::u8:
      return by_reduction<unsigned char>(x, w, y, p, stream);
    case ScalarType::i32:
      return by_reduction<int>(x, w, y, p, stream);
    case ScalarType::i64:
      return by_reduction<i64>(x, w, y, p, stream);
    case ScalarType::f16:
      return by_reduction<__half>(x, w, y, p, stream);
    case ScalarType::bf16:
      return by_reduction<__nv_bfloat16>(x, w, y, p, stream);
    case ScalarType::f32:
      return by_reduction<float>(x, w, y, p, stream);
    case ScalarType::f64:
      return by_reduction<double>(x, w, y, p, stream);
    default:
      return;  // bool: rejected by the caller
  }
}

}  // namespace tg::cuda::kernels
