// Pooling kernels (see pool.h). Forward ops and the argmax pass of max backward: one thread per
// output, folding its window's taps in row-major order. Backward ops: one thread per input element,
// gathering from the windows that contain it in (oh, ow) order: no atomics, deterministic. Max
// backward: the argmax pass writes each dy element's routed tap (th * kw + tw, or -1) to the int32
// scratch, then each dx element adds the dy of the covering windows that route to it; avg backward
// adds dy / divisor over the covering windows. Speed (these kernels were bound by integer math):
//  - nhwc with C a multiple of a 16-byte pack (4 f32, 8 f16/bf16, 2 f64, 16 i8, ...) and 16-byte
//    aligned pointers: a thread handles V consecutive channels of one pixel, sharing the index
//    math and window bounds, with 16-byte loads and stores; each channel folds as it would alone.
//  - Divisions by sizes fixed at launch are a multiply-high and a shift on 32-bit indices
//    (Divider); pads are >= 0 (ops::pool_geometry), so no floor division of negatives is needed;
//    dilation 1 skips the backward's tap divisibility test (a warp-uniform branch).
//  - Max backward reads the arg and dy packs of every covering window unconditionally (no
//    divergent branch: independent loads in flight) and selects the routed channels' dy.
// Index arithmetic in 32 bits when every size allows it, else 64 bits (plain division, V = 1).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <type_traits>

#include "backends/cuda/kernels/pool.h"

namespace tg::cuda::kernels {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  if (b < 1) b = 1;
  if (b > 65535LL * 32) b = 65535LL * 32;
  return static_cast<unsigned>(b);
}

// n / d for a divisor fixed at launch and 0 <= n. 64-bit: a plain division. 32-bit (n, d < 2^31):
// q = (umulhi(n, m) + n) >> s with s = ceil(log2 d), m = 2^32 (2^s - d) / d + 1 (Granlund and
// Montgomery's round-up method, as PyTorch's IntDivider); exact, and the sum cannot overflow.
template <typename I>
struct Divider {
  I d;
  __device__ __forceinline__ I div(I n) const { return n / d; }
};
template <>
struct Divider<int> {
  unsigned m, s;
  __device__ __forceinline__ int div(int n) const {
    const unsigned u = static_cast<unsigned>(n);
    return static_cast<int>((__umulhi(u, m) + u) >> s);
  }
};

template <typename I>
Divider<I> divider_of(int64_t d) {
  if (d < 1) d = 1;  // a size of 0: nothing is divided by it
  if constexpr (std::is_same_v<I, int>) {
    const uint64_t u = static_cast<uint64_t>(d);
    unsigned s = 0;
    while ((uint64_t{1} << s) < u) ++s;
    const uint64_t m = (uint64_t{1} << 32) * ((uint64_t{1} << s) - u) / u + 1;
    return {static_cast<unsigned>(m), s};
  } else {
    return {static_cast<I>(d)};
  }
}

template <typename I>
struct Win {
  I in, k, stride, dil, pb, pa, out;
  Divider<I> by_in, by_out, by_stride, by_dil;
};

// cv = c / V: the packs of V channels per pixel (V = 1 but in the nhwc pack kernels).
template <typename I>
struct Geo {
  I n, c, cv;
  Divider<I> by_cv;
  Win<I> h, w;
  bool nhwc;
  bool include_pad;
};

template <typename I>
Win<I> win_of(const PoolWindow& w) {
  return {static_cast<I>(w.in),       static_cast<I>(w.k),          static_cast<I>(w.stride),
          static_cast<I>(w.dilation), static_cast<I>(w.pad_before), static_cast<I>(w.pad_after),
          static_cast<I>(w.out),      divider_of<I>(w.in),          divider_of<I>(w.out),
          divider_of<I>(w.stride),    divider_of<I>(w.dilation)};
}

template <typename I>
Geo<I> geo_of(const PoolParams& p, int v) {
  const int64_t cv = p.c / v;
  return {static_cast<I>(p.n), static_cast<I>(p.c), static_cast<I>(cv), divider_of<I>(cv),
          win_of<I>(p.h),      win_of<I>(p.w),      p.nhwc,             p.count_include_pad};
}

template <typename I>
__device__ __forceinline__ I floor_div(I a, I b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

// Taps [first, last) of output o whose input coordinate lies in [lo, hi) (ops::PoolDim).
template <typename I>
__device__ __forceinline__ void taps(const Win<I>& d, I o, I lo, I hi, I& first, I& last) {
  const I base = o * d.stride - d.pb;
  I f, l;
  if (d.dil == 1) {
    f = lo - base;
    l = hi - base;
  } else {
    f = -floor_div<I>(base - lo, d.dil);
    l = floor_div<I>(hi - 1 - base, d.dil) + 1;
  }
  f = f > 0 ? f : I(0);
  l = l < d.k ? l : d.k;
  first = f;
  last = l > f ? l : f;
}

// The avg divisor factor of output o along one dim.
template <typename I>
__device__ __forceinline__ long long divisor_of(const Win<I>& d, I o, bool include_pad) {
  I f, l;
  if (include_pad) {
    taps<I>(d, o, -d.pb, d.in + d.pa, f, l);
  } else {
    taps<I>(d, o, I(0), d.in, f, l);
  }
  return static_cast<long long>(l - f);
}

template <typename T>
struct Compute {  // what values fold in: f32 for f16/bf16
  using type = T;
};
template <>
struct Compute<__half> {
  using type = float;
};
template <>
struct Compute<__nv_bfloat16> {
  using type = float;
};

template <typename C>
__device__ __forceinline__ C lowest() {
  if constexpr (std::numeric_limits<C>::has_infinity) {
    return -std::numeric_limits<C>::infinity();
  } else {
    return std::numeric_limits<C>::lowest();
  }
}

// v replaces best: strictly greater, or a NaN replacing a number (the first NaN wins).
template <typename C>
__device__ __forceinline__ bool better(C v, C best) {
  if constexpr (std::numeric_limits<C>::has_quiet_NaN) {
    return (v > best) || (v != v && best == best);
  } else {
    return v > best;
  }
}

// V consecutive elements, accessed at once (16-byte accesses at most; a 32-byte pack is two).
template <typename T, int V>
struct alignas(sizeof(T) * V < 16 ? sizeof(T) * V : 16) Pack {
  T v[V];
};

template <int V, typename T>
__device__ __forceinline__ Pack<T, V> load_pack(const T* p) {
  return *reinterpret_cast<const Pack<T, V>*>(p);
}

// Element-pack i (V channels; V = 1 but in nhwc) of a tensor whose spatial dims are the windows'
// outputs (kFromOut: forward, argmax) or inputs (backward): its spatial coordinates (a, b) and
// where the same (n, c) lies in the other tensor (index = base + coord_h * row + coord_w * col).
template <bool kFromOut, int V, typename I>
__device__ __forceinline__ void locate(const Geo<I>& g, I i, I& a, I& b, I& base, I& row, I& col) {
  const I hs = kFromOut ? g.h.out : g.h.in, ws = kFromOut ? g.w.out : g.w.in;
  const I ht = kFromOut ? g.h.in : g.h.out, wt = kFromOut ? g.w.in : g.w.out;
  const Divider<I>& by_hs = kFromOut ? g.h.by_out : g.h.by_in;
  const Divider<I>& by_ws = kFromOut ? g.w.by_out : g.w.by_in;
  if (g.nhwc) {
    const I p = g.by_cv.div(i);  // pixel: (n * hs + a) * ws + b
    const I q = by_ws.div(p);    // n * hs + a
    const I n = by_hs.div(q);
    b = p - q * ws;
    a = q - n * hs;
    col = g.c;
    row = wt * g.c;
    base = n * ht * row + (i - p * g.cv) * V;
  } else {
    const I q = by_ws.div(i);  // nc * hs + a
    const I nc = by_hs.div(q);
    b = i - q * ws;
    a = q - nc * hs;
    col = 1;
    row = wt;
    base = nc * ht * wt;
  }
}

enum class Fold { max, avg, argmax };

// Output pack t: max or mean of each channel's window (into y), or for argmax (into arg) the tap
// (th * kw + tw) its gradient goes to, -1 for an empty window: the first maximal element, or the
// first NaN; when nothing beats -inf, the first -inf (the CPU routes to the first element whose
// bits equal the window's maximum).
template <Fold kFold, int V, typename T, typename I>
__global__ void pool_window(const T* __restrict x, T* __restrict y, int32_t* __restrict arg,
                            Geo<I> g, I total) {
  using C = typename Compute<T>::type;
  using U = std::make_unsigned_t<I>;
  const U step = static_cast<U>(gridDim.x) * blockDim.x;
  for (U t = static_cast<U>(blockIdx.x) * blockDim.x + threadIdx.x; t < static_cast<U>(total);
       t += step) {
    I oh, ow, base, row, col;
    locate<true, V, I>(g, static_cast<I>(t), oh, ow, base, row, col);
    I fh, lh, fw, lw;
    taps<I>(g.h, oh, I(0), g.h.in, fh, lh);
    taps<I>(g.w, ow, I(0), g.w.in, fw, lw);
    const C init = kFold == Fold::avg ? C(0) : lowest<C>();
    C acc[V];
    int32_t a[V];
#pragma unroll
    for (int j = 0; j < V; ++j) {
      acc[j] = init;
      a[j] = -1;
    }
    for (I th = fh; th < lh; ++th) {
      const T* xrow = x + (base + (oh * g.h.stride - g.h.pb + th * g.h.dil) * row);
      for (I tw = fw; tw < lw; ++tw) {
        const I iw = ow * g.w.stride - g.w.pb + tw * g.w.dil;
        const Pack<T, V> v = load_pack<V>(xrow + iw * col);
        const int32_t tap = static_cast<int32_t>(th * g.w.k + tw);
#pragma unroll
        for (int j = 0; j < V; ++j) {
          const C e = static_cast<C>(v.v[j]);
          if constexpr (kFold == Fold::avg) {
            acc[j] += e;
          } else if constexpr (kFold == Fold::max) {
            acc[j] = better(e, acc[j]) ? e : acc[j];
          } else if (a[j] < 0 || better(e, acc[j])) {
            // The first tap always takes: while a < 0, acc is -inf, which every number beats,
            // and a -inf is the first element whose bits equal -inf.
            acc[j] = e;
            a[j] = tap;
          }
        }
      }
    }
    if constexpr (kFold == Fold::argmax) {
      Pack<int32_t, V> out;
#pragma unroll
      for (int j = 0; j < V; ++j) out.v[j] = a[j];
      *reinterpret_cast<Pack<int32_t, V>*>(arg + t * V) = out;
    } else {
      long long divisor = 1;
      if constexpr (kFold == Fold::avg) {
        divisor = g.include_pad ? divisor_of<I>(g.h, oh, true) * divisor_of<I>(g.w, ow, true)
                                : static_cast<long long>(lh - fh) * static_cast<long long>(lw - fw);
      }
      Pack<T, V> out;
#pragma unroll
      for (int j = 0; j < V; ++j) {
        if constexpr (kFold == Fold::max) {
          out.v[j] = T(acc[j]);
        } else {
          out.v[j] = divisor > 0 ? T(acc[j] / static_cast<C>(divisor)) : T(C(0));
        }
      }
      *reinterpret_cast<Pack<T, V>*>(y + t * V) = out;
    }
  }
}

// Outputs [lo, hi] (inclusive) whose window has a tap at input coordinate x: tap t of output o
// lies at o * stride - pb + t * dil, so o * stride is in [top - (k-1) dil, top], top = x + pb >= 0.
template <typename I>
__device__ __forceinline__ void covering(const Win<I>& d, I x, I& lo, I& hi) {
  const I top = x + d.pb;
  const I reach = top - (d.k - 1) * d.dil;
  lo = reach > 0 ? d.by_stride.div(reach + d.stride - 1) : I(0);  // ceil(reach / stride)
  hi = d.by_stride.div(top);
  if (hi > d.out - 1) hi = d.out - 1;
}

// The tap of covering output o at input coordinate x, when one lies there (always for dilation 1).
// o is in covering()'s range, so the offset is in [0, (k-1) dil] and the tap in [0, k).
template <typename I>
__device__ __forceinline__ bool tap_at(const Win<I>& d, I x, I o, I& tap) {
  const I off = x + d.pb - o * d.stride;
  if (d.dil == 1) {
    tap = off;
    return true;
  }
  tap = d.by_dil.div(off);
  return tap * d.dil == off;
}

// dx pack t: per channel, the sum over the windows containing it in (oh, ow) order of dy where it
// is the window's routed maximum (kMax) or of dy / divisor (avg). A: f32 (f64 for f64).
template <bool kMax, int V, typename T, typename I>
__global__ void pool_backward(const T* __restrict dy, const int32_t* __restrict arg,
                              T* __restrict dx, Geo<I> g, I total) {
  using A = typename Compute<T>::type;
  using U = std::make_unsigned_t<I>;
  const U step = static_cast<U>(gridDim.x) * blockDim.x;
  for (U t = static_cast<U>(blockIdx.x) * blockDim.x + threadIdx.x; t < static_cast<U>(total);
       t += step) {
    I ih, iw, base, row, col;
    locate<false, V, I>(g, static_cast<I>(t), ih, iw, base, row, col);
    I oh0, oh1, ow0, ow1;
    covering<I>(g.h, ih, oh0, oh1);
    covering<I>(g.w, iw, ow0, ow1);
    A acc[V];
#pragma unroll
    for (int j = 0; j < V; ++j) acc[j] = A(0);
    for (I oh = oh0; oh <= oh1; ++oh) {
      I th;
      if (!tap_at<I>(g.h, ih, oh, th)) continue;
      long long div_h = 0;
      if constexpr (!kMax) div_h = divisor_of<I>(g.h, oh, g.include_pad);
      for (I ow = ow0; ow <= ow1; ++ow) {
        I tw;
        if (!tap_at<I>(g.w, iw, ow, tw)) continue;
        const I o = base + oh * row + ow * col;
        if constexpr (kMax) {
          const int32_t tap = static_cast<int32_t>(th * g.w.k + tw);
          const Pack<int32_t, V> r = load_pack<V>(arg + o);
          const Pack<T, V> d = load_pack<V>(dy + o);
#pragma unroll
          for (int j = 0; j < V; ++j) {
            acc[j] = r.v[j] == tap ? acc[j] + static_cast<A>(d.v[j]) : acc[j];
          }
        } else {
          const long long divisor = div_h * divisor_of<I>(g.w, ow, g.include_pad);
          if (divisor <= 0) continue;
          const Pack<T, V> d = load_pack<V>(dy + o);
#pragma unroll
          for (int j = 0; j < V; ++j) acc[j] += static_cast<A>(d.v[j]) / static_cast<A>(divisor);
        }
      }
    }
    Pack<T, V> out;
#pragma unroll
    for (int j = 0; j < V; ++j) out.v[j] = T(acc[j]);
    *reinterpret_cast<Pack<T, V>*>(dx + t * V) = out;
  }
}

// 32-bit index arithmetic when every coordinate and index fits comfortably (Divider needs
// dividends below 2^31: indices, and coordinates plus a stride).
bool small(const PoolParams& p) {
  constexpr int64_t kLimit = int64_t{1} << 29;
  const int64_t x = p.n * p.c * p.h.in * p.w.in, y = p.n * p.c * p.h.out * p.w.out;
  if (x >= (int64_t{1} << 31) - 1 || y >= (int64_t{1} << 31) - 1) return false;
  for (const PoolWindow* d : {&p.h, &p.w}) {
    const int64_t extent = d->dilation * (d->k - 1) + 1;
    if (d->in >= kLimit || d->pad_before >= kLimit || d->pad_after >= kLimit || extent >= kLimit ||
        d->stride >= kLimit || d->out * d->stride >= kLimit || d->k * d->k >= kLimit)
      return false;
  }
  return true;
}

template <typename F>
void with_type(PoolType t, F&& f) {
  switch (t) {
    case PoolType::i8: f(int8_t{}); break;
    case PoolType::u8: f(uint8_t{}); break;
    case PoolType::i32: f(int32_t{}); break;
    case PoolType::i64: f(int64_t{}); break;
    case PoolType::f16: f(__half{}); break;
    case PoolType::bf16: f(__nv_bfloat16{}); break;
    case PoolType::f32: f(float{}); break;
    case PoolType::f64: f(double{}); break;
  }
}

template <typename T>
constexpr bool is_float_v = std::is_floating_point_v<typename Compute<T>::type>;

// Calls f(V, Geo<I>) for the kernels to run: packs of V = 16 / sizeof(T) channels with 32-bit
// indices when the layout is nhwc, C % V == 0 and every pointer is 16-byte aligned; else one
// element per thread, 32-bit indices when they fit.
template <typename T, typename F>
void with_variant(const PoolParams& p, std::initializer_list<const void*> ptrs, F&& f) {
  constexpr int kV = 16 / sizeof(T);
  bool pack = p.nhwc && p.c % kV == 0;
  for (const void* q : ptrs) pack = pack && reinterpret_cast<uintptr_t>(q) % 16 == 0;
  if (!small(p)) {
    f(std::integral_constant<int, 1>{}, geo_of<long long>(p, 1));
  } else if (pack) {
    f(std::integral_constant<int, kV>{}, geo_of<int>(p, kV));
  } else {
    f(std::integral_constant<int, 1>{}, geo_of<int>(p, 1));
  }
}

template <Fold kFold>
void forward(PoolType t, const void* x, void* y, const PoolParams& p, cudaStream_t stream) {
  const long long total = p.n * p.c * p.h.out * p.w.out;
  if (total <= 0) return;
  with_type(t, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (kFold == Fold::max || is_float_v<T>) {
      with_variant<T>(p, {x, y}, [&](auto v, auto g) {
        constexpr int V = decltype(v)::value;
        using I = decltype(g.n);
        pool_window<kFold, V, T, I><<<blocks_for(total / V), kThreads, 0, stream>>>(
            static_cast<const T*>(x), static_cast<T*>(y), nullptr, g, static_cast<I>(total / V));
      });
    }
  });
}

}  // namespace

void launch_max_pool2d(PoolType t, const void* x, void* y, const PoolParams& p, cudaStream_t stream) {
  forward<Fold::max>(t, x, y, p, stream);
}

void launch_avg_pool2d(PoolType t, const void* x, void* y, const PoolParams& p, cudaStream_t stream) {
  forward<Fold::avg>(t, x, y, p, stream);
}

void launch_max_pool2d_backward(PoolType t, const void* dy, const void* x, void* dx, int32_t* argmax,
                                const PoolParams& p, cudaStream_t stream) {
  const long long ny = p.n * p.c * p.h.out * p.w.out, nx = p.n * p.c * p.h.in * p.w.in;
  if (nx <= 0) return;
  with_type(t, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_float_v<T>) {
      with_variant<T>(p, {dy, x, dx, argmax}, [&](auto v, auto g) {
        constexpr int V = decltype(v)::value;
        using I = decltype(g.n);
        if (ny > 0) {
          pool_window<Fold::argmax, V, T, I><<<blocks_for(ny / V), kThreads, 0, stream>>>(
              static_cast<const T*>(x), nullptr, argmax, g, static_cast<I>(ny / V));
        }
        pool_backward<true, V, T, I><<<blocks_for(nx / V), kThreads, 0, stream>>>(
            static_cast<const T*>(dy), argmax, static_cast<T*>(dx), g, static_cast<I>(nx / V));
      });
    }
  });
}

void launch_avg_pool2d_backward(PoolType t, const void* dy, void* dx, const PoolParams& p,
                                cudaStream_t stream) {
  const long long nx = p.n * p.c * p.h.in * p.w.in;
  if (nx <= 0) return;
  with_type(t, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_float_v<T>) {
      with_variant<T>(p, {dy, dx}, [&](auto v, auto g) {
        constexpr int V = decltype(v)::value;
        using I = decltype(g.n);
        pool_backward<false, V, T, I><<<blocks_for(nx / V), kThreads, 0, stream>>>(
            static_cast<const T*>(dy), nullptr, static_cast<T*>(dx), g, static_cast<I>(nx / V));
      });
    }
  });
}

}  // namespace tg::cuda::kernels
