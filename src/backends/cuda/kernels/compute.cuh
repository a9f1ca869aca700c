// Device-side compute types of the precompiled kernels (kernels/*.cu): f16/bf16 are computed in
// float and rounded once (as the CPU's compute_t), every other type in itself.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

namespace tg::cuda::kernels {

template <typename T>
struct ComputeOf {
  typedef T type;
};
template <>
struct ComputeOf<__half> {
  typedef float type;
};
template <>
struct ComputeOf<__nv_bfloat16> {
  typedef float type;
};
template <typename T>
using compute_t = typename ComputeOf<T>::type;

template <typename T>
__device__ __forceinline__ compute_t<T> to_c(T x) {
  if constexpr (std::is_same_v<T, __half>)
    return __half2float(x);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __bfloat162float(x);
  else
    return x;
}
template <typename T>
__device__ __forceinline__ T from_c(compute_t<T> c) {
  if constexpr (std::is_same_v<T, __half>)
    return __float2half_rn(c);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __float2bfloat16_rn(c);
  else
    return static_cast<T>(c);
}

}  // namespace tg::cuda::kernels
