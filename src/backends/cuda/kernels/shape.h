// Launchers of the data-movement kernels (kernels/shape.cu) used by the shape family
// (backends/cuda/shape.cpp) and by other families that need a strided copy. Plain pointers and
// sizes only; every launcher queues work on `stream` and returns at once.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace tg::cuda::kernels {

/// Most dims a strided view may have after simplification (tile doubles the rank).
constexpr int kMaxViewDims = 12;

/// Output element at row-major multi-index o (over `dims`) is source element
/// offset + sum(o[i] * strides[i]) (strides in elements, 0 or negative allowed).
struct StridedView {
  int rank = 0;
  int64_t dims[kMaxViewDims] = {};
  int64_t strides[kMaxViewDims] = {};
  int64_t offset = 0;
};

/// dst (contiguous, the view's shape) = the view of src. `view` must be simplified (no size-1
/// dims, rank >= 1); elem_size is 1, 2, 4 or 8. Picks a memcpy, a vectorized row copy (16-byte
/// words), a tiled shared-memory transpose or the generic index-mapping kernel.
void copy_view(const void* src, void* dst, int elem_size, const StridedView& view,
               cudaStream_t stream);

/// pad: per output dim the input dim, its stride, and the padding before it.
struct PadParams {
  int rank = 0;
  int64_t out_dims[kMaxViewDims] = {};
  int64_t in_dims[kMaxViewDims] = {};
  int64_t in_strides[kMaxViewDims] = {};
  int64_t before[kMaxViewDims] = {};
  int mode = 0;        ///< 0 constant, 1 reflect, 2 symmetric, 3 edge (clamp), 4 periodic
  uint64_t value = 0;  ///< the constant's bits in the element type (low elem_size bytes)
};
void pad(const void* src, void* dst, int elem_size, const PadParams& p, cudaStream_t stream);

/// concat piece: src is [outer, in_row] bytes, written to dst rows of out_row bytes at byte
/// offset dst_offset.
void concat_piece(const void* src, void* dst, int64_t outer, int64_t in_row, int64_t out_row,
                  int64_t dst_offset, cudaStream_t stream);

}  // namespace tg::cuda::kernels
