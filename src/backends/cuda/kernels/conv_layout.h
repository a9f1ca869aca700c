// Layout helpers of the cuDNN convolutions (backends/cuda/conv.cpp): a 4-D permutation (weights
// HWIO <-> OHWI / OIHW, data NHWC <-> NCHW where cuDNN needs the other layout) and a 4-D window
// copy that pads with zeros or crops (asymmetric conv padding, which cuDNN cannot express).
// Elements are moved as raw 2-, 4- or 8-byte words.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace tg::cuda::kernels {

/// dst (contiguous, dims dst_dims) [i0, i1, i2, i3] = src[sum_j i_j * src_strides[j]]: the caller
/// gives, per dst dim, the element stride of the matching src dim. elem_size is 2, 4 or 8.
void launch_permute4(const void* src, void* dst, const int64_t dst_dims[4],
                     const int64_t src_strides[4], int elem_size, cudaStream_t stream);

/// dst (contiguous, dims dst_dims) [i] = src (contiguous, dims src_dims) [i - offset] where that
/// lies inside src, else 0 (all-zero bits). offset > 0 pads at the start, < 0 crops.
void launch_window_copy4(const void* src, void* dst, const int64_t src_dims[4],
                         const int64_t dst_dims[4], const int64_t offset[4], int elem_size,
                         cudaStream_t stream);

}  // namespace tg::cuda::kernels
