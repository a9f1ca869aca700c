// Launchers of the gather / scatter kernels (kernels/gather.cu) of the CUDA gather family
// (backends/cuda/gather.cpp). Plain pointers and sizes only.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/kernels/reduce.h"  // ScalarType, ScratchFn

namespace tg::cuda::kernels {

constexpr int kMaxGatherDims = 8;

/// Index i addresses a dim of size sizes[i % period].
struct IndexSizes {
  int period = 1;
  int64_t sizes[kMaxGatherDims] = {};
};

/// Reads n indices (int32 when !is64, else int64), maps negative ones to value + size and writes
/// them to out (int64). *first_bad (device) receives the smallest position of an index outside
/// [-size, size), or n when all are valid.
void normalize_indices(const void* idx, bool is64, int64_t n, const IndexSizes& sizes, int64_t* out,
                       unsigned long long* first_bad, cudaStream_t stream);

/// gather: output row r (rows = batch * pre * per_batch, each `slice` elements) copies x row
/// (bp * dim + ind[b * per_batch + n]) with n = r % per_batch, bp = r / per_batch, b = bp / pre.
void gather(const void* x, void* y, int elem_size, const int64_t* ind, int64_t rows, int64_t slice,
            int64_t per_batch, int64_t pre, int64_t dim, cudaStream_t stream);

/// gather_nd: output row r (rows = batch * tuples) copies the x slice at
/// (r / tuples) * batch_stride + slice * sum_j ind[r * k + j] * tuple_strides[j].
void gather_nd(const void* x, void* y, int elem_size, const int64_t* ind, int64_t rows,
               int64_t tuples, int k, const int64_t* tuple_strides, int64_t slice,
               int64_t batch_stride, cudaStream_t stream);

/// Sets *first_bad (device) to n: the start value of the checked gathers' flag.
void init_index_flag(unsigned long long* first_bad, int64_t n, cudaStream_t stream);

/// gather from the raw indices `idx` (int64 when idx64, else int32) of the index tensor, each
/// checked against [-dim, dim) where it is read: an invalid one lowers *first_bad to its position
/// (atomicMin; init_index_flag first) and reads row 0. Otherwise as gather above.
void gather_checked(const void* x, void* y, int elem_size, const void* idx, bool idx64, int64_t rows,
                    int64_t slice, int64_t per_batch, int64_t pre, int64_t dim,
                    unsigned long long* first_bad, cudaStream_t stream);

/// gather_nd from raw indices, index j of each tuple checked against [-sizes[j], sizes[j]) as in
/// gather_checked. Otherwise as gather_nd above.
void gather_nd_checked(const void* x, void* y, int elem_size, const void* idx, bool idx64, int64_t rows,
                       int64_t tuples, int k, const int64_t* tuple_strides, const int64_t* sizes, int64_t slice,
                       int64_t batch_stride, unsigned long long* first_bad, cudaStream_t stream);

/// Element i of an indices tensor (dims idx_dims, rank) addresses the operand element
/// sum_{d != axis} c_d * x_strides[d] + ind[i] * x_strides[axis].
struct ElementsParams {
  int rank = 0;
  int axis = 0;
  int64_t idx_dims[kMaxGatherDims] = {};
  int64_t x_strides[kMaxGatherDims] = {};
};
void gather_elements(const void* x, void* y, int elem_size, const int64_t* ind, int64_t n,
                     const ElementsParams& p, cudaStream_t stream);

/// Scatter of `units` updates of `slice` elements each into y (already a copy of data): unit u
/// targets y slice key(u) (scatter_nd: sum_j ind[u * k + j] * tuple_strides[j]; scatter_elements:
/// slice 1, the element addressed as in gather_elements) and is combined with it by `reduction`
/// (0 none, 1 add, 2 mul, 3 min, 4 max; the CPU's semantics). Updates to one target are applied
/// in row-major order (a stable sort of the units by target, then one thread a target and slice
/// element walks its run): deterministic, the last update wins with none. num_targets bounds the
/// keys (for the sort's bit count).
struct ScatterParams {
  int64_t units = 0;
  int64_t slice = 1;
  int64_t num_targets = 0;
  int reduction = 0;
  bool elements = false;  ///< scatter_elements (ElementsParams) vs scatter_nd (k, tuple_strides)
  int k = 0;
  int64_t tuple_strides[kMaxGatherDims] = {};
  ElementsParams ep;
};
void scatter(ScalarType type, const void* updates, void* y, const int64_t* ind,
             const ScatterParams& p, const ScratchFn& scratch, cudaStream_t stream);

}  // namespace tg::cuda::kernels
