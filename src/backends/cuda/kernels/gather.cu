// Gather / scatter kernels of the CUDA gather family.
//
// - normalize_indices: one pass over the indices (int32/int64) mapping negatives to
//   value + size; an invalid index lowers a device "first bad position" with atomicMin and reads
//   as 0 (a report kernel then writes the run's device error record: context.h report_flag).
// - gather / gather_nd: whole slices are copied, thread per slice word; slices move as the
//   widest word (16/8/4/2/1 bytes) dividing the slice's byte size. The checked variants read the
//   raw indices and validate them in the copy kernel itself (no normalization pass); within a
//   warp the lane holding a row's first word computes the row's source and shuffles it to the
//   lanes of the same row (index loads and checks amortized over the row's words). The gather
//   moves 4 chunks of 32 words a warp step, their index loads and then their data loads in
//   flight together (rows_chunked_kernel).
// - gather_elements: thread per output element, coordinates decomposed per element.
// - scatter (scatter_nd, scatter_elements; y already holds a copy of data): the update units
//   (slices / elements) are keyed by their target, stably radix-sorted by target (cub), and
//   each run of equal targets is applied in row-major update order by one thread per slice
//   element: exactly the CPU's sequential semantics (last update wins for none; add/mul round
//   after each step in f16/bf16/f32), deterministic, no atomics on data. A target hit by very
//   many updates is walked serially by one thread (slow but correct).
#include "backends/cuda/kernels/compute.cuh"
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cub/device/device_radix_sort.cuh>
#include <type_traits>

#include "backends/cuda/kernels/gather.h"
#include "backends/cuda/kernels/module_anchors.h"

namespace tg::cuda::kernels {
namespace {

typedef long long i64;
typedef unsigned long long u64;
constexpr int kThreads = 256;

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

unsigned blocks_for(i64 n, int threads = kThreads) {
  i64 b = (n + threads - 1) / threads;
  if (b < 1) b = 1;
  if (b > 65535LL * 32) b = 65535LL * 32;
  return static_cast<unsigned>(b);
}

bool aligned(const void* p, int w) {
  return reinterpret_cast<uintptr_t>(p) % static_cast<uintptr_t>(w) == 0;
}

// ---- indices -------------------------------------------------------------------------------

__global__ void init_flag_kernel(u64* flag, u64 v) { *flag = v; }

template <typename I>
__global__ void normalize_kernel(const I* __restrict__ idx, i64 n, IndexSizes s,
                                 i64* __restrict__ out, u64* first_bad) {
  for (i64 i = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<i64>(gridDim.x) * blockDim.x) {
    const i64 v = idx[i], size = s.sizes[s.period == 1 ? 0 : i % s.period];
    if (v < -size || v >= size) {
      atomicMin(first_bad, static_cast<u64>(i));
      out[i] = 0;  // in bounds for the op's kernel; the run fails (the device error record)
    } else {
      out[i] = v < 0 ? v + size : v;
    }
  }
}

// ---- gathers -------------------------------------------------------------------------------

struct GatherRow {  // source slice of output row r (gather)
  const i64* ind;
  i64 per_batch, pre, dim;
  __device__ i64 operator()(i64 r) const {
    const i64 bp = r / per_batch, n = r - bp * per_batch, b = bp / pre;
    return bp * dim + ind[b * per_batch + n];
  }
};

struct GatherNdRow {  // source slice of output row r (gather_nd)
  const i64* ind;
  i64 tuples, batch_rows;
  int k;
  i64 strides[kMaxGatherDims];
  __device__ i64 operator()(i64 r) const {
    i64 off = 0;
    for (int j = 0; j < k; ++j) off += ind[r * k + j] * strides[j];
    return r / tuples * batch_rows + off;
  }
};

template <int W, typename I, typename RowFn>
__global__ void rows_kernel(const word_t<W>* __restrict__ x, word_t<W>* __restrict__ y, I total,
                            I slice_w, RowFn fn) {
  const I step = static_cast<I>(gridDim.x) * blockDim.x;
  for (I t = static_cast<I>(blockIdx.x) * blockDim.x + threadIdx.x; t < total; t += step) {
    const I r = t / slice_w;
    y[t] = x[fn(r) * static_cast<i64>(slice_w) + (t - r * slice_w)];
  }
}

template <int W, typename RowFn>
void launch_rows_w(const void* x, void* y, i64 rows, i64 slice_w, const RowFn& fn,
                   cudaStream_t stream) {
  const i64 total = rows * slice_w;
  const auto* s = static_cast<const word_t<W>*>(x);
  auto* d = static_cast<word_t<W>*>(y);
  if (total < (i64{1} << 31)) {
    rows_kernel<W, unsigned><<<blocks_for(total), kThreads, 0, stream>>>(
        s, d, static_cast<unsigned>(total), static_cast<unsigned>(slice_w), fn);
  } else {
    rows_kernel<W, u64><<<blocks_for(total), kThreads, 0, stream>>>(s, d, static_cast<u64>(total),
                                                                    static_cast<u64>(slice_w), fn);
  }
}

// The widest access (16, 8, 4, 2 bytes, at least the element's) that divides a row of `bytes`
// and both buffers' alignment: rows are copied in words of that size.
inline int word_bytes(const void* x, const void* y, int elem_size, i64 bytes) {
  for (int cand = 16; cand > elem_size; cand /= 2) {
    if (bytes % cand == 0 && aligned(x, cand) && aligned(y, cand)) return cand;
  }
  return elem_size;
}

template <typename RowFn>
void launch_rows(const void* x, void* y, int elem_size, i64 rows, i64 slice, const RowFn& fn,
                 cudaStream_t stream) {
  if (rows * slice == 0) return;
  const i64 bytes = slice * elem_size;
  const int w = word_bytes(x, y, elem_size, bytes);
  const i64 slice_w = bytes / w;
  switch (w) {
    case 1:
      return launch_rows_w<1>(x, y, rows, slice_w, fn, stream);
    case 2:
      return launch_rows_w<2>(x, y, rows, slice_w, fn, stream);
    case 4:
      return launch_rows_w<4>(x, y, rows, slice_w, fn, stream);
    case 8:
      return launch_rows_w<8>(x, y, rows, slice_w, fn, stream);
    default:
      return launch_rows_w<16>(x, y, rows, slice_w, fn, stream);
  }
}

// Checked rows: the raw indices (int32 or int64) are validated where they are read (no
// normalization pass): an index outside [-size, size) lowers *first_bad to its position in the
// indices tensor (atomicMin) and reads row 0, so the copy stays in bounds.
template <typename IdxT>
__device__ __forceinline__ i64 checked_index(const IdxT* idx, i64 pos, i64 size, u64* first_bad) {
  i64 v = static_cast<i64>(__ldg(idx + pos));
  if (v < -size || v >= size) {
    atomicMin(first_bad, static_cast<u64>(pos));
    return 0;
  }
  return v < 0 ? v + size : v;
}

// The gather's row functor comes in two steps (rows_chunked_kernel), so that a thread's index loads
// of several rows are in flight together: start(r) issues the load (a Pending), finish(r, p)
// checks it and gives the source slice of row r.
template <typename IdxT>
struct GatherRowChecked {  // source slice of output row r (gather), from raw indices
  const IdxT* idx;
  i64 per_batch, pre, dim;
  u64* first_bad;
  static constexpr int kChunks = 4;  // rows_chunked_kernel
  struct Pending {
    i64 v = 0;  // the raw index
  };
  // Position in idx of row r's index, and the first source row of its batch and outer position.
  __device__ i64 position(i64 r, i64& base) const {
    if (r < per_batch) {  // the first batch and outer position (all rows for batch_dims 0, axis 0)
      base = 0;
      return r;
    }
    const i64 bp = r / per_batch, n = r - bp * per_batch, b = bp / pre;
    base = bp * dim;
    return b * per_batch + n;
  }
  __device__ Pending start(i64 r) const {
    i64 base;
    return {static_cast<i64>(__ldg(idx + position(r, base)))};
  }
  __device__ i64 finish(i64 r, const Pending& p) const {
    i64 base;
    const i64 pos = position(r, base), v = p.v;
    if (v < -dim || v >= dim) {
      atomicMin(first_bad, static_cast<u64>(pos));
      return base;
    }
    return base + (v < 0 ? v + dim : v);
  }
};

template <typename IdxT>
struct GatherNdRowChecked {  // source slice of output row r (gather_nd), from raw indices
  const IdxT* idx;
  i64 tuples, batch_rows;
  int k;
  i64 strides[kMaxGatherDims], sizes[kMaxGatherDims];
  u64* first_bad;
  // rows_checked_kernel (H200, session 21: rows_chunked_kernel with one chunk, 48 registers, made
  // the gather_nd row of bench_stencil_cuda 0.1150 ms against 0.0910 here, 32 registers).
  static constexpr int kChunks = 1;
  __device__ i64 operator()(i64 r) const {
    i64 off = 0;
    for (int j = 0; j < k; ++j) off += checked_index(idx, r * k + j, sizes[j], first_bad) * strides[j];
    return r / tuples * batch_rows + off;
  }
};

// One warp-wide step of a checked gather: each thread moves one word; a row's index is computed
// once per group of lanes sharing the row (the lane holding its first word) and shuffled to the
// others, so index loads and checks are amortized over the row's words.
// t / d for 0 <= t < 2^31 by d's magic numbers (m, s), as kernels/pool.cu's Divider; 64-bit
// indices divide plainly (m = 0).
struct RowDiv {
  unsigned m = 0, s = 0;
};
RowDiv row_div(i64 d) {
  RowDiv r;
  const u64 u = static_cast<u64>(d < 1 ? 1 : d);
  while ((u64{1} << r.s) < u) ++r.s;
  r.m = static_cast<unsigned>((u64{1} << 32) * ((u64{1} << r.s) - u) / u + 1);
  return r;
}
template <typename I>
__device__ __forceinline__ I div_row(I t, I d, RowDiv q) {
  if constexpr (sizeof(I) == 4) {
    return static_cast<I>((static_cast<u64>(__umulhi(static_cast<unsigned>(t), q.m)) + t) >> q.s);
  } else {
    return t / d;
  }
}

template <int W, typename I, typename RowFn>
__global__ void rows_checked_kernel(const word_t<W>* __restrict__ x, word_t<W>* __restrict__ y, I total,
                                    I slice_w, RowDiv dw, RowFn fn) {
  const I step = static_cast<I>(gridDim.x) * blockDim.x;
  // Uniform trip count across the warp (the shuffle needs every lane).
  const I base0 = static_cast<I>(blockIdx.x) * blockDim.x + (threadIdx.x & ~31u);
  const unsigned lane = threadIdx.x & 31u;
  for (I b = base0; b < total; b += step) {
    const I t = b + lane;
    const bool live = t < total;
    const I r = live ? div_row<I>(t, slice_w, dw) : 0;
    // Lanes whose word starts a row, or lane 0, load its index; others read theirs by shuffle.
    const bool leader = live && (lane == 0 || t - r * slice_w == 0);
    i64 src = leader ? fn(r) : 0;
    if (slice_w < 32) {
      // The leader of row r is lane max(0, r * slice_w - b).
      const I lead_t = r * slice_w;
      const int from = lead_t > b ? static_cast<int>(lead_t - b) : 0;
      src = __shfl_sync(0xffffffffu, src, from);
    } else if (!leader && live) {
      src = fn(r);
    }
    if (live) y[t] = x[src * static_cast<i64>(slice_w) + (t - r * slice_w)];
  }
}

// A checked gather in chunks (RowFn::kChunks > 1: the gather's rows): each thread moves one word
// of each of kChunks consecutive chunks of 32 words (a warp's step: 32 * kChunks consecutive words
// of the output), as rows_checked_kernel moves one chunk, but the chunks' index loads are issued
// together (RowFn::start), checked after (finish), and their data loads issued together before the
// stores: kChunks times the loads in flight a warp. 4 blocks an SM (64 registers, 32 warps). H200,
// session 21 (bench_stencil_cuda, 1M rows of 64 f32 from a 256 MB table by uniformly random
// indices): 0.1374 ms (3.97 TB/s) against 0.1615 with rows_checked_kernel.
template <int W, typename I, typename RowFn>
__global__ void __launch_bounds__(kThreads, 4)
    rows_chunked_kernel(const word_t<W>* __restrict__ x, word_t<W>* __restrict__ y, I total, I slice_w,
                        RowDiv dw, RowFn fn) {
  constexpr int U = RowFn::kChunks;
  const I step = static_cast<I>(gridDim.x) * blockDim.x * U;
  // Uniform trip count across the warp (the shuffle needs every lane).
  const I base0 = (static_cast<I>(blockIdx.x) * blockDim.x + (threadIdx.x & ~31u)) * U;
  const unsigned lane = threadIdx.x & 31u;
  for (I b = base0; b < total; b += step) {
    I t[U], r[U];
    bool loads[U];  // this lane loads its row's index: it leads the row in the chunk, or rows are long
    typename RowFn::Pending pend[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      t[u] = b + static_cast<I>(u * 32) + lane;
      const bool live = t[u] < total;
      r[u] = live ? div_row<I>(t[u], slice_w, dw) : 0;
      loads[u] = live && (lane == 0 || t[u] - r[u] * slice_w == 0 || slice_w >= 32);
      if (loads[u]) pend[u] = fn.start(static_cast<i64>(r[u]));
    }
    i64 src[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      src[u] = loads[u] ? fn.finish(static_cast<i64>(r[u]), pend[u]) : 0;
      if (slice_w < 32) {
        // The leader of row r in chunk u (first word cb) is lane max(0, r * slice_w - cb).
        const I cb = b + static_cast<I>(u * 32);
        const I lead_t = r[u] * slice_w;
        const int from = lead_t > cb ? static_cast<int>(lead_t - cb) : 0;
        src[u] = __shfl_sync(0xffffffffu, src[u], from);
      }
    }
    word_t<W> v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (t[u] < total) v[u] = x[src[u] * static_cast<i64>(slice_w) + (t[u] - r[u] * slice_w)];
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (t[u] < total) y[t[u]] = v[u];
    }
  }
}

template <int W, typename RowFn>
void launch_rows_checked_w(const void* x, void* y, i64 rows, i64 slice_w, const RowFn& fn,
                           cudaStream_t stream) {
  const i64 total = rows * slice_w;
  const auto* s = static_cast<const word_t<W>*>(x);
  auto* d = static_cast<word_t<W>*>(y);
  if constexpr (RowFn::kChunks > 1) {
    constexpr int U = RowFn::kChunks;
    const i64 steps = (total + U - 1) / U;  // thread steps
    if (total < (i64{1} << 31) - 32 * kThreads * U) {  // t < 2^31 for div_row; b + step < 2^32
      rows_chunked_kernel<W, unsigned><<<blocks_for(steps), kThreads, 0, stream>>>(
          s, d, static_cast<unsigned>(total), static_cast<unsigned>(slice_w), row_div(slice_w), fn);
    } else {
      rows_chunked_kernel<W, u64><<<blocks_for(steps), kThreads, 0, stream>>>(
          s, d, static_cast<u64>(total), static_cast<u64>(slice_w), RowDiv{}, fn);
    }
  } else if (total < (i64{1} << 31)) {
    rows_checked_kernel<W, unsigned><<<blocks_for(total), kThreads, 0, stream>>>(
        s, d, static_cast<unsigned>(total), static_cast<unsigned>(slice_w), row_div(slice_w), fn);
  } else {
    rows_checked_kernel<W, u64><<<blocks_for(total), kThreads, 0, stream>>>(
        s, d, static_cast<u64>(total), static_cast<u64>(slice_w), RowDiv{}, fn);
  }
}

template <typename RowFn>
void launch_rows_checked(const void* x, void* y, int elem_size, i64 rows, i64 slice, const RowFn& fn,
                         cudaStream_t stream) {
  if (rows * slice == 0) return;
  const i64 bytes = slice * elem_size;
  const int w = word_bytes(x, y, elem_size, bytes);
  const i64 slice_w = bytes / w;
  switch (w) {
    case 1:
      return launch_rows_checked_w<1>(x, y, rows, slice_w, fn, stream);
    case 2:
      return launch_rows_checked_w<2>(x, y, rows, slice_w, fn, stream);
    case 4:
      return launch_rows_checked_w<4>(x, y, rows, slice_w, fn, stream);
    case 8:
      return launch_rows_checked_w<8>(x, y, rows, slice_w, fn, stream);
    default:
      return launch_rows_checked_w<16>(x, y, rows, slice_w, fn, stream);
  }
}

__device__ __forceinline__ i64 element_target(const ElementsParams& p, const i64* ind, i64 i) {
  i64 rest = i, off = 0;
  for (int d = p.rank - 1; d >= 0; --d) {
    const i64 dim = p.idx_dims[d], q = rest / dim;
    if (d != p.axis) off += (rest - q * dim) * p.x_strides[d];
    rest = q;
  }
  return off + ind[i] * p.x_strides[p.axis];
}

template <int W>
__global__ void elements_kernel(const word_t<W>* __restrict__ x, word_t<W>* __restrict__ y,
                                const i64* __restrict__ ind, i64 n, ElementsParams p) {
  for (i64 i = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<i64>(gridDim.x) * blockDim.x)
    y[i] = x[element_target(p, ind, i)];
}

// ---- scatter -------------------------------------------------------------------------------


// The CPU's scatter combine (backends/cpu/gather.cpp): R 0 none, 1 add, 2 mul, 3 min, 4 max.
template <int R, typename T>
__device__ __forceinline__ T combine(T old, T upd) {
  if constexpr (R == 0) {
    return upd;
  } else if constexpr (std::is_same_v<T, bool>) {
    return (R == 1 || R == 4) ? (old || upd) : (old && upd);
  } else if constexpr (std::is_integral_v<T>) {
    typedef std::make_unsigned_t<T> U;
    if constexpr (R == 1)
      return static_cast<T>(static_cast<U>(static_cast<U>(old) + static_cast<U>(upd)));
    if constexpr (R == 2)
      return static_cast<T>(static_cast<U>(static_cast<u64>(static_cast<U>(old)) *
                                           static_cast<u64>(static_cast<U>(upd))));
    if constexpr (R == 3) return upd < old ? upd : old;
    return upd > old ? upd : old;
  } else {
    const compute_t<T> a = to_c(old), b = to_c(upd);
    if constexpr (R == 1) return from_c<T>(a + b);
    if constexpr (R == 2) return from_c<T>(a * b);
    if (a != a) return old;
    if (b != b) return upd;
    if constexpr (R == 3) return b < a ? upd : old;
    return b > a ? upd : old;
  }
}

__global__ void scatter_keys_kernel(const i64* __restrict__ ind, ScatterParams p,
                                    u64* __restrict__ keys, u64* __restrict__ vals) {
  for (i64 u = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x; u < p.units;
       u += static_cast<i64>(gridDim.x) * blockDim.x) {
    i64 key = 0;
    if (p.elements) {
      key = element_target(p.ep, ind, u);
    } else {
      for (int j = 0; j < p.k; ++j) key += ind[u * p.k + j] * p.tuple_strides[j];
    }
    keys[u] = static_cast<u64>(key);
    vals[u] = static_cast<u64>(u);
  }
}

template <int R, typename T>
__global__ void scatter_apply_kernel(const T* __restrict__ upd, T* __restrict__ y,
                                     const u64* __restrict__ keys, const u64* __restrict__ vals,
                                     i64 units, i64 slice) {
  const i64 total = units * slice;
  for (i64 t = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += static_cast<i64>(gridDim.x) * blockDim.x) {
    const i64 p = t / slice, s = t - p * slice;
    const u64 key = keys[p];
    if (p > 0 && keys[p - 1] == key) continue;  // not the first update of its target
    T* dst = y + static_cast<i64>(key) * slice + s;
    if constexpr (R == 0) {
      i64 q = p;
      while (q + 1 < units && keys[q + 1] == key) ++q;
      *dst = upd[static_cast<i64>(vals[q]) * slice + s];
    } else {
      T acc = *dst;
      for (i64 q = p; q < units && keys[q] == key; ++q)
        acc = combine<R>(acc, upd[static_cast<i64>(vals[q]) * slice + s]);
      *dst = acc;
    }
  }
}

template <int R, typename T>
void launch_apply(const void* upd, void* y, const u64* keys, const u64* vals, i64 units, i64 slice,
                  cudaStream_t stream) {
  scatter_apply_kernel<R, T><<<blocks_for(units * slice), kThreads, 0, stream>>>(
      static_cast<const T*>(upd), static_cast<T*>(y), keys, vals, units, slice);
}

template <typename T>
void apply_reduction(int r, const void* upd, void* y, const u64* keys, const u64* vals, i64 units,
                     i64 slice, cudaStream_t stream) {
  switch (r) {
    case 1:
      return launch_apply<1, T>(upd, y, keys, vals, units, slice, stream);
    case 2:
      return launch_apply<2, T>(upd, y, keys, vals, units, slice, stream);
    case 3:
      return launch_apply<3, T>(upd, y, keys, vals, units, slice, stream);
    default:
      return launch_apply<4, T>(upd, y, keys, vals, units, slice, stream);
  }
}

}  // namespace

const void* gather_module_anchor() { return reinterpret_cast<const void*>(&init_flag_kernel); }

void normalize_indices(const void* idx, bool is64, int64_t n, const IndexSizes& sizes, int64_t* out,
                       unsigned long long* first_bad, cudaStream_t stream) {
  init_flag_kernel<<<1, 1, 0, stream>>>(first_bad, static_cast<u64>(n));
  if (n == 0) return;
  if (is64) {
    normalize_kernel<i64><<<blocks_for(n), kThreads, 0, stream>>>(
        static_cast<const i64*>(idx), n, sizes, reinterpret_cast<i64*>(out), first_bad);
  } else {
    normalize_kernel<int><<<blocks_for(n), kThreads, 0, stream>>>(
        static_cast<const int*>(idx), n, sizes, reinterpret_cast<i64*>(out), first_bad);
  }
}

void gather(const void* x, void* y, int elem_size, const int64_t* ind, int64_t rows, int64_t slice,
            int64_t per_batch, int64_t pre, int64_t dim, cudaStream_t stream) {
  if (per_batch == 0 || pre == 0) return;
  launch_rows(x, y, elem_size, rows, slice,
              GatherRow{reinterpret_cast<const i64*>(ind), per_batch, pre, dim}, stream);
}

void gather_nd(const void* x, void* y, int elem_size, const int64_t* ind, int64_t rows,
               int64_t tuples, int k, const int64_t* tuple_strides, int64_t slice,
               int64_t batch_stride, cudaStream_t stream) {
  if (tuples == 0 || slice == 0) return;
  GatherNdRow fn{reinterpret_cast<const i64*>(ind), tuples, batch_stride / slice, k, {}};
  for (int j = 0; j < k; ++j) fn.strides[j] = tuple_strides[j];
  launch_rows(x, y, elem_size, rows, slice, fn, stream);
}

void init_index_flag(unsigned long long* first_bad, int64_t n, cudaStream_t stream) {
  init_flag_kernel<<<1, 1, 0, stream>>>(first_bad, static_cast<u64>(n));
}

void gather_checked(const void* x, void* y, int elem_size, const void* idx, bool idx64, int64_t rows,
                    int64_t slice, int64_t per_batch, int64_t pre, int64_t dim,
                    unsigned long long* first_bad, cudaStream_t stream) {
  if (per_batch == 0 || pre == 0) return;
  if (idx64) {
    launch_rows_checked(x, y, elem_size, rows, slice,
                        GatherRowChecked<i64>{static_cast<const i64*>(idx), per_batch, pre, dim, first_bad}, stream);
  } else {
    launch_rows_checked(x, y, elem_size, rows, slice,
                        GatherRowChecked<int>{static_cast<const int*>(idx), per_batch, pre, dim, first_bad}, stream);
  }
}

void gather_nd_checked(const void* x, void* y, int elem_size, const void* idx, bool idx64, int64_t rows,
                       int64_t tuples, int k, const int64_t* tuple_strides, const int64_t* sizes, int64_t slice,
                       int64_t batch_stride, unsigned long long* first_bad, cudaStream_t stream) {
  if (tuples == 0 || slice == 0) return;
  auto run = [&](auto fn) {
    fn.tuples = tuples;
    fn.batch_rows = batch_stride / slice;
    fn.k = k;
    for (int j = 0; j < k; ++j) {
      fn.strides[j] = tuple_strides[j];
      fn.sizes[j] = sizes[j];
    }
    fn.first_bad = first_bad;
    launch_rows_checked(x, y, elem_size, rows, slice, fn, stream);
  };
  if (idx64) {
    GatherNdRowChecked<i64> fn{};
    fn.idx = static_cast<const i64*>(idx);
    run(fn);
  } else {
    GatherNdRowChecked<int> fn{};
    fn.idx = static_cast<const int*>(idx);
    run(fn);
  }
}

void gather_elements(const void* x, void* y, int elem_size, const int64_t* ind, int64_t n,
                     const ElementsParams& p, cudaStream_t stream) {
  if (n == 0) return;
  const i64* in = reinterpret_cast<const i64*>(ind);
  switch (elem_size) {
    case 1:
      elements_kernel<1><<<blocks_for(n), kThreads, 0, stream>>>(
          static_cast<const word_t<1>*>(x), static_cast<word_t<1>*>(y), in, n, p);
      break;
    case 2:
      elements_kernel<2><<<blocks_for(n), kThreads, 0, stream>>>(
          static_cast<const word_t<2>*>(x), static_cast<word_t<2>*>(y), in, n, p);
      break;
    case 4:
      elements_kernel<4><<<blocks_for(n), kThreads, 0, stream>>>(
          static_cast<const word_t<4>*>(x), static_cast<word_t<4>*>(y), in, n, p);
      break;
    default:
      elements_kernel<8><<<blocks_for(n), kThreads, 0, stream>>>(
          static_cast<const word_t<8>*>(x), static_cast<word_t<8>*>(y), in, n, p);
      break;
  }
}

void scatter(ScalarType type, const void* updates, void* y, const int64_t* ind,
             const ScatterParams& p, const ScratchFn& scratch, cudaStream_t stream) {
  const i64 units = p.units;
  if (units == 0 || p.slice == 0) return;
  u64* keys = static_cast<u64*>(scratch(static_cast<size_t>(units) * 4 * sizeof(u64)));
  u64 *vals = keys + units, *keys_sorted = vals + units, *vals_sorted = keys_sorted + units;
  scatter_keys_kernel<<<blocks_for(units), kThreads, 0, stream>>>(reinterpret_cast<const i64*>(ind),
                                                                  p, keys, vals);
  int end_bit = 1;
  while (end_bit < 64 && (u64{1} << end_bit) < static_cast<u64>(p.num_targets)) ++end_bit;
  size_t temp_bytes = 0;
  cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, keys, keys_sorted, vals, vals_sorted, units,
                                  0, end_bit, stream);
  void* temp = scratch(temp_bytes > 0 ? temp_bytes : 1);
  cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys, keys_sorted, vals, vals_sorted, units, 0,
                                  end_bit, stream);
  if (p.reduction == 0) {
    switch (type) {
      case ScalarType::bool_:
      case ScalarType::i8:
      case ScalarType::u8:
        return launch_apply<0, unsigned char>(updates, y, keys_sorted, vals_sorted, units, p.slice,
                                              stream);
      case ScalarType::f16:
      case ScalarType::bf16:
        return launch_apply<0, unsigned short>(updates, y, keys_sorted, vals_sorted, units, p.slice,
                                               stream);
      case ScalarType::i32:
      case ScalarType::f32:
        return launch_apply<0, unsigned int>(updates, y, keys_sorted, vals_sorted, units, p.slice,
                                             stream);
      default:
        return launch_apply<0, u64>(updates, y, keys_sorted, vals_sorted, units, p.slice, stream);
    }
  }
  const int r = p.reduction;
  switch (type) {
    case ScalarType::bool_:
      return apply_reduction<bool>(r, updates, y, keys_sorted, vals_sorted, units, p.slice, stream);
    case ScalarType::i8:
      return apply_reduction<signed char>(r, updates, y, keys_sorted, vals_sorted, units, p.slice,
                                          stream);
    case ScalarType::u8:
      return apply_reduction<unsigned char>(r, updates, y, keys_sorted, vals_sorted, units, p.slice,
                                            stream);
    case ScalarType::i32:
      return apply_reduction<int>(r, updates, y, keys_sorted, vals_sorted, units, p.slice, stream);
    case ScalarType::i64:
      return apply_reduction<i64>(r, updates, y, keys_sorted, vals_sorted, units, p.slice, stream);
    case ScalarType::f16:
      return apply_reduction<__half>(r, updates, y, keys_sorted, vals_sorted, units, p.slice,
                                     stream);
    case ScalarType::bf16:
      return apply_reduction<__nv_bfloat16>(r, updates, y, keys_sorted, vals_sorted, units, p.slice,
                                            stream);
    case ScalarType::f32:
      return apply_reduction<float>(r, updates, y, keys_sorted, vals_sorted, units, p.slice,
                                    stream);
    case ScalarType::f64:
      return apply_reduction<double>(r, updates, y, keys_sorted, vals_sorted, units, p.slice,
                                     stream);
  }
}

}  // namespace tg::cuda::kernels
