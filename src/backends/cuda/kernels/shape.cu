// Data-movement kernels of the CUDA shape family: strided views (broadcast_to, transpose, slice,
// reverse, tile all reduce to "output element i reads source offset(i)"), pad and concat.
//
// Elements are moved as unsigned words of their size (any dtype alike). copy_view picks:
// - a cudaMemcpyAsync when the (simplified) view is one contiguous run;
// - the generic index-mapping kernel otherwise, on 16/8/4-byte words when the innermost dim is
//   contiguous and every stride, the offset and the run length allow it (rows of slices,
//   broadcasts, tiles and concat pieces move as 16-byte vectors);
// - a tiled shared-memory transpose (32x32 tiles, reads and writes coalesced) when the innermost
//   output dim is strided in the source but another dim is contiguous there (NCHW <-> NHWC); for
//   2-byte elements in a rank-3 view, 64x64 tiles moved as element pairs (transpose_pairs_kernel).
// Index math is 32-bit when the element count is below 2^31, 64-bit otherwise; source offsets are
// always 64-bit. Grid-stride loops; nothing is launched for zero elements.
#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/kernels/shape.h"
#include "backends/cuda/kernels/module_anchors.h"

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

// Tiled transpose of 2-byte elements (bf16, f16: the NCHW <-> NHWC boundary of bf16 training
// graphs) for a rank-3 view out[i0][iq][il] = src[off + i0*s0 + iq + il*sl]: 64x64 tiles, each
// thread moving element pairs, loaded (PL) and stored (PS) as 4-byte words where the addresses
// allow, 32-bit tile indices, the outer dim on grid z. About 3x the bandwidth of
// transpose_tiled_kernel<2> on an H200 (2.0-2.6 vs 0.67-0.87 TB/s on ResNet-50 batch-128 shapes).
template <bool PL, bool PS>
__global__ void __launch_bounds__(256) transpose_pairs_kernel(const unsigned short* __restrict__ src,
                                                              unsigned short* __restrict__ dst, i64 off,
                                                              i64 s0, i64 sl, int nq, int nl, int n0) {
  __shared__ unsigned short buf[64][65];  // [l][q]
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int q0 = static_cast<int>(blockIdx.y) * 64, l0 = static_cast<int>(blockIdx.x) * 64;
  const int nq_t = min(nq - q0, 64), nl_t = min(nl - l0, 64);
  const int c = 2 * tx;
  for (int i0 = static_cast<int>(blockIdx.z); i0 < n0; i0 += static_cast<int>(gridDim.z)) {
    const unsigned short* s = src + off + static_cast<i64>(i0) * s0 + q0;
    unsigned short* d = dst + (static_cast<i64>(i0) * nq + q0) * nl + l0;
    for (int il = ty; il < nl_t; il += 8) {
      const unsigned short* row = s + static_cast<i64>(l0 + il) * sl;
      if (PL && c + 1 < nq_t) {
        const unsigned int w = *reinterpret_cast<const unsigned int*>(row + c);
        buf[il][c] = static_cast<unsigned short>(w & 0xffffu);
        buf[il][c + 1] = static_cast<unsigned short>(w >> 16);
      } else {
        if (c < nq_t) buf[il][c] = row[c];
        if (c + 1 < nq_t) buf[il][c + 1] = row[c + 1];
      }
    }
    __syncthreads();
    for (int iq = ty; iq < nq_t; iq += 8) {
      unsigned short* orow = d + static_cast<i64>(iq) * nl;
      if (PS && c + 1 < nl_t) {
        *reinterpret_cast<unsigned int*>(orow + c) =
            static_cast<unsigned int>(buf[c][iq]) | (static_cast<unsigned int>(buf[c + 1][iq]) << 16);
      } else {
        if (c < nl_t) orow[c] = buf[c][iq];
        if (c + 1 < nl_t) orow[c + 1] = buf[c + 1][iq];
      }
    }
    __syncthreads();
  }
}

// transpose_pairs_kernel where it applies (2-byte elements, rank 3, source dim 1 contiguous, sizes
// within its 32-bit tile indices); false otherwise.
bool launch_pairs(const void* src, void* dst, const StridedView& v, int q, cudaStream_t stream) {
  if (v.rank != 3 || q != 1) return false;
  const i64 n0 = v.dims[0], nq = v.dims[1], nl = v.dims[2];
  const i64 limit = i64{1} << 30;
  if (nq >= limit || nl >= limit || n0 >= limit || (nq + 63) / 64 > 65535) return false;
  const bool pl = v.offset % 2 == 0 && v.strides[0] % 2 == 0 && v.strides[2] % 2 == 0 &&
                  reinterpret_cast<uintptr_t>(src) % 4 == 0;
  const bool ps = nl % 2 == 0 && reinterpret_cast<uintptr_t>(dst) % 4 == 0;
  const dim3 grid(static_cast<unsigned>((nl + 63) / 64), static_cast<unsigned>((nq + 63) / 64),
                  static_cast<unsigned>(n0 < 65535 ? n0 : 65535));
  const dim3 block(32, 8);
  const auto* s = static_cast<const unsigned short*>(src);
  auto* d = static_cast<unsigned short*>(dst);
  const i64 off = v.offset, s0 = v.strides[0], sl = v.strides[2];
  const int a = static_cast<int>(nq), b = static_cast<int>(nl), c = static_cast<int>(n0);
  if (pl && ps) {
    transpose_pairs_kernel<true, true><<<grid, block, 0, stream>>>(s, d, off, s0, sl, a, b, c);
  } else if (pl) {
    transpose_pairs_kernel<true, false><<<grid, block, 0, stream>>>(s, d, off, s0, sl, a, b, c);
  } else if (ps) {
    transpose_pairs_kernel<false, true><<<grid, block, 0, stream>>>(s, d, off, s0, sl, a, b, c);
  } else {
    transpose_pairs_kernel<false, false><<<grid, block, 0, stream>>>(s, d, off, s0, sl, a, b, c);
  }
  return true;
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

const void* shape_module_anchor() { return reinterpret_cast<const void*>(&transpose_pairs_kernel<true, true>); }

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
          if (launch_pairs(src, dst, v, q, stream)) return;
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
