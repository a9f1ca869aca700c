// Reduction kernels of the CUDA reduce family (sum, prod, max, min, and, or, argmax, argmin).
//
// Semantics follow backends/cpu/reduce.cpp: f32 sums/products accumulate in f64, f16/bf16 in
// f32, f64 in f64, integers in their own type with two's-complement wrap-around; max/min are
// exact in the compute type and a NaN wins; argmax/argmin give the first index of the extreme
// (a NaN beats every number; ties keep the smaller index).
//
// A reduction over several non-adjacent reduced groups runs as several logical passes (the last
// reduced group first, intermediates in the accumulator type), each of the canonical form
// x[outer, R, inner] -> y[outer, inner]. A logical pass runs one of two mappings:
// - inner == 1 (reduced axis innermost, rows longer than 16): a warp per output, lanes striding
//   the row (coalesced), then a shuffle tree;
// - otherwise (kept axis innermost, or short rows): a thread per output column, looping over R
// (consecutive
//   threads read consecutive columns: coalesced).
// When the outputs are too few to fill the GPU, R is split into chunks: the first kernel writes
// partial results [outer, chunks, inner] in the accumulator type and the pass recurses over them
// (e.g. NHWC batch-norm statistics [128*56*56, 256] -> [~1000, 256] -> [~33, 256] -> [256]).
// Every partial is combined in a fixed order: results are deterministic (no atomics).
#include "backends/cuda/kernels/compute.cuh"
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "backends/cuda/kernels/reduce.h"

namespace tg::cuda::kernels {
namespace {

typedef long long i64;
constexpr int kThreads = 256;
constexpr unsigned kFull = 0xffffffffu;


template <ReduceKind K, typename T>
struct ValueOp {
  typedef compute_t<T> C;
  typedef std::conditional_t<
      (K == ReduceKind::sum || K == ReduceKind::prod) && std::is_same_v<T, float>, double, C>
      Acc;
  __device__ static Acc identity() {
    if constexpr (K == ReduceKind::sum)
      return Acc(0);
    else if constexpr (K == ReduceKind::prod)
      return Acc(1);
    else if constexpr (K == ReduceKind::all)
      return true;
    else if constexpr (K == ReduceKind::any)
      return false;
    else if constexpr (K == ReduceKind::max) {
      if constexpr (std::is_floating_point_v<Acc>)
        return -std::numeric_limits<Acc>::infinity();
      else
        return std::numeric_limits<Acc>::lowest();
    } else {
      if constexpr (std::is_floating_point_v<Acc>)
        return std::numeric_limits<Acc>::infinity();
      else
        return std::numeric_limits<Acc>::max();
    }
  }
  __device__ static Acc load(T x, i64) { return static_cast<Acc>(to_c(x)); }
  __device__ static Acc combine(Acc a, Acc b) {
    if constexpr (K == ReduceKind::all)
      return a && b;
    else if constexpr (K == ReduceKind::any)
      return a || b;
    else if constexpr (K == ReduceKind::sum) {
      if constexpr (std::is_integral_v<Acc>) {
        typedef std::make_unsigned_t<Acc> U;
        return static_cast<Acc>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
      } else {
        return a + b;
      }
    } else if constexpr (K == ReduceKind::prod) {
      if constexpr (std::is_integral_v<Acc>) {
        typedef std::make_unsigned_t<Acc> U;
        // Promote to 64 bits: the product of two promoted unsigned 8/16-bit values could
        // overflow int (UB); the truncation keeps the wrapped result.
        return static_cast<Acc>(static_cast<U>(static_cast<unsigned long long>(static_cast<U>(a)) *
                                               static_cast<unsigned long long>(static_cast<U>(b))));
      } else {
        return a * b;
      }
    } else if constexpr (K == ReduceKind::max) {
      if constexpr (std::is_floating_point_v<Acc>)
        return (b > a || b != b) ? b : a;
      else
        return b > a ? b : a;
    } else {
      if constexpr (std::is_floating_point_v<Acc>)
        return (b < a || b != b) ? b : a;
      else
        return b < a ? b : a;
    }
  }
  __device__ static T store(Acc a) { return from_c<T>(static_cast<C>(a)); }
};

template <typename C>
struct ArgAcc {
  C value;
  i64 index;  ///< -1: empty (the identity)
};

template <ReduceKind K, typename T>
struct ArgOp {
  typedef compute_t<T> C;
  typedef ArgAcc<C> Acc;
  static constexpr bool kMax = K == ReduceKind::argmax;
  __device__ static bool better(C v, C best) {
    if constexpr (std::is_floating_point_v<C>) {
      if (best != best) return false;
      if (v != v) return true;
    }
    return kMax ? v > best : v < best;
  }
  __device__ static Acc identity() { return {C(), -1}; }
  __device__ static Acc load(T x, i64 r) { return {to_c(x), r}; }
  __device__ static Acc combine(Acc a, Acc b) {
    if (a.index < 0) return b;
    if (b.index < 0) return a;
    if (better(b.value, a.value)) return b;
    if (better(a.value, b.value)) return a;
    return b.index < a.index ? b : a;  // equal (or both NaN): the first index
  }
  __device__ static i64 store(Acc a) { return a.index < 0 ? 0 : a.index; }
};

template <typename Op, typename In>
__device__ __forceinline__ typename Op::Acc load_any(const In& v, i64 r) {
  if constexpr (std::is_same_v<In, typename Op::Acc>)
    return v;
  else
    return Op::load(v, r);
}
template <typename Op, typename Out>
__device__ __forceinline__ Out store_any(const typename Op::Acc& a) {
  if constexpr (std::is_same_v<Out, typename Op::Acc>)
    return a;
  else
    return Op::store(a);
}

// Shuffles any trivially copyable value, 32 bits at a time.
template <typename V>
__device__ __forceinline__ V shfl_down(V v, int off) {
  constexpr int kWords = (sizeof(V) + 3) / 4;
  int w[kWords] = {};
  memcpy(w, &v, sizeof(V));
#pragma unroll
  for (int i = 0; i < kWords; ++i) w[i] = __shfl_down_sync(kFull, w[i], off);
  V r;
  memcpy(&r, w, sizeof(V));
  return r;
}

// inner == 1: warp w (of outer * chunks) reduces chunk w % chunks of row w / chunks.
template <typename Op, typename In, typename Out>
__global__ void row_kernel(const In* __restrict__ x, Out* __restrict__ y, i64 outer, i64 R,
                           i64 chunks) {
  typedef typename Op::Acc Acc;
  const int lane = threadIdx.x & 31;
  const i64 warps = static_cast<i64>(gridDim.x) * (blockDim.x / 32);
  for (i64 w = (static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x) / 32; w < outer * chunks;
       w += warps) {
    const i64 o = w / chunks, c = w - o * chunks;
    const i64 r0 = R / chunks * c + min(c, R % chunks),
              r1 = r0 + R / chunks + (c < R % chunks ? 1 : 0);
    const In* row = x + o * R;
    Acc a = Op::identity();
#pragma unroll 4
    for (i64 r = r0 + lane; r < r1; r += 32) a = Op::combine(a, load_any<Op>(row[r], r));
#pragma unroll
    for (int off = 16; off > 0; off /= 2) a = Op::combine(a, shfl_down(a, off));
    if (lane == 0) y[w] = store_any<Op, Out>(a);
  }
}

// inner > 1: thread t (of outer * chunks * inner) reduces column t % inner over its chunk of R.
template <typename Op, typename In, typename Out>
__global__ void col_kernel(const In* __restrict__ x, Out* __restrict__ y, i64 outer, i64 R,
                           i64 inner, i64 chunks) {
  typedef typename Op::Acc Acc;
  const i64 total = outer * chunks * inner, step = static_cast<i64>(gridDim.x) * blockDim.x;
  for (i64 t = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x; t < total; t += step) {
    const i64 oc = t / inner, j = t - oc * inner;
    const i64 o = oc / chunks, c = oc - o * chunks;
    const i64 r0 = R / chunks * c + min(c, R % chunks),
              r1 = r0 + R / chunks + (c < R % chunks ? 1 : 0);
    const In* p = x + (o * R + r0) * inner + j;
    Acc a = Op::identity();
#pragma unroll 4
    for (i64 r = r0; r < r1; ++r, p += inner) a = Op::combine(a, load_any<Op>(*p, r));
    y[t] = store_any<Op, Out>(a);
  }
}

unsigned blocks_for(i64 n, int threads = kThreads) {
  i64 b = (n + threads - 1) / threads;
  if (b < 1) b = 1;
  if (b > 65535LL * 32) b = 65535LL * 32;
  return static_cast<unsigned>(b);
}

// One logical pass x[outer, R, inner] -> y[outer, inner], split over R when the outputs are too
// few for the GPU (partials in the accumulator type, reduced by a recursive pass).
template <typename Op, typename In, typename Out>
void run_pass(const In* x, Out* y, i64 outer, i64 R, i64 inner, int sm_count,
              const ScratchFn& scratch, cudaStream_t stream) {
  typedef typename Op::Acc Acc;
  const i64 sms = sm_count > 0 ? sm_count : 132;
  // Rows of at most 16 elements: a thread per output (a warp per output would idle most lanes).
  const bool rows = inner == 1 && R > 16;
  i64 chunks = 1;
  if (rows) {
    const i64 target_warps = sms * 64;  // 2048 threads an SM
    if (outer < target_warps && R >= 2048)
      chunks = std::min((target_warps + outer - 1) / outer, R / 1024);
  } else {
    const i64 target_threads = sms * 2048;
    const i64 outputs = outer * inner;
    if (outputs < target_threads && R >= 64)
      chunks = std::min((target_threads + outputs - 1) / outputs, R / 32);
  }
  if (chunks < 1) chunks = 1;
  auto launch = [&](auto* dst, i64 ch) {
    typedef std::remove_pointer_t<decltype(dst)> D;
    if (rows) {
      const i64 threads = outer * ch * 32;
      row_kernel<Op, In, D><<<blocks_for(threads), kThreads, 0, stream>>>(x, dst, outer, R, ch);
    } else {
      col_kernel<Op, In, D>
          <<<blocks_for(outer * ch * inner), kThreads, 0, stream>>>(x, dst, outer, R, inner, ch);
    }
  };
  if (chunks == 1) {
    launch(y, 1);
    return;
  }
  Acc* part = static_cast<Acc*>(scratch(static_cast<size_t>(outer * chunks * inner) * sizeof(Acc)));
  launch(part, chunks);
  run_pass<Op, Acc, Out>(part, y, outer, chunks, inner, sm_count, scratch, stream);
}

int last_reduced(const std::vector<ReduceGroup>& g) {
  for (int i = static_cast<int>(g.size()) - 1; i >= 0; --i)
    if (g[i].reduced) return i;
  return -1;
}

template <typename Op, typename T, typename Out>
void reduce_typed(const T* x, Out* y, std::vector<ReduceGroup> groups, int sm_count,
                  const ScratchFn& scratch, cudaStream_t stream) {
  typedef typename Op::Acc Acc;
  int k = last_reduced(groups);
  const Acc* cur = nullptr;
  bool first = true;
  while (k >= 0) {
    i64 outer = 1, inner = 1;
    for (int i = 0; i < k; ++i) outer *= groups[i].size;
    for (size_t i = k + 1; i < groups.size(); ++i) inner *= groups[i].size;
    const i64 r = groups[k].size;
    groups.erase(groups.begin() + k);
    k = last_reduced(groups);
    const bool last = k < 0;
    if (last) {
      if (first)
        run_pass<Op, T, Out>(x, y, outer, r, inner, sm_count, scratch, stream);
      else
        run_pass<Op, Acc, Out>(cur, y, outer, r, inner, sm_count, scratch, stream);
    } else {
      Acc* next = static_cast<Acc*>(scratch(static_cast<size_t>(outer * inner) * sizeof(Acc)));
      if (first)
        run_pass<Op, T, Acc>(x, next, outer, r, inner, sm_count, scratch, stream);
      else
        run_pass<Op, Acc, Acc>(cur, next, outer, r, inner, sm_count, scratch, stream);
      cur = next;
    }
    first = false;
  }
}

template <typename Op, typename T>
__global__ void fill_kernel(T* y, i64 n) {
  const T v = Op::store(Op::identity());
  for (i64 i = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<i64>(gridDim.x) * blockDim.x)
    y[i] = v;
}

// Calls f(T{}) with T the device storage type of `type`.
template <typename F>
void by_type(ScalarType type, F&& f) {
  switch (type) {
    case ScalarType::bool_:
      return f(bool{});
    case ScalarType::i8:
      return f(static_cast<signed char>(0));
    case ScalarType::u8:
      return f(static_cast<unsigned char>(0));
    case ScalarType::i32:
      return f(int{});
    case ScalarType::i64:
      return f(i64{});
    case ScalarType::f16:
      return f(__half{});
    case ScalarType::bf16:
      return f(__nv_bfloat16{});
    case ScalarType::f32:
      return f(float{});
    case ScalarType::f64:
      return f(double{});
  }
}

// Calls f(Op{}) for the op of `kind` on T, when that combination exists (numeric dtypes for
// sum/prod/max/min, bool for all/any, every dtype for argmax/argmin).
template <typename T, typename F>
void by_kind(ReduceKind kind, F&& f) {
  constexpr bool kBool = std::is_same_v<T, bool>;
  switch (kind) {
    case ReduceKind::sum:
      if constexpr (!kBool) f(ValueOp<ReduceKind::sum, T>{});
      break;
    case ReduceKind::prod:
      if constexpr (!kBool) f(ValueOp<ReduceKind::prod, T>{});
      break;
    case ReduceKind::max:
      if constexpr (!kBool) f(ValueOp<ReduceKind::max, T>{});
      break;
    case ReduceKind::min:
      if constexpr (!kBool) f(ValueOp<ReduceKind::min, T>{});
      break;
    case ReduceKind::all:
      if constexpr (kBool) f(ValueOp<ReduceKind::all, T>{});
      break;
    case ReduceKind::any:
      if constexpr (kBool) f(ValueOp<ReduceKind::any, T>{});
      break;
    case ReduceKind::argmax:
      f(ArgOp<ReduceKind::argmax, T>{});
      break;
    case ReduceKind::argmin:
      f(ArgOp<ReduceKind::argmin, T>{});
      break;
  }
}

}  // namespace

void reduce(ReduceKind kind, ScalarType type, const void* x, void* y,
            std::vector<ReduceGroup> groups, int sm_count, const ScratchFn& scratch,
            cudaStream_t stream) {
  by_type(type, [&](auto tag) {
    typedef decltype(tag) T;
    by_kind<T>(kind, [&](auto op) {
      typedef decltype(op) Op;
      typedef std::conditional_t<std::is_same_v<typename Op::Acc, ArgAcc<typename Op::C>>, i64, T>
          Out;
      reduce_typed<Op, T, Out>(static_cast<const T*>(x), static_cast<Out*>(y), groups, sm_count,
                               scratch, stream);
    });
  });
}

void reduce_fill_identity(ReduceKind kind, ScalarType type, void* y, int64_t n,
                          cudaStream_t stream) {
  if (n == 0) return;
  by_type(type, [&](auto tag) {
    typedef decltype(tag) T;
    by_kind<T>(kind, [&](auto op) {
      typedef decltype(op) Op;
      if constexpr (!std::is_class_v<typename Op::Acc>) {  // value ops only
        fill_kernel<Op, T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<T*>(y), n);
      }
    });
  });
}

}  // namespace tg::cuda::kernels
