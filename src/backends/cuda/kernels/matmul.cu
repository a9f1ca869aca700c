// Integer matmul kernel (see matmul.h): 16x16 output tiles, 16-deep slices of A and B staged in
// shared memory, wrap-around accumulation in an unsigned type. Grid: x over column tiles, y and z
// grid-stride over row tiles and batches (so any size fits the grid limits).
#include "backends/cuda/kernels/matmul.h"

#include <type_traits>

namespace tg::cuda::kernels {
namespace {

constexpr int kTile = 16;

template <typename T, typename Acc>
__device__ __forceinline__ Acc widen(T v) {
  return static_cast<Acc>(static_cast<long long>(v));  // sign- (or zero-) extend, then wrap
}

template <typename T, typename Acc>
__global__ void matmul_int_kernel(const T* __restrict a, const T* __restrict b, T* __restrict c,
                                  int64_t batches, MatmulBatchMap map, int64_t m, int64_t n,
                                  int64_t k, bool ta, bool tb, int64_t lda, int64_t ldb,
                                  int64_t row_tiles) {
  __shared__ Acc as[kTile][kTile + 1];
  __shared__ Acc bs[kTile][kTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kTile + tx;
  for (int64_t bz = blockIdx.z; bz < batches; bz += gridDim.z) {
    int64_t aoff = 0, boff = 0, rem = bz;
    for (int d = map.rank - 1; d >= 0; --d) {
      const int64_t idx = rem % map.dims[d];
      rem /= map.dims[d];
      aoff += idx * map.a_stride[d];
      boff += idx * map.b_stride[d];
    }
    const T* A = a + aoff;
    const T* B = b + boff;
    T* C = c + bz * m * n;
    for (int64_t by = blockIdx.y; by < row_tiles; by += gridDim.y) {
      const int64_t row = by * kTile + ty;
      Acc acc = 0;
      for (int64_t k0 = 0; k0 < k; k0 += kTile) {
        const int64_t ka = k0 + tx, kb = k0 + ty;
        as[ty][tx] = (row < m && ka < k) ? widen<T, Acc>(ta ? A[ka * lda + row] : A[row * lda + ka])
                                         : Acc(0);
        bs[ty][tx] = (kb < k && col < n) ? widen<T, Acc>(tb ? B[col * ldb + kb] : B[kb * ldb + col])
                                         : Acc(0);
        __syncthreads();
#pragma unroll
        for (int t = 0; t < kTile; ++t) acc += as[ty][t] * bs[t][tx];
        __syncthreads();
      }
      if (row < m && col < n) C[row * n + col] = static_cast<T>(acc);  // modular narrowing
    }
  }
}

template <typename T, typename Acc>
void launch(const void* a, const void* b, void* c, int64_t batches, const MatmulBatchMap& map,
            int64_t m, int64_t n, int64_t k, bool ta, bool tb, int64_t lda, int64_t ldb,
            cudaStream_t stream) {
  const int64_t col_tiles = (n + kTile - 1) / kTile, row_tiles = (m + kTile - 1) / kTile;
  dim3 grid(static_cast<unsigned>(col_tiles), static_cast<unsigned>(row_tiles < 65535 ? row_tiles : 65535),
            static_cast<unsigned>(batches < 65535 ? batches : 65535));
  dim3 block(kTile, kTile);
  matmul_int_kernel<T, Acc><<<grid, block, 0, stream>>>(
      static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(c), batches, map, m, n, k,
      ta, tb, lda, ldb, row_tiles);
}

}  // namespace

void launch_matmul_int(IntType type, const void* a, const void* b, void* c, int64_t batches,
                       const MatmulBatchMap& map, int64_t m, int64_t n, int64_t k, bool trans_a,
                       bool trans_b, int64_t lda, int64_t ldb, cudaStream_t stream) {
  if (batches <= 0 || m <= 0 || n <= 0 || k <= 0) return;
  switch (type) {
    case IntType::i8:
      launch<int8_t, uint32_t>(a, b, c, batches, map, m, n, k, trans_a, trans_b, lda, ldb, stream);
      break;
    case IntType::u8:
      launch<uint8_t, uint32_t>(a, b, c, batches, map, m, n, k, trans_a, trans_b, lda, ldb, stream);
      break;
    case IntType::i32:
      launch<int32_t, uint32_t>(a, b, c, batches, map, m, n, k, trans_a, trans_b, lda, ldb, stream);
      break;
    case IntType::i64:
      launch<int64_t, uint64_t>(a, b, c, batches, map, m, n, k, trans_a, trans_b, lda, ldb, stream);
      break;
  }
}

}  // namespace tg::cuda::kernels
