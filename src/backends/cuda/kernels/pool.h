// Pooling kernels (max_pool2d, avg_pool2d and their backward ops) with the CPU backend's exact
// semantics (backends/cpu/pool.cpp): padding never wins a max (it is -inf / the type's lowest),
// NaN propagates (the first NaN of a window), a window without input elements gives -inf (max) or
// 0 (avg); avg divides by the taps inside the input, or with count_include_pad by the taps inside
// the padded input; max backward routes each dy to the first maximal element of its window
// (row-major within the window) or its first NaN, contributions summing in f32 (f64 for f64).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace tg::cuda::kernels {

/// One spatial dim of a pooling window, resolved (ops::PoolDim).
struct PoolWindow {
  int64_t in = 0, k = 1, stride = 1, dilation = 1, pad_before = 0, pad_after = 0, out = 0;
};

struct PoolParams {
  int64_t n = 0, c = 0;
  PoolWindow h, w;
  bool nhwc = true;
  bool count_include_pad = false;
};

enum class PoolType { i8, u8, i32, i64, f16, bf16, f32, f64 };

/// y = max over each window of x. Any PoolType.
void launch_max_pool2d(PoolType t, const void* x, void* y, const PoolParams& p, cudaStream_t stream);
/// y = mean over each window of x. Floating types only.
void launch_avg_pool2d(PoolType t, const void* x, void* y, const PoolParams& p, cudaStream_t stream);
/// dx from dy and x; `argmax` is scratch for one int32 per dy element (kh * kw < 2^31).
/// Floating types only.
void launch_max_pool2d_backward(PoolType t, const void* dy, const void* x, void* dx, int32_t* argmax,
                                const PoolParams& p, cudaStream_t stream);
/// dx from dy. Floating types only.
void launch_avg_pool2d_backward(PoolType t, const void* dy, void* dx, const PoolParams& p,
                                cudaStream_t stream);

}  // namespace tg::cuda::kernels
