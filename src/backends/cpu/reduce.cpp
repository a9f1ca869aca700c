// CPU kernels of the reduce op family.
//
// Every reduction is brought to the canonical form [outer, R, inner] -> [outer, inner]: adjacent
// dims that are both reduced (or both kept) are merged, size-1 dims dropped, and a reduction over
// several non-adjacent groups runs as several passes (the last reduced group first; intermediate
// results stay in the accumulator type). A pass
// - with inner == 1 reduces contiguous rows: pairwise (blocks of 128 in 16 independent lanes,
//   halves combined recursively, as numpy does) for value ops; argmax/argmin find the extreme
//   value that way, then scan for its first index;
// - with inner > 1 accumulates whole rows into a block of columns (vectorizable, no strided
//   gathers), in blocks of kRowBlock rows that are then combined (two-level summation); narrow
//   rows (inner <= 32) are accumulated as one contiguous stream into 64 lanes instead.
// Work is split over (outer, column block) units and, when those are too few for the threads,
// also over chunks of R whose partial results are combined in order afterwards.
//
// Accumulation: f32 sums and products accumulate in double; f16/bf16 in float; f64 in double
// (pairwise); integers in their own type with two's-complement wrap-around (no UB). max/min are
// exact in the compute type and propagate NaN.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/dispatch.h"
#include "backends/cpu/parallel.h"
#include "backends/reduce_util.h"

namespace tg::cpu {
namespace {

using ir::OpKind;

constexpr int64_t kColBlock = 512;  // columns per unit when accumulating rows
constexpr int64_t kRowBlock = 128;  // rows summed before joining the running total
constexpr int64_t kPairBlock = 128; // pairwise summation leaf size
constexpr int kPairLanes = 16;      // independent accumulators in a pairwise leaf
constexpr int64_t kLanes = 64;      // lanes of the narrow-row kernel

template <typename T>
using wrap_t = std::make_unsigned_t<T>;

// A heap array (std::vector<bool> has no data()).
template <typename T>
class Array {
 public:
  void resize(int64_t n) {
    data_ = std::make_unique<T[]>(static_cast<size_t>(n));
    size_ = n;
  }
  T* data() { return data_.get(); }
  int64_t size() const { return size_; }
  T& operator[](int64_t i) { return data_[i]; }

 private:
  std::unique_ptr<T[]> data_;
  int64_t size_ = 0;
};

// Accumulator type of a value reduction of storage type T.
template <OpKind K, typename T>
using value_acc_t = std::conditional_t<
    K == OpKind::reduce_sum || K == OpKind::reduce_prod,
    std::conditional_t<std::is_same_v<T, float>, double, compute_t<T>>, compute_t<T>>;

// sum, prod, max, min, and, or on accumulator type V.
template <OpKind K, typename T>
struct ValueOp {
  using V = value_acc_t<K, T>;
  using Acc = V;
  static constexpr bool kArg = false;

  static V identity() {
    if constexpr (K == OpKind::reduce_sum) return V(0);
    if constexpr (K == OpKind::reduce_prod) return V(1);
    if constexpr (K == OpKind::reduce_and) return true;
    if constexpr (K == OpKind::reduce_or) return false;
    if constexpr (K == OpKind::reduce_max) {
      if constexpr (std::is_floating_point_v<V>) return -std::numeric_limits<V>::infinity();
      else return std::numeric_limits<V>::lowest();
    }
    if constexpr (K == OpKind::reduce_min) {
      if constexpr (std::is_floating_point_v<V>) return std::numeric_limits<V>::infinity();
      else return std::numeric_limits<V>::max();
    }
  }

  static V combine(V a, V b) {
    if constexpr (K == OpKind::reduce_and) return a && b;
    if constexpr (K == OpKind::reduce_or) return a || b;
    if constexpr (K == OpKind::reduce_sum) {
      if constexpr (std::is_integral_v<V>) return static_cast<V>(wrap_t<V>(a) + wrap_t<V>(b));
      else return a + b;
    }
    if constexpr (K == OpKind::reduce_prod) {
      if constexpr (std::is_integral_v<V>) return static_cast<V>(wrap_t<V>(a) * wrap_t<V>(b));
      else return a * b;
    }
    // max/min: a NaN operand wins (a NaN accumulator a fails `b > a`, so it stays). Bitwise |
    // keeps the select branch-free, so loops over it vectorize.
    if constexpr (K == OpKind::reduce_max) {
      if constexpr (std::is_floating_point_v<V>) return ((b > a) | (b != b)) ? b : a;
      else return b > a ? b : a;
    }
    if constexpr (K == OpKind::reduce_min) {
      if constexpr (std::is_floating_point_v<V>) return ((b < a) | (b != b)) ? b : a;
      else return b < a ? b : a;
    }
  }
  template <typename In>
  static V load(In x) {
    return static_cast<V>(static_cast<compute_t<In>>(x));
  }
  static void merge(Acc& a, const Acc& b) { a = combine(a, b); }
  template <typename Out>
  static Out store(const Acc& a) {
    return static_cast<Out>(static_cast<compute_t<Out>>(a));
  }
};

// argmax / argmin: the best value and its first index. NaN beats every number; when partial
// results of consecutive chunks are merged, a later one wins only when strictly better, so ties
// keep the earlier index.
template <OpKind K, typename T>
struct ArgOp {
  using C = compute_t<T>;
  struct Acc {
    C value;
    int64_t index;
  };
  static constexpr bool kArg = true;
  static constexpr bool kMax = K == OpKind::argmax;

  static bool better(C v, C best) {
    if constexpr (std::is_floating_point_v<C>) {
      if (best != best) return false;
      if (v != v) return true;
    }
    return kMax ? v > best : v < best;
  }
  static void merge(Acc& a, const Acc& later) {
    if (better(later.value, a.value)) a = later;
  }
  template <typename Out>
  static Out store(const Acc& a) {
    return a.index;
  }
};

// Pairwise reduction of a contiguous row of n elements (value ops): leaves of up to kPairBlock
// elements are reduced in kPairLanes independent lanes (vectorized) and the lanes combined as a
// tree; longer rows are split in halves recursively.
template <typename Op, typename In>
typename Op::V pairwise(const In* p, int64_t n) {
  using V = typename Op::V;
  constexpr int kL = kPairLanes;
  if (n < kL) {
    V a = Op::identity();
    for (int64_t i = 0; i < n; ++i) a = Op::combine(a, Op::load(p[i]));
    return a;
  }
  if (n <= kPairBlock) {
    V r[kL];
    for (int k = 0; k < kL; ++k) r[k] = Op::load(p[k]);
    int64_t i = kL;
    for (; i + kL <= n; i += kL) {
#pragma omp simd
      for (int k = 0; k < kL; ++k) r[k] = Op::combine(r[k], Op::load(p[i + k]));
    }
    for (int width = kL / 2; width > 0; width /= 2) {
      for (int k = 0; k < width; ++k) r[k] = Op::combine(r[k], r[k + width]);
    }
    V a = r[0];
    for (; i < n; ++i) a = Op::combine(a, Op::load(p[i]));
    return a;
  }
  int64_t half = n / 2;
  half -= half % kL;
  return Op::combine(pairwise<Op>(p, half), pairwise<Op>(p + half, n - half));
}

// Reduces rows [r0, r1) of one contiguous row (inner == 1).
template <typename Op, typename In>
typename Op::Acc reduce_row(const In* row, int64_t r0, int64_t r1) {
  if constexpr (Op::kArg) {
    // Two vectorizable passes: the extreme value (NaN-propagating), then its first index.
    using C = typename Op::C;
    using Extreme = ValueOp<Op::kMax ? OpKind::reduce_max : OpKind::reduce_min, In>;
    C best = static_cast<C>(pairwise<Extreme>(row + r0, r1 - r0));
    bool nan = best != best;
    for (int64_t r = r0; r < r1; ++r) {
      C v = static_cast<C>(row[r]);
      if (nan ? v != v : v == best) return {best, r};
    }
    return {best, r0};  // unreachable: best is one of the elements
  } else {
    return pairwise<Op>(row + r0, r1 - r0);
  }
}

// Value ops on narrow rows (inner <= kLanes / 2): the rows [r0, r1) are one contiguous stream,
// accumulated into kLanes-wide lanes (lane t gets column t % inner) in blocks of kRowBlock
// groups; each block's lanes are folded into acc[0, inner).
template <typename Op, typename In>
void reduce_narrow(const In* x, int64_t inner, int64_t r0, int64_t r1, typename Op::V* acc) {
  using V = typename Op::V;
  const int64_t m = kLanes / inner, width = m * inner;  // rows per group, lanes used
  for (int64_t j = 0; j < inner; ++j) acc[j] = Op::identity();
  V lanes[kLanes];
  int64_t r = r0;
  while (r + m <= r1) {
    int64_t groups = std::min(kRowBlock, (r1 - r) / m);
    for (int64_t t = 0; t < width; ++t) lanes[t] = Op::identity();
    const In* p = x + r * inner;
    for (int64_t g = 0; g < groups; ++g, p += width) {
#pragma omp simd
      for (int64_t t = 0; t < width; ++t) lanes[t] = Op::combine(lanes[t], Op::load(p[t]));
    }
    for (int64_t t = 0; t < width; ++t) acc[t % inner] = Op::combine(acc[t % inner], lanes[t]);
    r += groups * m;
  }
  for (; r < r1; ++r) {
    for (int64_t j = 0; j < inner; ++j) acc[j] = Op::combine(acc[j], Op::load(x[r * inner + j]));
  }
}

// Value ops: accumulates rows [r0, r1) of x[R, inner] into columns [c0, c0 + w) of acc, four
// rows at a time, in blocks of kRowBlock rows joined into the running total. (The chained form
// combine(combine(...)) is the one GCC vectorizes for the NaN-propagating max/min.)
template <typename Op, typename In>
void reduce_columns(const In* x, int64_t inner, int64_t r0, int64_t r1, int64_t c0, int64_t w,
                    typename Op::V* acc, typename Op::V* blk) {
  using V = typename Op::V;
  if (w == inner && inner <= kLanes / 2) return reduce_narrow<Op>(x, inner, r0, r1, acc);
  for (int64_t j = 0; j < w; ++j) acc[j] = Op::identity();
  for (int64_t rb = r0; rb < r1; rb += kRowBlock) {
    int64_t re = std::min(r1, rb + kRowBlock), r = rb;
    for (int64_t j = 0; j < w; ++j) blk[j] = Op::identity();
    for (; r + 4 <= re; r += 4) {
      const In* p = x + r * inner + c0;
      const In *p1 = p + inner, *p2 = p1 + inner, *p3 = p2 + inner;
#pragma omp simd
      for (int64_t j = 0; j < w; ++j) {
        V a = Op::combine(Op::combine(blk[j], Op::load(p[j])), Op::load(p1[j]));
        blk[j] = Op::combine(Op::combine(a, Op::load(p2[j])), Op::load(p3[j]));
      }
    }
    for (; r < re; ++r) {
      const In* p = x + r * inner + c0;
#pragma omp simd
      for (int64_t j = 0; j < w; ++j) blk[j] = Op::combine(blk[j], Op::load(p[j]));
    }
    for (int64_t j = 0; j < w; ++j) acc[j] = Op::combine(acc[j], blk[j]);
  }
}

// argmax/argmin over rows [r0, r1) for columns [c0, c0 + w) (w <= kColBlock): the extreme of each
// column first (vectorized value reduction), then a scan for the first row holding it.
template <typename Op, typename In>
void arg_columns(const In* x, int64_t inner, int64_t r0, int64_t r1, int64_t c0, int64_t w,
                 typename Op::Acc* acc) {
  using C = typename Op::C;
  using Extreme = ValueOp<Op::kMax ? OpKind::reduce_max : OpKind::reduce_min, In>;
  C best[kColBlock], tmp[kColBlock];
  int64_t idx[kColBlock];
  reduce_columns<Extreme>(x, inner, r0, r1, c0, w, best, tmp);
  std::fill(idx, idx + w, int64_t{-1});
  // Row offsets inside the current block, in 32 bits so that the scan vectorizes.
  int32_t rel[kColBlock];
  for (int64_t rb = r0; rb < r1; rb += kRowBlock) {
    int64_t re = std::min(r1, rb + kRowBlock);
    std::fill(rel, rel + w, int32_t{-1});
    for (int64_t r = rb; r < re; ++r) {
      const In* p = x + r * inner + c0;
      const int32_t off = static_cast<int32_t>(r - rb);
#pragma omp simd
      for (int64_t j = 0; j < w; ++j) {
        C v = static_cast<C>(p[j]), b = best[j];
        bool hit = (rel[j] < 0) & ((v == b) | ((v != v) & (b != b)));  // NaN matches NaN
        rel[j] = hit ? off : rel[j];
      }
    }
    bool all = true;
    for (int64_t j = 0; j < w; ++j) {
      if (idx[j] < 0 && rel[j] >= 0) idx[j] = rb + rel[j];
      all &= idx[j] >= 0;
    }
    if (all) break;
  }
  for (int64_t j = 0; j < w; ++j) acc[j] = {best[j], idx[j] < 0 ? r0 : idx[j]};
}

// Accumulates rows [r0, r1) of x[R, inner] into columns [c0, c0 + w) of acc.
template <typename Op, typename In>
void reduce_rows(const In* x, int64_t inner, int64_t r0, int64_t r1, int64_t c0, int64_t w,
                 typename Op::Acc* acc, typename Op::Acc* blk) {
  if constexpr (Op::kArg) arg_columns<Op>(x, inner, r0, r1, c0, w, acc);
  else reduce_columns<Op>(x, inner, r0, r1, c0, w, acc, blk);
}

// One pass: x[outer, R, inner] -> y[outer, inner].
template <typename Op, typename In, typename Out>
class Pass {
 public:
  using Acc = typename Op::Acc;

  Pass(const In* x, Out* y, int64_t outer, int64_t r, int64_t inner)
      : x_(x), y_(y), outer_(outer), r_(r), inner_(inner) {
    col_blocks_ = inner == 1 ? 1 : (inner + kColBlock - 1) / kColBlock;
    int64_t base = outer * col_blocks_;
    int64_t threads = num_threads();
    work_ = outer * r * inner;
    if (work_ > kGrain && base < threads && r > 1) {
      // Few independent units: split R too (each chunk at least ~kGrain/threads elements).
      int64_t max_chunks = std::max<int64_t>(1, work_ / std::max<int64_t>(1, kGrain / 4));
      r_chunks_ = std::min({(threads + base - 1) / base, r, max_chunks});
    }
  }

  void run() {
    int64_t units = outer_ * col_blocks_ * r_chunks_;
    if (r_chunks_ > 1) partial_.resize(r_chunks_ * outer_ * inner_);
    auto body = [&](int64_t begin, int64_t end) { run_units(begin, end); };
    if (work_ <= kGrain) body(0, units);
    else parallel_for(units, 1, body);
    if (r_chunks_ > 1) combine_partials();
  }

 private:
  void run_units(int64_t begin, int64_t end) {
    Array<Acc> acc, blk;
    if (inner_ > 1) {
      acc.resize(std::min(kColBlock, inner_));
      blk.resize(acc.size());
    }
    for (int64_t u = begin; u < end; ++u) {
      int64_t chunk = u / (outer_ * col_blocks_);
      int64_t rest = u % (outer_ * col_blocks_);
      int64_t o = rest / col_blocks_, cb = rest % col_blocks_;
      int64_t r0 = r_ * chunk / r_chunks_, r1 = r_ * (chunk + 1) / r_chunks_;
      const In* xo = x_ + o * r_ * inner_;
      if (inner_ == 1) {
        emit(chunk, o, reduce_row<Op>(xo, r0, r1));
        continue;
      }
      int64_t c0 = cb * kColBlock, w = std::min(kColBlock, inner_ - c0);
      reduce_rows<Op>(xo, inner_, r0, r1, c0, w, acc.data(), blk.data());
      for (int64_t j = 0; j < w; ++j) emit(chunk, o * inner_ + c0 + j, acc[j]);
    }
  }

  void emit(int64_t chunk, int64_t i, const Acc& a) {
    if (r_chunks_ == 1) y_[i] = Op::template store<Out>(a);
    else partial_[chunk * outer_ * inner_ + i] = a;
  }

  void combine_partials() {
    int64_t n = outer_ * inner_;
    parallel_for(n, kGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        Acc a = partial_[i];
        for (int64_t c = 1; c < r_chunks_; ++c) Op::merge(a, partial_[c * n + i]);
        y_[i] = Op::template store<Out>(a);
      }
    });
  }

  const In* x_;
  Out* y_;
  int64_t outer_, r_, inner_;
  int64_t col_blocks_ = 1, r_chunks_ = 1, work_ = 0;
  Array<Acc> partial_;
};

template <typename Op, typename In, typename Out>
void run_pass(const In* x, Out* y, int64_t outer, int64_t r, int64_t inner) {
  Pass<Op, In, Out>(x, y, outer, r, inner).run();
}

// A dim group after merging: its size and whether it is reduced.
struct Group {
  int64_t size;
  bool reduced;
};

std::vector<Group> coalesce(const Shape& shape, const std::vector<int64_t>& axes) {
  std::vector<Group> groups;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (shape[d] == 1) continue;
    bool reduced = std::binary_search(axes.begin(), axes.end(), d);
    if (!groups.empty() && groups.back().reduced == reduced) groups.back().size *= shape[d];
    else groups.push_back({shape[d], reduced});
  }
  return groups;
}

template <typename T>
const T* typed(const TensorData& t) { return static_cast<const T*>(t.raw_data()); }
template <typename T>
T* typed(TensorData& t) { return static_cast<T*>(t.raw_data()); }

// Value reductions over any set of axes, as a sequence of passes.
template <typename Op, typename T>
void reduce_value(const TensorData& in, TensorData& out, const std::vector<int64_t>& axes) {
  using V = typename Op::V;
  T* y = typed<T>(out);
  int64_t n_out = out.num_elements();
  if (in.num_elements() == 0) {
    std::fill(y, y + n_out, Op::template store<T>(Op::identity()));
    return;
  }
  std::vector<Group> groups = coalesce(in.shape(), axes);
  auto last_reduced = [&] {
    for (int64_t i = static_cast<int64_t>(groups.size()) - 1; i >= 0; --i)
      if (groups[i].reduced) return i;
    return int64_t{-1};
  };
  int64_t k = last_reduced();
  if (k < 0) {  // only size-1 dims (or none) reduced: the output is a copy
    const T* x = typed<T>(in);
    std::copy(x, x + n_out, y);
    return;
  }
  Array<V> cur, next;
  const T* x = typed<T>(in);
  bool first = true;
  while (k >= 0) {
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < k; ++i) outer *= groups[i].size;
    for (size_t i = k + 1; i < groups.size(); ++i) inner *= groups[i].size;
    int64_t r = groups[k].size;
    groups.erase(groups.begin() + k);
    // Re-merge the kept neighbours that are now adjacent.
    if (k > 0 && k < static_cast<int64_t>(groups.size()) && groups[k - 1].reduced == groups[k].reduced) {
      groups[k - 1].size *= groups[k].size;
      groups.erase(groups.begin() + k);
    }
    k = last_reduced();
    bool last = k < 0;
    if (!last) next.resize(outer * inner);
    if (first && last) run_pass<Op>(x, y, outer, r, inner);
    else if (first) run_pass<Op>(x, next.data(), outer, r, inner);
    else if (last) run_pass<Op>(cur.data(), y, outer, r, inner);
    else run_pass<Op>(cur.data(), next.data(), outer, r, inner);
    first = false;
    std::swap(cur, next);
  }
}

template <OpKind K, DTypeGroup G>
void value_kernel(KernelContext& ctx) {
  const auto& desc = std::get<ReduceDesc>(ctx.node.attrs);
  dispatch<G>(ctx.inputs[0].dtype(), ctx.op_name(), [&](auto tag) {
    using T = decltype(tag);
    reduce_value<ValueOp<K, T>, T>(ctx.inputs[0], ctx.outputs[0], desc.axes);
  });
}

template <OpKind K>
void arg_kernel(KernelContext& ctx) {
  const TensorData& in = ctx.inputs[0];
  const backends::ArgReduceGeometry geo = backends::arg_reduce_geometry(ctx);
  if (geo.outer * geo.inner == 0) return;
  dispatch<DTypeGroup::all>(in.dtype(), ctx.op_name(), [&](auto tag) {
    using T = decltype(tag);
    run_pass<ArgOp<K, T>>(typed<T>(in), typed<int64_t>(ctx.outputs[0]), geo.outer, geo.axis, geo.inner);
  });
}

}  // namespace

void register_reduce_kernels(KernelTable& t) {
  t.set(OpKind::reduce_sum, value_kernel<OpKind::reduce_sum, DTypeGroup::numeric>);
  t.set(OpKind::reduce_prod, value_kernel<OpKind::reduce_prod, DTypeGroup::numeric>);
  t.set(OpKind::reduce_max, value_kernel<OpKind::reduce_max, DTypeGroup::numeric>);
  t.set(OpKind::reduce_min, value_kernel<OpKind::reduce_min, DTypeGroup::numeric>);
  t.set(OpKind::reduce_and, value_kernel<OpKind::reduce_and, DTypeGroup::boolean>);
  t.set(OpKind::reduce_or, value_kernel<OpKind::reduce_or, DTypeGroup::boolean>);
  t.set(OpKind::argmax, arg_kernel<OpKind::argmax>);
  t.set(OpKind::argmin, arg_kernel<OpKind::argmin>);
}

}  // namespace tg::cpu
