// CPU kernel of the stencil op. Outputs whose whole window lies inside the source (per dim an
// interval of output positions, computed up front) read through precomputed window offsets, in
// runs along the last dim that vectorize across outputs; the few others (near the borders) map
// each coordinate through the boundary mode.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "ops/boundary.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/dispatch.h"
#include "backends/cpu/parallel.h"
#include "backends/stencil_util.h"

namespace tg::cpu {
namespace {

constexpr int kMaxWindowRank = 4;
using Dims = std::array<int64_t, kMaxWindowRank>;

int64_t map_coord(int64_t p, int64_t n, BoundaryMode mode) { return ops::boundary_index(p, n, mode); }

struct Plan {
  int k = 0;
  BoundaryMode mode = BoundaryMode::zero;
  int64_t batch = 1, in_block = 1, out_block = 1, window = 1;
  Dims in{}, out{}, win{}, stride{}, dilation{}, before{};  // per window dim
  Dims src_stride{};  // element stride of each window dim in the source
  // Outputs o in [inside_lo, inside_hi) of a dim read only inside the source.
  Dims inside_lo{}, inside_hi{};
  std::vector<int64_t> offsets;  // window offset j -> element offset from the window origin

  // Padded coordinate read along dim i by output position o at window offset j.
  int64_t pos(int i, int64_t o, int64_t j) const {
    return o * stride[i] + j * dilation[i] - before[i];
  }
};


// Fills the geometry of window dim i (source size `in`).
void plan_dim(Plan& p, const StencilDesc& d, int i, int64_t in, const char* op) {
  if (in == 0 && p.mode != BoundaryMode::zero && p.mode != BoundaryMode::constant) {
    fail(ErrorCode::invalid_argument, op, "window dim {} of the source is empty: nothing to read",
         i);
  }
  p.in[i] = in;
  p.stride[i] = d.strides.at(i);
  p.dilation[i] = d.dilations.at(i);
  p.before[i] = ops::stencil_pad_before(d, static_cast<size_t>(i), in, p.out[i], p.win[i]);
  // Output o reads [o*stride - before, o*stride - before + extent - 1]: inside the source for
  // ceil(before / stride) <= o <= floor((in - extent + before) / stride).
  const int64_t extent = (p.win[i] - 1) * p.dilation[i] + 1;
  const int64_t last = in - extent + p.before[i];
  p.inside_lo[i] = std::min((p.before[i] + p.stride[i] - 1) / p.stride[i], p.out[i]);
  p.inside_hi[i] = last < 0 ? 0 : std::min(last / p.stride[i] + 1, p.out[i]);
  p.inside_hi[i] = std::max(p.inside_hi[i], p.inside_lo[i]);
}

Plan make_plan(const StencilDesc& d, const Shape& xs, const Shape& ws, const Shape& ys,
               const char* op) {
  Plan p;
  p.mode = d.boundary_mode;
  backends::stencil_geometry(p, xs, ws, ys, kMaxWindowRank);
  const size_t lead = xs.size() - ws.size();
  if (p.batch * p.out_block == 0) return p;  // nothing to compute
  for (int i = 0; i < p.k; ++i) plan_dim(p, d, i, xs[lead + i], op);
  p.offsets.resize(static_cast<size_t>(p.window));
  Dims j{};
  for (int64_t n = 0; n < p.window; ++n) {
    int64_t off = 0;
    for (int i = 0; i < p.k; ++i) off += j[i] * d.dilations[i] * p.src_stride[i];
    p.offsets[n] = off;
    for (int i = p.k - 1; i >= 0 && ++j[i] == p.win[i]; --i) j[i] = 0;
  }
  return p;
}

// Integer arithmetic wraps (two's complement) instead of overflowing.
template <typename C>
C mul(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    return static_cast<C>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  } else {
    return a * b;
  }
}
template <typename C>
C add(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    return static_cast<C>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  } else {
    return a + b;
  }
}

// v replaces best: strictly greater (max) / smaller (min); a NaN beats any number. Branch-free so
// that loops over outputs vectorize.
template <bool kMax, typename C>
inline bool better(C v, C best) {
  const bool beats = kMax ? v > best : v < best;
  if constexpr (std::is_floating_point_v<C>) {
    return beats | ((v != v) & (best == best));  // NaN != NaN
  } else {
    return beats;
  }
}

constexpr bool is_arg(StencilReduction r) {
  return r == StencilReduction::argmin || r == StencilReduction::argmax;
}

// Folds window value v (offset j > 0) into the running result. Every reduction starts from the
// value at offset 0.
template <StencilReduction R, typename C>
inline void combine(C& acc, int32_t& at, C v, int64_t j) {
  if constexpr (R == StencilReduction::sum) {
    acc = add(acc, v);
  } else if constexpr (R == StencilReduction::product) {
    acc = mul(acc, v);
  } else {
    constexpr bool kMax = R == StencilReduction::max || R == StencilReduction::argmax;
    const bool take = better<kMax>(v, acc);
    acc = take ? v : acc;
    if constexpr (is_arg(R)) at = take ? static_cast<int32_t>(j) : at;
  }
}

// acc[t] (and at[t]) fold in r[t * step] * wj (window offset j), t < len. Not inlined: kept as
// its own loop (with restrict pointers) it vectorizes.
template <StencilReduction R, typename T, typename C>
[[gnu::noinline]] void fold_row(C* __restrict acc, int32_t* __restrict at, const T* __restrict r,
                                int64_t len, int64_t step, C wj, int64_t j) {
  for (int64_t t = 0; t < len; ++t)
    combine<R>(acc[t], at[t], mul(static_cast<C>(r[t * step]), wj), j);
}

// Window values of output position o (some reads outside the source) into buf; coord is
// scratch for the mapped coordinates of each dim.
template <typename T, typename C>
void gather(const Plan& p, const Dims& o, const T* src, C boundary, std::vector<C>& buf,
            std::array<std::vector<int64_t>, kMaxWindowRank>& coord) {
  for (int i = 0; i < p.k; ++i) {
    coord[i].resize(static_cast<size_t>(p.win[i]));
    for (int64_t j = 0; j < p.win[i]; ++j)
      coord[i][j] = map_coord(p.pos(i, o[i], j), p.in[i], p.mode);
  }
  Dims j{};
  for (int64_t n = 0; n < p.window; ++n) {
    int64_t off = 0;
    bool outside = false;
    for (int i = 0; i < p.k; ++i) {
      int64_t c = coord[i][j[i]];
      outside = outside || c < 0;
      off += c * p.src_stride[i];
    }
    buf[n] = outside ? boundary : static_cast<C>(src[off]);
    for (int i = p.k - 1; i >= 0 && ++j[i] == p.win[i]; --i) j[i] = 0;
  }
}

template <typename T>
compute_t<T> boundary_value(const StencilDesc& d) {
  using C = compute_t<T>;
  if (d.boundary_mode != BoundaryMode::constant) return C(0);
  double c = d.padding_constant;
  if constexpr (std::is_same_v<C, float>) {
    constexpr double kMax = std::numeric_limits<float>::max();
    if (c > kMax || c < -kMax) c = c > 0 ? HUGE_VAL : -HUGE_VAL;   // avoid UB in the narrowing
    return static_cast<C>(static_cast<T>(static_cast<float>(c)));  // rounded to storage type
  } else {
    return static_cast<C>(c);  // f64, or an integer infer_stencil checked is representable
  }
}

// Outputs handled together along the last window dim when their windows are inside the source.
constexpr int64_t kRun = 64;

template <typename T, StencilReduction R>
struct StencilRun {
  using C = compute_t<T>;
  using Out = std::conditional_t<is_arg(R), int32_t, T>;
  const Plan& p;
  const T* src;
  Out* dst;
  std::vector<C> w;  // weights in the compute type
  C boundary;
  int64_t last_step;  // source elements between consecutive outputs along the last window dim

  void write(int64_t e, C value, int32_t at) const {
    if constexpr (is_arg(R)) {
      dst[e] = at;
    } else {
      dst[e] = static_cast<Out>(value);
    }
  }

  // Per-thread buffers of the border path.
  struct Scratch {
    std::vector<C> values;
    std::array<std::vector<int64_t>, kMaxWindowRank> coord;
  };

  // Output e at position o, some of whose reads fall outside the source.
  void border(int64_t e, const Dims& o, const T* s, Scratch& scratch) const {
    std::vector<C>& v = scratch.values;
    gather(p, o, s, boundary, v, scratch.coord);
    C acc = mul(v[0], w[0]);
    int32_t at = 0;
    for (int64_t j = 1; j < p.window; ++j) combine<R>(acc, at, mul(v[j], w[j]), j);
    write(e, acc, at);
  }

  // Outputs e..e+len-1 (consecutive along the last window dim, windows inside the source), the
  // first one reading from q: window offset by window offset, vectorizable across outputs.
  template <bool kUnitStep>
  void interior(int64_t e, int64_t len, const T* q) const {
    const int64_t step = kUnitStep ? 1 : last_step;
    std::array<C, kRun> acc;
    std::array<int32_t, kRun> at{};
    for (int64_t t = 0; t < len; ++t) acc[t] = mul(static_cast<C>(q[t * step]), w[0]);
    for (int64_t j = 1; j < p.window; ++j) {
      fold_row<R>(acc.data(), at.data(), q + p.offsets[j], len, step, w[j], j);
    }
    for (int64_t t = 0; t < len; ++t) write(e + t, acc[t], at[t]);
  }

  void chunk(int64_t begin, int64_t end) const {
    Scratch scratch;
    scratch.values.resize(static_cast<size_t>(p.window));
    const int l = p.k - 1;
    Dims o{};
    int64_t b = begin / p.out_block, rem = begin % p.out_block;
    for (int i = l; i >= 0; --i) {
      o[i] = rem % p.out[i];
      rem /= p.out[i];
    }
    for (int64_t e = begin; e < end;) {
      const T* s = src + b * p.in_block;
      bool in = true;
      for (int i = 0; i < p.k; ++i) in = in && o[i] >= p.inside_lo[i] && o[i] < p.inside_hi[i];
      int64_t len = 1;
      if (in) {
        len = std::min({kRun, end - e, p.inside_hi[l] - o[l]});
        int64_t base = 0;  // window origin of output o
        for (int i = 0; i < p.k; ++i) base += p.pos(i, o[i], 0) * p.src_stride[i];
        if (last_step == 1) {
          interior<true>(e, len, s + base);
        } else {
          interior<false>(e, len, s + base);
        }
      } else {
        border(e, o, s, scratch);
      }
      e += len;
      o[l] += len - 1;
      int i = l;
      for (; i >= 0 && ++o[i] == p.out[i]; --i) o[i] = 0;
      if (i < 0) ++b;
    }
  }
};

template <typename T, StencilReduction R>
void run_stencil(const Plan& p, const StencilDesc& d, const TensorData& x, const TensorData& w,
                 TensorData& y) {
  using Run = StencilRun<T, R>;
  Run run{p,
          static_cast<const T*>(x.raw_data()),
          static_cast<typename Run::Out*>(y.raw_data()),
          {},
          boundary_value<T>(d),
          d.strides[p.k - 1]};
  const T* wt = static_cast<const T*>(w.raw_data());
  for (int64_t j = 0; j < p.window; ++j) run.w.push_back(static_cast<compute_t<T>>(wt[j]));
  const int64_t grain = std::max<int64_t>(1, kGrain / p.window);
  parallel_for(p.batch * p.out_block, grain,
               [&](int64_t begin, int64_t end) { run.chunk(begin, end); });
}

template <typename T>
void run_typed(const Plan& p, const StencilDesc& d, KernelContext& ctx) {
  const TensorData& x = ctx.inputs[0];
  const TensorData& w = ctx.inputs[1];
  TensorData& y = ctx.outputs[0];
  using R = StencilReduction;
  switch (d.reduction) {
    case R::sum:
      return run_stencil<T, R::sum>(p, d, x, w, y);
    case R::product:
      return run_stencil<T, R::product>(p, d, x, w, y);
    case R::min:
      return run_stencil<T, R::min>(p, d, x, w, y);
    case R::max:
      return run_stencil<T, R::max>(p, d, x, w, y);
    case R::argmin:
      return run_stencil<T, R::argmin>(p, d, x, w, y);
    case R::argmax:
      return run_stencil<T, R::argmax>(p, d, x, w, y);
  }
}

void stencil_kernel(KernelContext& ctx) {
  const auto& d = std::get<StencilDesc>(ctx.node.attrs);
  const Plan p = make_plan(d, ctx.inputs[0].shape(), ctx.inputs[1].shape(), ctx.outputs[0].shape(),
                           ctx.op_name());
  if (p.batch * p.out_block == 0) return;
  dispatch<DTypeGroup::numeric>(ctx.inputs[0].dtype(), ctx.op_name(),
                                [&](auto tag) { run_typed<decltype(tag)>(p, d, ctx); });
}

}  // namespace

void register_stencil_kernels(KernelTable& t) { t.set(ir::OpKind::stencil, stencil_kernel); }

}  // namespace tg::cpu
