// float32 <-> bf16/f16 conversion kernels (see lowp_cast.h): grid-stride loops, four elements a
// thread per step when the count allows (16-byte loads of float4), round to nearest even.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backends/cuda/kernels/lowp_cast.h"
#include "backends/cuda/kernels/module_anchors.h"

namespace tg::cuda::kernels {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  if (b < 1) b = 1;
  if (b > 65535LL * 32) b = 65535LL * 32;
  return static_cast<unsigned>(b);
}

template <typename H>
__device__ __forceinline__ H to_h(float v);
template <>
__device__ __forceinline__ __half to_h<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 to_h<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

// Four floats a step when the float side is 16-byte aligned (`vec`), then the tail.
template <typename H>
__global__ void f32_to_lowp(const float* __restrict src, H* __restrict dst, int64_t n, bool vec) {
  const int64_t n4 = vec ? n / 4 : 0;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const float4* s4 = reinterpret_cast<const float4*>(src);
  for (int64_t i = t; i < n4; i += step) {
    const float4 v = s4[i];
    dst[4 * i] = to_h<H>(v.x);
    dst[4 * i + 1] = to_h<H>(v.y);
    dst[4 * i + 2] = to_h<H>(v.z);
    dst[4 * i + 3] = to_h<H>(v.w);
  }
  for (int64_t i = 4 * n4 + t; i < n; i += step) dst[i] = to_h<H>(src[i]);
}

template <typename H>
__global__ void lowp_to_f32(const H* __restrict src, float* __restrict dst, int64_t n, bool vec) {
  const int64_t n4 = vec ? n / 4 : 0;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  float4* d4 = reinterpret_cast<float4*>(dst);
  for (int64_t i = t; i < n4; i += step) {
    d4[i] = make_float4(static_cast<float>(src[4 * i]), static_cast<float>(src[4 * i + 1]),
                        static_cast<float>(src[4 * i + 2]), static_cast<float>(src[4 * i + 3]));
  }
  for (int64_t i = 4 * n4 + t; i < n; i += step) dst[i] = static_cast<float>(src[i]);
}

}  // namespace

const void* lowp_cast_module_anchor() { return reinterpret_cast<const void*>(&f32_to_lowp<__nv_bfloat16>); }

void launch_f32_to_lowp(const float* src, void* dst, int64_t n, bool bf16, cudaStream_t stream) {
  if (n <= 0) return;
  const bool vec = reinterpret_cast<uintptr_t>(src) % 16 == 0;
  const unsigned blocks = blocks_for((n + 3) / 4);
  if (bf16) {
    f32_to_lowp<<<blocks, kThreads, 0, stream>>>(src, static_cast<__nv_bfloat16*>(dst), n, vec);
  } else {
    f32_to_lowp<<<blocks, kThreads, 0, stream>>>(src, static_cast<__half*>(dst), n, vec);
  }
}

void launch_lowp_to_f32(const void* src, float* dst, int64_t n, bool bf16, cudaStream_t stream) {
  if (n <= 0) return;
  const bool vec = reinterpret_cast<uintptr_t>(dst) % 16 == 0;
  const unsigned blocks = blocks_for((n + 3) / 4);
  if (bf16) {
    lowp_to_f32<<<blocks, kThreads, 0, stream>>>(static_cast<const __nv_bfloat16*>(src), dst, n, vec);
  } else {
    lowp_to_f32<<<blocks, kThreads, 0, stream>>>(static_cast<const __half*>(src), dst, n, vec);
  }
}

}  // namespace tg::cuda::kernels
