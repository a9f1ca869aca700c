// Device code shared by precompiled kernels (kernels/*.cu, compiled by nvcc) and run-time
// generated ones (NVRTC, which sees this file embedded as text): basic types and helpers only,
// no host headers.
#pragma once

#ifndef TG_DEVICE_INLINE
#define TG_DEVICE_INLINE __device__ __forceinline__
#endif

namespace tg_dev {

typedef long long i64;
typedef unsigned long long u64;

/// Row-major index decomposition for up to kMaxRank dims: offset of flat output index i in an
/// operand with the given (possibly zero, for broadcast) strides.
constexpr int kMaxRank = 8;
struct Strided {
  int rank;
  i64 dims[kMaxRank];     ///< output dims
  i64 strides[kMaxRank];  ///< operand strides in elements, per output dim
};

TG_DEVICE_INLINE i64 offset_of(const Strided& s, i64 i) {
  i64 off = 0;
  for (int d = s.rank - 1; d >= 0; --d) {
    i64 q = i / s.dims[d];
    off += (i - q * s.dims[d]) * s.strides[d];
    i = q;
  }
  return off;
}

}  // namespace tg_dev
