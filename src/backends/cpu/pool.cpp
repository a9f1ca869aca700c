// CPU kernels of the pool op family. float32 runs on oneDNN (backends/cpu/pool_onednn.cpp)
// wherever oneDNN computes exactly what the ops specify; the multi-threaded loops here handle the
// rest: other dtypes (f16/bf16 computed in float, f64, integers for max_pool2d), NaN or -inf
// inputs of the max ops (oneDNN ignores NaN and starts its maximum at -FLT_MAX), windows without
// any input element (possible with dilation; oneDNN divides by zero there), avg with
// count_include_pad whose ceil_mode windows reach past the padded input (oneDNN divides by the
// whole window, PyTorch by the part inside the padded input), cases where oneDNN has only its
// slow reference implementation (dilation), and max_pool2d_backward in nhwc, where the loop here
// is faster than oneDNN (see pool_backward_kernel).
#include "backends/cpu/pool.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/dispatch.h"
#include "backends/cpu/parallel.h"
#include "ir/attrs.h"

namespace tg::cpu {
namespace {

// Per output position of one spatial dim: the taps [first, last) inside the input and the
// avg divisor factor.
struct DimTable {
  std::vector<int64_t> first, last, count;
  bool has_empty = false;  // some window has no tap inside the input
  bool overhang = false;   // some window has a tap past the padded input (ceil_mode)
  // Outputs [lo, hi) whose every tap lies inside the input (a contiguous range).
  int64_t lo = 0, hi = 0;
};

DimTable make_table(const ops::PoolDim& d, bool count_include_pad) {
  DimTable t;
  const auto n = static_cast<size_t>(d.out);
  t.first.resize(n);
  t.last.resize(n);
  t.count.resize(n);
  for (int64_t o = 0; o < d.out; ++o) {
    d.input_taps(o, &t.first[o], &t.last[o]);
    const int64_t padded = d.padded_tap_count(o);
    t.count[o] = count_include_pad ? padded : t.last[o] - t.first[o];
    t.has_empty = t.has_empty || t.last[o] == t.first[o];
    t.overhang = t.overhang || padded < d.k;
  }
  while (t.lo < d.out && t.last[t.lo] - t.first[t.lo] < d.k) ++t.lo;
  t.hi = t.lo;
  while (t.hi < d.out && t.last[t.hi] - t.first[t.hi] == d.k) ++t.hi;
  return t;
}

struct Plan {
  ops::PoolGeometry g;
  DimTable h, w;
  int64_t in_plane() const { return g.h.in * g.w.in; }
  int64_t out_plane() const { return g.h.out * g.w.out; }
  int64_t taps() const { return g.h.k * g.w.k; }
};

Plan make_plan(const ir::Node& node, const Shape& x_shape, const char* op) {
  const auto& desc = std::get<Pool2dDesc>(node.attrs);
  Plan p{ops::pool_geometry(desc, x_shape, op), {}, {}};
  p.h = make_table(p.g.h, desc.count_include_pad);
  p.w = make_table(p.g.w, desc.count_include_pad);
  return p;
}

// Items per parallel chunk so that a chunk is about kGrain elementary steps.
int64_t grain_for(int64_t work_per_item) {
  return std::max<int64_t>(1, kGrain / std::max<int64_t>(1, work_per_item));
}

// v replaces best: strictly greater, or a NaN replacing a number (so the first NaN wins and a
// later equal element never replaces the first). Branch-free so that channel loops vectorize.
template <typename C>
inline bool better(C v, C best) {
  if constexpr (std::is_floating_point_v<C>) {
    return (v > best) | ((v != v) & (best == best));
  } else {
    return v > best;
  }
}

template <typename C>
constexpr C lowest() {
  if constexpr (std::is_floating_point_v<C>) return -std::numeric_limits<C>::infinity();
  return std::numeric_limits<C>::lowest();
}

// ---- forward --------------------------------------------------------------------------------

// The result of a window from its accumulator: the max itself, or the sum over the divisor (0
// for a window without any element to count).
template <bool kMax, typename C>
inline C finish(C acc, int64_t divisor) {
  if constexpr (kMax) {
    return acc;
  } else {
    return divisor > 0 ? acc / static_cast<C>(divisor) : C(0);
  }
}

template <bool kMax, typename C>
inline void fold(C& acc, C v) {
  if constexpr (kMax) {
    acc = better(v, acc) ? v : acc;
  } else {
    acc += v;
  }
}

template <bool kMax, typename T>
void forward_nhwc(const Plan& p, const T* x, T* y) {
  using C = compute_t<T>;
  const ops::PoolGeometry& g = p.g;
  const int64_t ch = g.c, pixels = g.n * p.out_plane();
  parallel_for(pixels, grain_for(ch * p.taps()), [&](int64_t begin, int64_t end) {
    std::vector<C> acc(static_cast<size_t>(ch));
    for (int64_t px = begin; px < end; ++px) {
      const int64_t ow = px % g.w.out, oh = px / g.w.out % g.h.out, n = px / p.out_plane();
      std::fill(acc.begin(), acc.end(), kMax ? lowest<C>() : C(0));
      for (int64_t th = p.h.first[oh]; th < p.h.last[oh]; ++th) {
        const int64_t ih = g.h.coord(oh, th);
        for (int64_t tw = p.w.first[ow]; tw < p.w.last[ow]; ++tw) {
          const T* src = x + ((n * g.h.in + ih) * g.w.in + g.w.coord(ow, tw)) * ch;
          C* a = acc.data();
          for (int64_t c = 0; c < ch; ++c) fold<kMax>(a[c], static_cast<C>(src[c]));
        }
      }
      const int64_t divisor = p.h.count[oh] * p.w.count[ow];
      T* dst = y + px * ch;
      for (int64_t c = 0; c < ch; ++c) dst[c] = static_cast<T>(finish<kMax>(acc[c], divisor));
    }
  });
}

// acc[ow] folds in the taps of input row `row` for every output column: the border columns tap
// by tap, the interior ones (all taps inside) as one strided loop per tap, which vectorizes.
template <bool kMax, typename T, typename C>
void fold_row(const Plan& p, const T* row, C* __restrict acc) {
  const ops::PoolDim& w = p.g.w;
  auto border = [&](int64_t ow) {
    for (int64_t tw = p.w.first[ow]; tw < p.w.last[ow]; ++tw)
      fold<kMax>(acc[ow], static_cast<C>(row[w.coord(ow, tw)]));
  };
  for (int64_t ow = 0; ow < p.w.lo; ++ow) border(ow);
  for (int64_t tw = 0; tw < w.k; ++tw) {
    const int64_t off = w.coord(0, tw);  // may be < 0; ow * stride + off >= 0 in the interior
    for (int64_t ow = p.w.lo; ow < p.w.hi; ++ow)
      fold<kMax>(acc[ow], static_cast<C>(row[ow * w.stride + off]));
  }
  for (int64_t ow = p.w.hi; ow < w.out; ++ow) border(ow);
}

template <bool kMax, typename T>
void forward_nchw(const Plan& p, const T* x, T* y) {
  using C = compute_t<T>;
  const ops::PoolGeometry& g = p.g;
  parallel_for(g.n * g.c, grain_for(p.out_plane() * p.taps()), [&](int64_t begin, int64_t end) {
    std::vector<C> acc(static_cast<size_t>(g.w.out));
    for (int64_t plane = begin; plane < end; ++plane) {
      const T* src = x + plane * p.in_plane();
      T* dst = y + plane * p.out_plane();
      for (int64_t oh = 0; oh < g.h.out; ++oh) {
        std::fill(acc.begin(), acc.end(), kMax ? lowest<C>() : C(0));
        for (int64_t th = p.h.first[oh]; th < p.h.last[oh]; ++th)
          fold_row<kMax>(p, src + g.h.coord(oh, th) * g.w.in, acc.data());
        for (int64_t ow = 0; ow < g.w.out; ++ow)
          dst[oh * g.w.out + ow] =
              static_cast<T>(finish<kMax>(acc[ow], p.h.count[oh] * p.w.count[ow]));
      }
    }
  });
}

// True when some element of x is NaN or -inf (oneDNN's max pooling mishandles both).
bool has_nan_or_neg_inf(const float* x, int64_t n) {
  bool found = false;
  parallel_for(n, kGrain, [&](int64_t begin, int64_t end) {
    uint32_t bad = 0;  // an integer accumulator vectorizes (a bool one does not)
    for (int64_t i = begin; i < end; ++i) {
      bad |= static_cast<uint32_t>(!(x[i] > -std::numeric_limits<float>::infinity()));
    }
    if (bad != 0) {
#pragma omp atomic write
      found = true;
    }
  });
  return found;
}

// Whether oneDNN computes this op's f32 result exactly as specified.
bool onednn_fits(const Plan& p, PoolAlgo algo, const TensorData& x) {
  if (p.h.has_empty || p.w.has_empty) return false;
  if (algo == PoolAlgo::avg_include_pad) return !p.h.overhang && !p.w.overhang;
  if (algo == PoolAlgo::max) return !has_nan_or_neg_inf(x.data<float>(), x.num_elements());
  return true;
}

PoolAlgo algo_of(bool is_max, const ir::Node& node) {
  if (is_max) return PoolAlgo::max;
  return std::get<Pool2dDesc>(node.attrs).count_include_pad ? PoolAlgo::avg_include_pad
                                                            : PoolAlgo::avg_exclude_pad;
}

template <bool kMax>
void pool_forward_kernel(KernelContext& ctx) {
  const TensorData& x = ctx.inputs[0];
  TensorData& y = ctx.outputs[0];
  const Plan p = make_plan(ctx.node, x.shape(), ctx.op_name());
  TG_CHECK_INTERNAL(p.g.output_shape() == y.shape(), "pool kernel: output shape");
  if (y.num_elements() == 0) return;
  const PoolAlgo algo = algo_of(kMax, ctx.node);
  if (x.dtype() == DType::f32 && onednn_fits(p, algo, x) &&
      onednn_pool_forward(p.g, algo, x.data<float>(), y.data<float>())) {
    return;
  }
  constexpr DTypeGroup kGroup = kMax ? DTypeGroup::numeric : DTypeGroup::floating;
  dispatch<kGroup>(x.dtype(), ctx.op_name(), [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(x.raw_data());
    T* out = static_cast<T*>(y.raw_data());
    p.g.nhwc ? forward_nhwc<kMax>(p, in, out) : forward_nchw<kMax>(p, in, out);
  });
}

// ---- backward -------------------------------------------------------------------------------
// Each work item owns a disjoint part of dx (a batch element and a block of channels in nhwc, a
// channel plane in nchw), zeroes it, and accumulates the contributions of its outputs into it.

// Channels per nhwc work item: all of them, unless a small batch would leave threads idle.
int64_t channel_block(const ops::PoolGeometry& g) {
  const int64_t want = 4 * num_threads();
  const int64_t max_blocks = std::max<int64_t>(1, (g.c + 15) / 16);
  const int64_t blocks =
      std::clamp<int64_t>((want + g.n - 1) / std::max<int64_t>(g.n, 1), 1, max_blocks);
  return std::max<int64_t>(1, (g.c + blocks - 1) / blocks);
}

// Runs f(n, c0, len) for every (batch element, channel block) after zeroing that part of dx.
template <typename A, typename F>
void for_each_nhwc_block(const Plan& p, A* dx, F&& f) {
  const ops::PoolGeometry& g = p.g;
  const int64_t cb = channel_block(g), blocks = (g.c + cb - 1) / cb;
  parallel_for(g.n * blocks, grain_for(p.out_plane() * p.taps() * cb), [&](int64_t b, int64_t e) {
    for (int64_t item = b; item < e; ++item) {
      const int64_t n = item / blocks, c0 = item % blocks * cb, len = std::min(cb, g.c - c0);
      A* base = dx + n * p.in_plane() * g.c + c0;
      for (int64_t i = 0; i < p.in_plane(); ++i) std::fill_n(base + i * g.c, len, A(0));
      f(n, c0, len);
    }
  });
}

template <typename F>
using bits_t = std::conditional_t<sizeof(F) == 8, uint64_t, uint32_t>;

// dst[c * step] takes rest[c] where src[c * step] is the window's maximum best[c], once (rest[c]
// becomes 0). best[c] is a copy of the first maximal element (or the first NaN), so comparing
// bits finds exactly that element. Integer masks and restrict pointers let the loop vectorize.
template <typename T, typename C, typename A>
[[gnu::noinline]] void route_to_max(const T* __restrict src, const C* __restrict best,
                                    A* __restrict rest, A* __restrict dst, int64_t len,
                                    int64_t step) {
  using U = bits_t<C>;
  using UA = bits_t<A>;
  for (int64_t c = 0; c < len; ++c) {
    const U v = std::bit_cast<U>(static_cast<C>(src[c * step]));
    const UA hit = UA(0) - static_cast<UA>(v == std::bit_cast<U>(best[c]));  // all ones or 0
    const UA r = std::bit_cast<UA>(rest[c]);
    dst[c * step] += std::bit_cast<A>(static_cast<UA>(r & hit));
    rest[c] = std::bit_cast<A>(static_cast<UA>(r & ~hit));
  }
}

// Two passes per output: the window's maximum (NaN if it holds one), then the cotangent goes to
// the first element equal to it (or the first NaN); `rest` keeps what is still to route.
template <typename T, typename A>
void max_backward_nhwc(const Plan& p, const T* dy, const T* x, A* dx) {
  using C = compute_t<T>;
  const ops::PoolGeometry& g = p.g;
  for_each_nhwc_block(p, dx, [&](int64_t n, int64_t c0, int64_t len) {
    std::vector<C> best(static_cast<size_t>(len));
    std::vector<A> rest(static_cast<size_t>(len));
    auto for_taps = [&](int64_t oh, int64_t ow, auto&& f) {
      for (int64_t th = p.h.first[oh]; th < p.h.last[oh]; ++th) {
        const int64_t ih = g.h.coord(oh, th);
        for (int64_t tw = p.w.first[ow]; tw < p.w.last[ow]; ++tw) {
          const int64_t at = ((n * g.h.in + ih) * g.w.in + g.w.coord(ow, tw)) * g.c + c0;
          f(x + at, dx + at);
        }
      }
    };
    for (int64_t oh = 0; oh < g.h.out; ++oh) {
      for (int64_t ow = 0; ow < g.w.out; ++ow) {
        C* b = best.data();
        A* r = rest.data();
        std::fill_n(b, len, lowest<C>());
        for_taps(oh, ow, [&](const T* src, A*) {
          for (int64_t c = 0; c < len; ++c) fold<true>(b[c], static_cast<C>(src[c]));
        });
        const T* d = dy + ((n * g.h.out + oh) * g.w.out + ow) * g.c + c0;
        for (int64_t c = 0; c < len; ++c) r[c] = static_cast<A>(d[c]);
        for_taps(oh, ow, [&](const T* src, A* dst) { route_to_max(src, b, r, dst, len, 1); });
      }
    }
  });
}

template <typename T, typename A>
void avg_backward_nhwc(const Plan& p, const T* dy, A* dx) {
  const ops::PoolGeometry& g = p.g;
  for_each_nhwc_block(p, dx, [&](int64_t n, int64_t c0, int64_t len) {
    std::vector<A> share(static_cast<size_t>(len));
    for (int64_t oh = 0; oh < g.h.out; ++oh) {
      for (int64_t ow = 0; ow < g.w.out; ++ow) {
        const int64_t divisor = p.h.count[oh] * p.w.count[ow];
        if (divisor == 0) continue;
        const T* d = dy + ((n * g.h.out + oh) * g.w.out + ow) * g.c + c0;
        for (int64_t c = 0; c < len; ++c) share[c] = static_cast<A>(d[c]) / static_cast<A>(divisor);
        for (int64_t th = p.h.first[oh]; th < p.h.last[oh]; ++th) {
          const int64_t ih = g.h.coord(oh, th);
          for (int64_t tw = p.w.first[ow]; tw < p.w.last[ow]; ++tw) {
            A* dst = dx + ((n * g.h.in + ih) * g.w.in + g.w.coord(ow, tw)) * g.c + c0;
            for (int64_t c = 0; c < len; ++c) dst[c] += share[c];
          }
        }
      }
    }
  });
}

// Runs f(plane) for every channel plane after zeroing it in dx.
template <typename A, typename F>
void for_each_nchw_plane(const Plan& p, A* dx, F&& f) {
  const ops::PoolGeometry& g = p.g;
  parallel_for(g.n * g.c, grain_for(p.out_plane() * p.taps()), [&](int64_t b, int64_t e) {
    for (int64_t plane = b; plane < e; ++plane) {
      std::fill_n(dx + plane * p.in_plane(), p.in_plane(), A(0));
      f(plane);
    }
  });
}

// Row by row: each output row's maxima (fold_row), then its cotangents routed tap by tap in
// window order, the interior columns as strided vector loops.
template <typename T, typename A>
void max_backward_nchw(const Plan& p, const T* dy, const T* x, A* dx) {
  using C = compute_t<T>;
  const ops::PoolGeometry& g = p.g;
  const ops::PoolDim& w = g.w;
  for_each_nchw_plane(p, dx, [&](int64_t plane) {
    std::vector<C> best(static_cast<size_t>(w.out));
    std::vector<A> rest(static_cast<size_t>(w.out));
    const T* src = x + plane * p.in_plane();
    A* dst = dx + plane * p.in_plane();
    const T* d = dy + plane * p.out_plane();
    for (int64_t oh = 0; oh < g.h.out; ++oh) {
      std::fill(best.begin(), best.end(), lowest<C>());
      for (int64_t th = p.h.first[oh]; th < p.h.last[oh]; ++th)
        fold_row<true>(p, src + g.h.coord(oh, th) * w.in, best.data());
      for (int64_t ow = 0; ow < w.out; ++ow) rest[ow] = static_cast<A>(d[oh * w.out + ow]);
      for (int64_t th = p.h.first[oh]; th < p.h.last[oh]; ++th) {
        const T* xrow = src + g.h.coord(oh, th) * w.in;
        A* drow = dst + g.h.coord(oh, th) * w.in;
        auto border = [&](int64_t ow) {
          for (int64_t tw = p.w.first[ow]; tw < p.w.last[ow]; ++tw) {
            const int64_t col = w.coord(ow, tw);
            route_to_max(xrow + col, &best[ow], &rest[ow], drow + col, 1, 1);
          }
        };
        for (int64_t ow = 0; ow < p.w.lo; ++ow) border(ow);
        for (int64_t tw = 0; tw < w.k && p.w.lo < p.w.hi; ++tw) {
          const int64_t col = p.w.lo * w.stride + w.coord(0, tw);  // >= 0 in the interior
          route_to_max(xrow + col, &best[p.w.lo], &rest[p.w.lo], drow + col, p.w.hi - p.w.lo,
                       w.stride);
        }
        for (int64_t ow = p.w.hi; ow < w.out; ++ow) border(ow);
      }
    }
  });
}

template <typename T, typename A>
void avg_backward_nchw(const Plan& p, const T* dy, A* dx) {
  const ops::PoolGeometry& g = p.g;
  const ops::PoolDim& w = g.w;
  for_each_nchw_plane(p, dx, [&](int64_t plane) {
    std::vector<A> share(static_cast<size_t>(w.out));
    A* dst = dx + plane * p.in_plane();
    const T* d = dy + plane * p.out_plane();
    for (int64_t oh = 0; oh < g.h.out; ++oh) {
      for (int64_t ow = 0; ow < w.out; ++ow) {
        const int64_t divisor = p.h.count[oh] * p.w.count[ow];
        share[ow] =
            divisor > 0 ? static_cast<A>(d[oh * w.out + ow]) / static_cast<A>(divisor) : A(0);
      }
      for (int64_t th = p.h.first[oh]; th < p.h.last[oh]; ++th) {
        A* row = dst + g.h.coord(oh, th) * w.in;
        auto border = [&](int64_t ow) {
          for (int64_t tw = p.w.first[ow]; tw < p.w.last[ow]; ++tw)
            row[w.coord(ow, tw)] += share[ow];
        };
        for (int64_t ow = 0; ow < p.w.lo; ++ow) border(ow);
        for (int64_t tw = 0; tw < w.k; ++tw) {
          const int64_t off = w.coord(0, tw);
          for (int64_t ow = p.w.lo; ow < p.w.hi; ++ow) row[ow * w.stride + off] += share[ow];
        }
        for (int64_t ow = p.w.hi; ow < w.out; ++ow) border(ow);
      }
    }
  });
}

template <bool kMax, typename T, typename A>
void backward_loops(const Plan& p, const T* dy, const T* x, A* dx) {
  if constexpr (kMax) {
    p.g.nhwc ? max_backward_nhwc(p, dy, x, dx) : max_backward_nchw(p, dy, x, dx);
  } else {
    p.g.nhwc ? avg_backward_nhwc(p, dy, dx) : avg_backward_nchw(p, dy, dx);
  }
}

template <bool kMax>
void pool_backward_kernel(KernelContext& ctx) {
  const TensorData &dy = ctx.inputs[0], &x = ctx.inputs[1];
  TensorData& dx = ctx.outputs[0];
  const Plan p = make_plan(ctx.node, x.shape(), ctx.op_name());
  TG_CHECK_INTERNAL(p.g.output_shape() == dy.shape() && dx.shape() == x.shape(),
                    "pool backward kernel: shapes");
  if (dx.num_elements() == 0) return;
  const PoolAlgo algo = algo_of(kMax, ctx.node);
  // nhwc max: our one pass (window maxima then routing, cache-resident) measured 1.6-2.5x
  // faster than oneDNN's forward_training (workspace) + backward + the NaN scan (ResNet's stem
  // pool, 8x112x112x64, and 2x2 pools, 1-2 threads); nchw: on par, so oneDNN.
  const bool own_is_faster = kMax && p.g.nhwc;
  if (!own_is_faster && dy.num_elements() > 0 && x.dtype() == DType::f32 &&
      onednn_fits(p, algo, x) &&
      onednn_pool_backward(p.g, algo, dy.data<float>(), x.data<float>(), dx.data<float>())) {
    return;
  }
  dispatch<DTypeGroup::floating>(x.dtype(), ctx.op_name(), [&](auto tag) {
    using T = decltype(tag);
    const T* d = static_cast<const T*>(dy.raw_data());
    const T* in = static_cast<const T*>(x.raw_data());
    if constexpr (std::is_same_v<compute_t<T>, T>) {
      backward_loops<kMax>(p, d, in, static_cast<T*>(dx.raw_data()));
    } else {  // f16/bf16: accumulate in float, round once
      std::vector<float> acc(static_cast<size_t>(dx.num_elements()));
      backward_loops<kMax>(p, d, in, acc.data());
      T* out = static_cast<T*>(dx.raw_data());
      parallel_for(dx.num_elements(), kGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) out[i] = static_cast<T>(acc[i]);
      });
    }
  });
}

}  // namespace

void register_pool_kernels(KernelTable& t) {
  t.set(ir::OpKind::max_pool2d, pool_forward_kernel<true>);
  t.set(ir::OpKind::avg_pool2d, pool_forward_kernel<false>);
  t.set(ir::OpKind::max_pool2d_backward, pool_backward_kernel<true>);
  t.set(ir::OpKind::avg_pool2d_backward, pool_backward_kernel<false>);
}

}  // namespace tg::cpu
