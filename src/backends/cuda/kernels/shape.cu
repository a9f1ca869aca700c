// Data-movement kernels of the CUDA shape family: strided views (broadcast_to, transpose, slice,
// reverse, tile all reduce to "output element i reads source offset(i)"), pad and concat.
//
// Elements are moved as unsigned words of their size (any dtype alike). copy_view picks:
// - a cudaMemcpyAsync when the (simplified) view is one contiguous run;
// - the generic index-mapping kernel otherwise, on 16/8/4-byte words when the innermost dim is
//   contiguous and every stride, the offset and the run length allow it (rows of slices,
//   broadcasts, tiles and concat pieces move as 16-byte vectors);
// - a tiled shared-memory transpose (32x32 tiles, reads and writes coalesced) when the innermost
//   output dim is strided in the source but another dim is contiguous there (NCHW <-> NHWC).
// Index math is 32-bit when the element count is below 2^31, 64-bit otherwise; source offsets are
// always 64-bit. Grid-stride loops; nothing is launched for zero elements.
#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/kernels/shape.h"

namespace tg::cuda::kernels {
namespace {

typedef long long i64;

template <int W>
struct WordOf;
template <>
struct WordOf<1> {
  typedef unsigned char type;
};
template <>
struct WordOf<2> {
  typedef unsigned short type;
};
template <>
struct WordOf<4> {
  typedef unsigned int type;
};
template <>
struct WordOf<8> {
  typedef unsigned long long type;
};
template <>
struct WordOf<16> {
  typedef uint4 type;
};
template <int W>
using word_t = typename WordOf<W>::type;

constexpr int kThreads = 256;

unsigned blocks_for(i64 n, int threads = kThreads) {
  i64 b = (n + threads - 1) / threads;
  if (b < 1) b = 1;
  if (b > 65535LL * 32) b = 65535LL * 32;
  return static_cast<unsigned>(b);
}

template <int W, typename I>
__global__ void strided_copy_kernel(const word_t<W>* __restrict__ src, word_t<W>* __restrict__ dst,
                                    StridedView v, I n) {
  const I step = static_cast<I>(gridDim.x) * blockDim.x;
  for (I i = static_cast<I>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    I rest = i;
    i64 off = v.offset;
    for (int d = v.rank - 1; d > 0; --d) {
      const I dim = static_cast<I>(v.dims[d]);
      const I q = rest / dim;
      off += static_cast<i64>(rest - q * dim) * v.strides[d];
      rest = q;
    }
    off += static_cast<i64>(rest) * v.strides[0];
    dst[i] = src[off];
  }
}

// Tiled transpose: source dim q has stride 1, the last output dim (stride sl in the source) is
// written contiguously. Blocks of 32x8 threads, one 32x32 tile per iteration.
template <int W>
__global__ void transpose_tiled_kernel(const word_t<W>* __restrict__ src,
                                       word_t<W>* __restrict__ dst, StridedView v, int q, i64 tq,
                                       i64 tl, i64 tasks) {
  typedef word_t<W> T;
  __shared__ T buf[32][33];
  const int last = v.rank - 1;
  const i64 nq = v.dims[q], nl = v.dims[last], sl = v.strides[last];
  i64 dq = 1;  // output stride of dim q
  for (int d = last; d > q; --d) dq *= v.dims[d];
  const int tx = threadIdx.x, ty = threadIdx.y;
  for (i64 task = blockIdx.x; task < tasks; task += gridDim.x) {
    const i64 q0 = (task % tq) * 32, l0 = (task / tq % tl) * 32;
    i64 rest = task / (tq * tl), src_base = v.offset, dst_base = 0, out_stride = nl;
    for (int d = last - 1; d >= 0; --d) {
      if (d != q) {
        const i64 i = rest % v.dims[d];
        rest /= v.dims[d];
        src_base += i * v.strides[d];
        dst_base += i * out_stride;
      }
      out_stride *= v.dims[d];
    }
    const i64 nq_t = min(nq - q0, i64{32}), nl_t = min(nl - l0, i64{32});
    if (tx < nq_t) {
      for (int il = ty; il < nl_t; il += 8) buf[il][tx] = src[src_base + q0 + tx + (l0 + il) * sl];
    }
    __syncthreads();
    if (tx < nl_t) {
      for (int iq = ty; iq < nq_t; iq += 8) dst[dst_base + (q0 + iq) * dq + l0 + tx] = buf[tx][iq];
    }
    __syncthreads();
  }
}

template <int W>
void launch_strided(const void* src, void* dst, const StridedView& v, i64 n, cudaStream_t stream) {
  const auto* s = static_cast<const word_t<W>*>(src);
  auto* d = static_cast<word_t<W>*>(dst);
  if (n < (i64{1} << 31)) {
    strided_copy_kernel<W, unsigned>
        <<<blocks_for(n), kThreads, 0, stream>>>(s, d, v, static_cast<unsigned>(n));
  } else {
    strided_copy_kernel<W, unsigned long long>
        <<<blocks_for(n), kThreads, 0, stream>>>(s, d, v, static_cast<unsigned long long>(n));
  }
}

void launch_strided_any(int w, const void* src, void* dst, const StridedView& v, i64 n,
                        cudaStream_t stream) {
  switch (w) {
    case 1:
      return launch_strided<1>(src, dst, v, n, stream);
    case 2:
      return launch_strided<2>(src, dst, v, n, stream);
    case 4:
      return launch_strided<4>(src, dst, v, n, stream);
    case 8:
      return launch_strided<8>(src, dst, v, n, stream);
    default:
      return launch_strided<16>(src, dst, v, n, stream);
  }
}

template <int W>
void launch_tiled(const void* src, void* dst, const StridedView& v, int q, i64 n,
                  cudaStream_t stream) {
  const i64 nq = v.dims[q], nl = v.dims[v.rank - 1];
  const i64 tq = (nq + 31) / 32, tl = (nl + 31) / 32;
  const i64 tasks = n / (nq * nl) * tq * tl;
  const i64 grid = tasks < 65535LL * 32 ? tasks : 65535LL * 32;
  transpose_tiled_kernel<W><<<static_cast<unsigned>(grid), dim3(32, 8), 0, stream>>>(
      static_cast<const word_t<W>*>(src), static_cast<word_t<W>*>(dst), v, q, tq, tl, tasks);
}

bool aligned(const void* p, int w) {
  return reinterpret_cast<uintptr_t>(p) % static_cast<uintptr_t>(w) == 0;
}

// ---- pad -----------------------------------------------------------------------------------

__device__ __forceinline__ i64 floor_mod(i64 a, i64 n) {
  i64 r = a % n;
  return r < 0 ? r + n : r;
}

// ops::boundary_index with PadMode numbering (0 constant, 1 reflect, 2 symmetric, 3 edge,
// 4 periodic): the source index of padded position p of a dim of size n, or -1.
__device__ __forceinline__ i64 pad_source(i64 p, i64 n, int mode) {
  if (p >= 0 && p < n) return p;
  switch (mode) {
    case 1: {
      if (n == 1) return 0;
      const i64 q = floor_mod(p, 2 * n - 2);
      return q < n ? q : 2 * n - 2 - q;
    }
    case 2: {
      const i64 q = floor_mod(p, 2 * n);
      return q < n ? q : 2 * n - 1 - q;
    }
    case 3:
      return p < 0 ? 0 : n - 1;
    case 4:
      return floor_mod(p, n);
    default:
      return -1;
  }
}

template <int W, typename I>
__global__ void pad_kernel(const word_t<W>* __restrict__ src, word_t<W>* __restrict__ dst,
                           PadParams p, word_t<W> value, I n) {
  const I step = static_cast<I>(gridDim.x) * blockDim.x;
  for (I i = static_cast<I>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    I rest = i;
    i64 off = 0;
    bool inside = true;
    for (int d = p.rank - 1; d >= 0; --d) {
      const I dim = static_cast<I>(p.out_dims[d]);
      const I q = rest / dim;
      const i64 m =
          pad_source(static_cast<i64>(rest - q * dim) - p.before[d], p.in_dims[d], p.mode);
      rest = q;
      inside = inside && m >= 0;
      off += m * p.in_strides[d];
    }
    dst[i] = inside ? src[off] : value;
  }
}

template <int W>
void launch_pad(const void* src, void* dst, const PadParams& p, cudaStream_t stream) {
  i64 n = 1;
  for (int d = 0; d < p.rank; ++d) n *= p.out_dims[d];
  if (n == 0) return;
  word_t<W> value;
  __builtin_memcpy(&value, &p.value, W);
  const auto* s = static_cast<const word_t<W>*>(src);
  auto* d = static_cast<word_t<W>*>(dst);
  if (n < (i64{1} << 31)) {
    pad_kernel<W, unsigned>
        <<<blocks_for(n), kThreads, 0, stream>>>(s, d, p, value, static_cast<unsigned>(n));
  } else {
    pad_kernel<W, unsigned long long><<<blocks_for(n), kThreads, 0, stream>>>(
        s, d, p, value, static_cast<unsigned long long>(n));
  }
}

template <int W, typename I>
__global__ void rows_kernel(const word_t<W>* __restrict__ src, word_t<W>* __restrict__ dst, I n,
                            I in_row, i64 out_row) {
  const I step = static_cast<I>(gridDim.x) * blockDim.x;
  for (I i = static_cast<I>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    const I r = i / in_row;
    dst[static_cast<i64>(r) * out_row + (i - r * in_row)] = src[i];
  }
}

template <int W>
void launch_rows(const void* src, void* dst, i64 n, i64 in_row, i64 out_row, cudaStream_t stream) {
  const auto* s = static_cast<const word_t<W>*>(src);
  auto* d = static_cast<word_t<W>*>(dst);
  if (n < (i64{1} << 31)) {
    rows_kernel<W, unsigned><<<blocks_for(n), kThreads, 0, stream>>>(
        s, d, static_cast<unsigned>(n), static_cast<unsigned>(in_row), out_row);
  } else {
    rows_kernel<W, unsigned long long><<<blocks_for(n), kThreads, 0, stream>>>(
        s, d, static_cast<unsigned long long>(n), static_cast<unsigned long long>(in_row), out_row);
  }
}

}  // namespace

void copy_view(const void* src, void* dst, int elem_size, const StridedView& view,
               cudaStream_t stream) {
  StridedView v = view;
  i64 n = 1;
  for (int d = 0; d < v.rank; ++d) n *= v.dims[d];
  if (n == 0) return;
  const int last = v.rank - 1;
  const auto* s = static_cast<const char*>(src);
  if (v.rank == 1 && v.strides[0] == 1) {
    cudaMemcpyAsync(dst, s + v.offset * elem_size, static_cast<size_t>(n) * elem_size,
                    cudaMemcpyDeviceToDevice, stream);
    return;
  }
  if (v.strides[last] != 1 && v.strides[last] != 0) {
    int q = -1;
    for (int d = 0; d < last; ++d)
      if (v.strides[d] == 1) q = d;
    if (q >= 0) {
      switch (elem_size) {
        case 1:
          return launch_tiled<1>(src, dst, v, q, n, stream);
        case 2:
          return launch_tiled<2>(src, dst, v, q, n, stream);
        case 4:
          return launch_tiled<4>(src, dst, v, q, n, stream);
        default:
          return launch_tiled<8>(src, dst, v, q, n, stream);
      }
    }
  }
  int w = elem_size;
  if (v.strides[last] == 1) {
    // Widen to the largest word that divides every byte stride, the offset and the run.
    for (int cand = 16; cand > elem_size; cand /= 2) {
      bool ok = aligned(src, cand) && aligned(dst, cand) &&
                (v.dims[last] * elem_size) % cand == 0 && (v.offset * elem_size) % cand == 0;
      for (int d = 0; ok && d < last; ++d) ok = (v.strides[d] * elem_size) % cand == 0;
      if (ok) {
        w = cand;
        break;
      }
    }
    if (w != elem_size) {
      const i64 f = w / elem_size;
      v.dims[last] /= f;
      v.offset /= f;
      for (int d = 0; d < last; ++d) v.strides[d] /= f;
      n /= f;
    }
  }
  launch_strided_any(w, src, dst, v, n, stream);
}

void pad(const void* src, void* dst, int elem_size, const PadParams& p, cudaStream_t stream) {
  switch (elem_size) {
    case 1:
      return launch_pad<1>(src, dst, p, stream);
    case 2:
      return launch_pad<2>(src, dst, p, stream);
    case 4:
      return launch_pad<4>(src, dst, p, stream);
    default:
      return launch_pad<8>(src, dst, p, stream);
  }
}

void concat_piece(const void* src, void* dst, int64_t outer, int64_t in_row, int64_t out_row,
                  int64_t dst_offset, cudaStream_t stream) {
  if (outer == 0 || in_row == 0) return;
  char* d = static_cast<char*>(dst) + dst_offset;
  if (outer == 1 || in_row == out_row) {
    cudaMemcpyAsync(d, src, static_cast<size_t>(outer * in_row), cudaMemcpyDeviceToDevice, stream);
    return;
  }
  // Rows of in_row bytes from a contiguous src into dst rows of out_row bytes, moved as the
  // widest words that divide both row sizes (and the pointers' alignment).
  int w = 1;
  for (int cand = 16; cand > 1; cand /= 2) {
    if (aligned(src, cand) && aligned(d, cand) && in_row % cand == 0 && out_row % cand == 0) {
      w = cand;
      break;
    }
  }
  const i64 n = outer * (in_row / w);
  switch (w) {
    case 1:
      return launch_rows<1>(src, d, n, in_row, out_row, stream);
    case 2:
      return launch_rows<2>(src, d, n, in_row / 2, out_row / 2, stream);
    case 4:
      return launch_rows<4>(src, d, n, in_row / 4, out_row / 4, stream);
    case 8:
      return launch_rows<8>(src, d, n, in_row / 8, out_row / 8, stream);
    default:
      return launch_rows<16>(src, d, n, in_row / 16, out_row / 16, stream);
  }
}

}  // namespace tg::cuda::kernels
