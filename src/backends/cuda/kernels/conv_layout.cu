// 4-D permute and pad/crop copies for the conv family (see conv_layout.h): one thread per
// destination element (grid-stride, 64-bit indices), consecutive threads write consecutive
// destination elements. These run on weights (small) or on the rare data paths (asymmetric
// padding, f64 in NHWC), so they favour simplicity over peak bandwidth.
#include "backends/cuda/kernels/conv_layout.h"

namespace tg::cuda::kernels {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  if (b < 1) b = 1;
  if (b > 65535LL * 32) b = 65535LL * 32;
  return static_cast<unsigned>(b);
}

struct Dims4 {
  int64_t d[4];
};

template <typename W>
__global__ void permute4_kernel(const W* __restrict src, W* __restrict dst, Dims4 dims, Dims4 strides,
                                int64_t total) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += step) {
    int64_t rem = i, off = 0;
#pragma unroll
    for (int j = 3; j >= 0; --j) {
      const int64_t q = rem / dims.d[j];
      off += (rem - q * dims.d[j]) * strides.d[j];
      rem = q;
    }
    dst[i] = src[off];
  }
}

template <typename W>
__global__ void window_copy4_kernel(const W* __restrict src, W* __restrict dst, Dims4 sdims,
                                    Dims4 ddims, Dims4 offset, int64_t total) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += step) {
    int64_t rem = i, off = 0, stride = 1;
    bool inside = true;
#pragma unroll
    for (int j = 3; j >= 0; --j) {
      const int64_t q = rem / ddims.d[j];
      const int64_t s = rem - q * ddims.d[j] - offset.d[j];
      inside = inside && s >= 0 && s < sdims.d[j];
      off += s * stride;
      stride *= sdims.d[j];
      rem = q;
    }
    dst[i] = inside ? src[off] : W(0);
  }
}

template <typename W>
void permute_as(const void* src, void* dst, const Dims4& dims, const Dims4& strides, int64_t total,
                cudaStream_t stream) {
  permute4_kernel<W><<<blocks_for(total), kThreads, 0, stream>>>(static_cast<const W*>(src),
                                                                 static_cast<W*>(dst), dims, strides,
                                                                 total);
}

template <typename W>
void window_as(const void* src, void* dst, const Dims4& s, const Dims4& d, const Dims4& o,
               int64_t total, cudaStream_t stream) {
  window_copy4_kernel<W><<<blocks_for(total), kThreads, 0, stream>>>(static_cast<const W*>(src),
                                                                     static_cast<W*>(dst), s, d, o,
                                                                     total);
}

}  // namespace

void launch_permute4(const void* src, void* dst, const int64_t dst_dims[4],
                     const int64_t src_strides[4], int elem_size, cudaStream_t stream) {
  Dims4 dims{}, strides{};
  int64_t total = 1;
  for (int j = 0; j < 4; ++j) {
    dims.d[j] = dst_dims[j];
    strides.d[j] = src_strides[j];
    total *= dst_dims[j];
  }
  if (total <= 0) return;
  switch (elem_size) {
    case 2: permute_as<unsigned short>(src, dst, dims, strides, total, stream); break;
    case 4: permute_as<unsigned int>(src, dst, dims, strides, total, stream); break;
    default: permute_as<unsigned long long>(src, dst, dims, strides, total, stream); break;
  }
}

void launch_window_copy4(const void* src, void* dst, const int64_t src_dims[4],
                         const int64_t dst_dims[4], const int64_t offset[4], int elem_size,
                         cudaStream_t stream) {
  Dims4 s{}, d{}, o{};
  int64_t total = 1;
  for (int j = 0; j < 4; ++j) {
    s.d[j] = src_dims[j];
    d.d[j] = dst_dims[j];
    o.d[j] = offset[j];
    total *= dst_dims[j];
  }
  if (total <= 0) return;
  switch (elem_size) {
    case 2: window_as<unsigned short>(src, dst, s, d, o, total, stream); break;
    case 4: window_as<unsigned int>(src, dst, s, d, o, total, stream); break;
    default: window_as<unsigned long long>(src, dst, s, d, o, total, stream); break;
  }
}

}  // namespace tg::cuda::kernels
