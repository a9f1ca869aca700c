// Integer matmul on the GPU (i8, u8, i32, i64), the part of the matmul family cuBLASLt does not
// cover with the CPU's semantics: products and sums wrap around in two's complement (computed in
// uint32 for the narrow types, uint64 for i64: the low bits agree with the CPU's uint64 sums).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace tg::cuda::kernels {

/// How output batch index b (row-major over `dims`) maps to operand offsets (in elements):
/// offset_a = sum_d idx_d * a_stride[d], the same for b; a stride of 0 broadcasts.
struct MatmulBatchMap {
  static constexpr int kMaxRank = 8;
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t a_stride[kMaxRank] = {};
  int64_t b_stride[kMaxRank] = {};
};

enum class IntType { i8, u8, i32, i64 };

/// C[b] = op(A[b]) * op(B[b]) for `batches` output matrices of m x n (C contiguous), with A
/// stored row-major with leading dim lda (op(A)[i, k] = trans_a ? A[k * lda + i] : A[i * lda + k])
/// and B likewise (op(B)[k, j] = trans_b ? B[j * ldb + k] : B[k * ldb + j]). k >= 1.
void launch_matmul_int(IntType type, const void* a, const void* b, void* c, int64_t batches,
                       const MatmulBatchMap& map, int64_t m, int64_t n, int64_t k, bool trans_a,
                       bool trans_b, int64_t lda, int64_t ldb, cudaStream_t stream);

}  // namespace tg::cuda::kernels
