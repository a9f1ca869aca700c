// Pooling kernels (see pool.h). One thread per output element for the forward ops and for the
// argmax pass of max backward; one thread per input element for the backward gathers, which visit
// the windows containing that element in (oh, ow) order and sum their contributions: no atomics,
// deterministic. Index arithmetic in 32 bits when every size allows it, else 64 bits.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

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

template <typename I>
struct Win {
  I in, k, stride, dil, pb, pa, out;
};

template <typename I>
struct Geo {
  I n, c;
  Win<I> h, w;
  bool nhwc;
  bool include_pad;
};

template <typename I>
Win<I> win_of(const PoolWindow& w) {
  return {static_cast<I>(w.in),       static_cast<I>(w.k),          static_cast<I>(w.stride),
          static_cast<I>(w.dilation), static_cast<I>(w.pad_before), static_cast<I>(w.pad_after),
          static_cast<I>(w.out)};
}

template <typename I>
Geo<I> geo_of(const PoolParams& p) {
  return {static_cast<I>(p.n), static_cast<I>(p.c), win_of<I>(p.h), win_of<I>(p.w), p.nhwc,
          p.count_include_pad};
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
struct Compute {
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

__device__ __forceinline__ bool same_bits(float a, float b) {
  return __float_as_uint(a) == __float_as_uint(b);
}
__device__ __forceinline__ bool same_bits(double a, double b) {
  return __double_as_longlong(a) == __double_as_longlong(b);
}

template <typename T, typename C>
__device__ __forceinline__ C load(const T* p, long long i) {
  return static_cast<C>(p[i]);
}

// Output element i: its window position and where its window's elements lie in x
// (x index = base + ih * row + iw * col).
template <typename I>
__device__ __forceinline__ void locate_out(const Geo<I>& g, I i, I& oh, I& ow, I& base, I& row,
                                           I& col) {
  if (g.nhwc) {
    const I c = i % g.c;
    I r = i / g.c;
    ow = r % g.w.out;
    r /= g.w.out;
    oh = r % g.h.out;
    const I n = r / g.h.out;
    base = n * g.h.in * g.w.in * g.c + c;
    row = g.w.in * g.c;
    col = g.c;
  } else {
    ow = i % g.w.out;
    const I r = i / g.w.out;
    oh = r % g.h.out;
    const I nc = r / g.h.out;
    base = nc * g.h.in * g.w.in;
    row = g.w.in;
    col = 1;
  }
}

template <bool kMax, typename T, typename I>
__global__ void pool_forward(const T* __restrict x, T* __restrict y, Geo<I> g, long long total) {
  using C = typename Compute<T>::type;
  const long long step = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += step) {
    const I i = static_cast<I>(t);
    I oh, ow, base, row, col;
    locate_out<I>(g, i, oh, ow, base, row, col);
    I fh, lh, fw, lw;
    taps<I>(g.h, oh, I(0), g.h.in, fh, lh);
    taps<I>(g.w, ow, I(0), g.w.in, fw, lw);
    C acc = kMax ? lowest<C>() : C(0);
    for (I th = fh; th < lh; ++th) {
      const I ih = oh * g.h.stride - g.h.pb + th * g.h.dil;
      for (I tw = fw; tw < lw; ++tw) {
        const I iw = ow * g.w.stride - g.w.pb + tw * g.w.dil;
        const C v = load<T, C>(x, static_cast<long long>(base + ih * row + iw * col));
        if constexpr (kMax) {
          acc = better(v, acc) ? v : acc;
        } else {
          acc += v;
        }
      }
    }
    if constexpr (kMax) {
      y[t] = T(acc);
    } else {
      const long long divisor = g.include_pad
                                    ? divisor_of<I>(g.h, oh, true) * divisor_of<I>(g.w, ow, true)
                                    : static_cast<long long>(lh - fh) * static_cast<long long>(lw - fw);
      y[t] = divisor > 0 ? T(acc / static_cast<C>(divisor)) : T(C(0));
    }
  }
}

// Per dy element: the tap (th * kw + tw) its gradient goes to, or -1 for an empty window. The
// first maximal element, or the first NaN; when nothing beats -inf, the first -inf (the CPU
// routes to the first element whose bits equal the window's maximum).
template <typename T, typename I>
__global__ void max_argmax(const T* __restrict x, int32_t* __restrict arg, Geo<I> g, long long total) {
  using C = typename Compute<T>::type;
  const long long step = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += step) {
    const I i = static_cast<I>(t);
    I oh, ow, base, row, col;
    locate_out<I>(g, i, oh, ow, base, row, col);
    I fh, lh, fw, lw;
    taps<I>(g.h, oh, I(0), g.h.in, fh, lh);
    taps<I>(g.w, ow, I(0), g.w.in, fw, lw);
    C best = lowest<C>();
    int32_t a = -1;
    for (I th = fh; th < lh; ++th) {
      const I ih = oh * g.h.stride - g.h.pb + th * g.h.dil;
      for (I tw = fw; tw < lw; ++tw) {
        const I iw = ow * g.w.stride - g.w.pb + tw * g.w.dil;
        const C v = load<T, C>(x, static_cast<long long>(base + ih * row + iw * col));
        const int32_t tap = static_cast<int32_t>(th * g.w.k + tw);
        if (better(v, best)) {
          best = v;
          a = tap;
        } else if (a < 0 && same_bits(v, best)) {
          a = tap;
        }
      }
    }
    arg[t] = a;
  }
}

// Outputs [lo, hi] (inclusive) whose window has a tap at input coordinate `in_coord`.
template <typename I>
__device__ __forceinline__ void covering(const Win<I>& d, I in_coord, I& lo, I& hi) {
  const I top = in_coord + d.pb;                    // = o * stride + tap * dil
  lo = -floor_div<I>((d.k - 1) * d.dil - top, d.stride);  // ceil((top - (k-1) dil) / stride)
  if (lo < 0) lo = 0;
  hi = floor_div<I>(top, d.stride);
  if (hi > d.out - 1) hi = d.out - 1;
}

// dx element i: the sum, over the windows containing it in (oh, ow) order, of dy where it is the
// window's routed maximum (kMax) or of dy / divisor (avg). A: f32 (f64 for f64).
template <bool kMax, typename T, typename I>
__global__ void pool_backward(const T* __restrict dy, const int32_t* __restrict arg,
                              T* __restrict dx, Geo<I> g, long long total) {
  using A = typename Compute<T>::type;
  const long long step = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += step) {
    const I i = static_cast<I>(t);
    I ih, iw, base, row, col;
    if (g.nhwc) {
      const I c = i % g.c;
      I r = i / g.c;
      iw = r % g.w.in;
      r /= g.w.in;
      ih = r % g.h.in;
      const I n = r / g.h.in;
      base = n * g.h.out * g.w.out * g.c + c;
      row = g.w.out * g.c;
      col = g.c;
    } else {
      iw = i % g.w.in;
      const I r = i / g.w.in;
      ih = r % g.h.in;
      const I nc = r / g.h.in;
      base = nc * g.h.out * g.w.out;
      row = g.w.out;
      col = 1;
    }
    I oh0, oh1, ow0, ow1;
    covering<I>(g.h, ih, oh0, oh1);
    covering<I>(g.w, iw, ow0, ow1);
    A acc = A(0);
    for (I oh = oh0; oh <= oh1; ++oh) {
      const I dh = ih + g.h.pb - oh * g.h.stride;
      if (dh % g.h.dil != 0) continue;
      const I th = dh / g.h.dil;
      if (th >= g.h.k) continue;
      long long div_h = 0;
      if constexpr (!kMax) div_h = divisor_of<I>(g.h, oh, g.include_pad);
      for (I ow = ow0; ow <= ow1; ++ow) {
        const I dw = iw + g.w.pb - ow * g.w.stride;
        if (dw % g.w.dil != 0) continue;
        const I tw = dw / g.w.dil;
        if (tw >= g.w.k) continue;
        const long long o = static_cast<long long>(base + oh * row + ow * col);
        if constexpr (kMax) {
          if (arg[o] == static_cast<int32_t>(th * g.w.k + tw)) acc += static_cast<A>(dy[o]);
        } else {
          const long long divisor = div_h * divisor_of<I>(g.w, ow, g.include_pad);
          if (divisor > 0) acc += static_cast<A>(dy[o]) / static_cast<A>(divisor);
        }
      }
    }
    dx[t] = T(acc);
  }
}

// 32-bit index arithmetic when every coordinate and index fits comfortably.
bool small(const PoolParams& p) {
  constexpr int64_t kLimit = int64_t{1} << 29;
  const int64_t x = p.n * p.c * p.h.in * p.w.in, y = p.n * p.c * p.h.out * p.w.out;
  if (x >= (int64_t{1} << 31) - 1 || y >= (int64_t{1} << 31) - 1) return false;
  for (const PoolWindow* d : {&p.h, &p.w}) {
    const int64_t extent = d->dilation * (d->k - 1) + 1;
    if (d->in >= kLimit || d->pad_before >= kLimit || d->pad_after >= kLimit || extent >= kLimit ||
        d->out * d->stride >= kLimit || d->k * d->k >= kLimit)
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

template <bool kMax>
void forward(PoolType t, const void* x, void* y, const PoolParams& p, cudaStream_t stream) {
  const long long total = p.n * p.c * p.h.out * p.w.out;
  if (total <= 0) return;
  with_type(t, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (kMax || is_float_v<T>) {
      if (small(p)) {
        pool_forward<kMax, T, int><<<blocks_for(total), kThreads, 0, stream>>>(
            static_cast<const T*>(x), static_cast<T*>(y), geo_of<int>(p), total);
      } else {
        pool_forward<kMax, T, long long><<<blocks_for(total), kThreads, 0, stream>>>(
            static_cast<const T*>(x), static_cast<T*>(y), geo_of<long long>(p), total);
      }
    }
  });
}

}  // namespace

void launch_max_pool2d(PoolType t, const void* x, void* y, const PoolParams& p, cudaStream_t stream) {
  forward<true>(t, x, y, p, stream);
}

void launch_avg_pool2d(PoolType t, const void* x, void* y, const PoolParams& p, cudaStream_t stream) {
  forward<false>(t, x, y, p, stream);
}

void launch_max_pool2d_backward(PoolType t, const void* dy, const void* x, void* dx, int32_t* argmax,
                                const PoolParams& p, cudaStream_t stream) {
  const long long ny = p.n * p.c * p.h.out * p.w.out, nx = p.n * p.c * p.h.in * p.w.in;
  if (nx <= 0) return;
  with_type(t, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_float_v<T>) {
      if (small(p)) {
        const Geo<int> g = geo_of<int>(p);
        if (ny > 0) {
          max_argmax<T, int><<<blocks_for(ny), kThreads, 0, stream>>>(static_cast<const T*>(x),
                                                                      argmax, g, ny);
        }
        pool_backward<true, T, int><<<blocks_for(nx), kThreads, 0, stream>>>(
            static_cast<const T*>(dy), argmax, static_cast<T*>(dx), g, nx);
      } else {
        const Geo<long long> g = geo_of<long long>(p);
        if (ny > 0) {
          max_argmax<T, long long><<<blocks_for(ny), kThreads, 0, stream>>>(
              static_cast<const T*>(x), argmax, g, ny);
        }
        pool_backward<true, T, long long><<<blocks_for(nx), kThreads, 0, stream>>>(
            static_cast<const T*>(dy), argmax, static_cast<T*>(dx), g, nx);
      }
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
      if (small(p)) {
        pool_backward<false, T, int><<<blocks_for(nx), kThreads, 0, stream>>>(
            static_cast<const T*>(dy), nullptr, static_cast<T*>(dx), geo_of<int>(p), nx);
      } else {
        pool_backward<false, T, long long><<<blocks_for(nx), kThreads, 0, stream>>>(
            static_cast<const T*>(dy), nullptr, static_cast<T*>(dx), geo_of<long long>(p), nx);
      }
    }
  });
}

}  // namespace tg::cuda::kernels
