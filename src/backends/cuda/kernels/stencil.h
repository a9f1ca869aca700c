// Launcher of the stencil kernel (kernels/stencil.cu) of the CUDA stencil family
// (backends/cuda/stencil.cpp). Plain pointers and sizes only.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/kernels/reduce.h"  // ScalarType

namespace tg::cuda::kernels {

constexpr int kMaxStencilRank = 4;

/// Geometry of a stencil over the last k dims of x (see backends/cpu/stencil.cpp's Plan).
struct StencilParams {
  int k = 1;
  int reduction = 0;  ///< tg::StencilReduction: sum, product, min, max, argmin, argmax
  int mode = 0;  ///< tg::BoundaryMode: zero, constant, reflect, symmetric, clamp_to_edge, periodic
  int64_t batch = 1, in_block = 1, out_block = 1, window = 1;
  int64_t in[kMaxStencilRank] = {}, out[kMaxStencilRank] = {}, win[kMaxStencilRank] = {};
  int64_t stride[kMaxStencilRank] = {}, dilation[kMaxStencilRank] = {},
          before[kMaxStencilRank] = {};
  int64_t src_stride[kMaxStencilRank] = {};
  /// The value read outside the source (zero / constant modes), as the bits of the compute type
  /// (f32 for f16/bf16; the storage type otherwise) in the low bytes.
  uint64_t boundary = 0;
};

/// y[batch, out...] (x's dtype; int32 window indices for argmin/argmax) from x[batch, in...] and
/// weights w[win...] (x's dtype). Numeric dtypes only (no bool).
void stencil(ScalarType type, const void* x, const void* w, void* y, const StencilParams& p,
             cudaStream_t stream);

}  // namespace tg::cuda::kernels
