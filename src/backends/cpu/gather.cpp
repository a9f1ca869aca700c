// CPU kernels of the gather family: gather, gather_nd, gather_elements, scatter_nd,
// scatter_elements. Every kernel first validates and normalizes all indices (raising
// tg::Error(out_of_range) before writing any output), then moves data. Gathers copy whole
// elements by size (any dtype) in parallel over output slices; scatters copy `data` in parallel
// and then apply the updates sequentially in row-major order (so with reduction none the last
// of repeated indices wins, deterministically).
#include <atomic>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>

#include "backends/gather_util.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/dispatch.h"
#include "backends/cpu/parallel.h"

namespace tg::cpu {
namespace {

using backends::check_element_shapes;
using backends::position;
using backends::product;



template <typename I>
const I* index_data(const TensorData& t) {
  return static_cast<const I*>(t.raw_data());
}

int64_t index_at(const TensorData& t, int64_t i) {
  return t.dtype() == DType::i32 ? index_data<int32_t>(t)[i] : index_data<int64_t>(t)[i];
}

// Lowers `m` to `v` when v is smaller (from any thread).
void store_min(std::atomic<int64_t>& m, int64_t v) {
  int64_t seen = m.load();
  while (v < seen && !m.compare_exchange_weak(seen, v)) continue;
}

/// Reads every index of `idx` (i32 or i64) as int64, checks it against the size of the dim it
/// addresses and maps negative values to value + size. Element i addresses dim
/// first_dim + i % sizes.size() of the operand `operand` (whose dims are `sizes` from first_dim
/// on). Raises tg::Error(out_of_range) for the first bad index in row-major order.
std::vector<int64_t> load_indices(const TensorData& idx, const char* op, const char* operand,
                                  const std::vector<int64_t>& sizes, int64_t first_dim) {
  if (idx.dtype() != DType::i32 && idx.dtype() != DType::i64) {
    fail(ErrorCode::dtype_mismatch, op, "indices must be i32 or i64, got {}",
         idx.type().to_string());
  }
  int64_t n = idx.num_elements();
  std::vector<int64_t> out(static_cast<size_t>(n));
  if (n == 0) return out;
  int64_t period = static_cast<int64_t>(sizes.size());
  TG_CHECK_INTERNAL(period > 0 && n % period == 0, "index period does not divide the indices");
  std::atomic<int64_t> first_bad{n};
  auto scan = [&](auto tag) {
    using I = decltype(tag);
    const I* p = index_data<I>(idx);
    parallel_for(n, kGrain, [&](int64_t begin, int64_t end) {
      int64_t k = begin % period;
      for (int64_t i = begin; i < end; ++i) {
        int64_t v = p[i], size = sizes[static_cast<size_t>(k)];
        if (v < -size || v >= size) return store_min(first_bad, i);
        out[static_cast<size_t>(i)] = v < 0 ? v + size : v;
        if (++k == period) k = 0;
      }
    });
  };
  if (idx.dtype() == DType::i32)
    scan(int32_t{});
  else
    scan(int64_t{});
  int64_t bad = first_bad.load();
  if (bad < n) {
    int64_t k = bad % period, size = sizes[static_cast<size_t>(k)];
    fail(ErrorCode::out_of_range, op,
         "index {} at indices position {} is out of range "
         "for dim {} of {} (size {}, valid [{}, {}))",
         index_at(idx, bad), position(idx.shape(), bad), first_dim + k, operand, size, -size, size);
  }
  return out;
}

/// Calls f(E{}) with E an unsigned integer type of `size` bytes, to move elements of any dtype.
template <typename F>
void by_element_size(size_t size, F&& f) {
  switch (size) {
    case 1:
      f(uint8_t{});
      break;
    case 2:
      f(uint16_t{});
      break;
    case 4:
      f(uint32_t{});
      break;
    case 8:
      f(uint64_t{});
      break;
    default:
      TG_CHECK_INTERNAL(false, "unexpected element size");
  }
}

/// Copies `rows` slices of `len` elements: slice r goes from src + src_offset(r) to dst + r * len.
template <typename E, typename Offset>
void copy_rows(const E* src, E* dst, int64_t rows, int64_t len, Offset src_offset) {
  if (len == 0) return;
  int64_t grain = std::max<int64_t>(1, kGrain / len);
  parallel_for(rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) std::copy_n(src + src_offset(r), len, dst + r * len);
  });
}

// Copies input 0 into output 0 (both the same type), in parallel for large tensors.
void copy_data(const TensorData& in, TensorData& out) {
  TG_CHECK_INTERNAL(in.nbytes() == out.nbytes(), "scatter output size differs from data");
  const auto* src = static_cast<const unsigned char*>(in.raw_data());
  auto* dst = static_cast<unsigned char*>(out.raw_data());
  int64_t n = static_cast<int64_t>(in.nbytes());
  parallel_for(n, kGrain * 8, [&](int64_t begin, int64_t end) {
    std::memcpy(dst + begin, src + begin, static_cast<size_t>(end - begin));
  });
}

// Row-major strides of `s` in elements.
std::vector<int64_t> strides_of(const Shape& s) { return row_major_strides(s); }

// ---------------------------------------------------------------------------------------------
// Gathers.

void gather_kernel(KernelContext& ctx) {
  const auto& a = std::get<GatherDesc>(ctx.node.attrs);
  const TensorData &x = ctx.inputs[0], &idx = ctx.inputs[1];
  TensorData& y = ctx.outputs[0];
  const Shape& xs = x.shape();
  auto axis = static_cast<size_t>(a.axis), bd = static_cast<size_t>(a.batch_dims);
  int64_t dim = xs[axis];
  std::vector<int64_t> ind = load_indices(idx, ctx.op_name(), "x", {dim}, a.axis);
  int64_t batch = product(xs, 0, bd), pre = product(xs, bd, axis),
          slice = product(xs, axis + 1, xs.size());
  int64_t per_batch = product(idx.shape(), bd, idx.shape().size());
  int64_t rows = batch * pre * per_batch;
  TG_CHECK_INTERNAL(rows * slice == y.num_elements(), "gather output size");
  by_element_size(dtype_size(x.dtype()), [&](auto tag) {
    using E = decltype(tag);
    copy_rows(static_cast<const E*>(x.raw_data()), static_cast<E*>(y.raw_data()), rows, slice,
              [&](int64_t r) {
                int64_t n = r % per_batch, bp = r / per_batch, b = bp / pre;
                return (bp * dim + ind[static_cast<size_t>(b * per_batch + n)]) * slice;
              });
  });
}

void gather_nd_kernel(KernelContext& ctx) {
  const auto& a = std::get<GatherNdDesc>(ctx.node.attrs);
  const TensorData &x = ctx.inputs[0], &idx = ctx.inputs[1];
  TensorData& y = ctx.outputs[0];
  const Shape &xs = x.shape(), &is = idx.shape();
  auto bd = static_cast<size_t>(a.batch_dims), k = static_cast<size_t>(is.back());
  std::vector<int64_t> sizes(xs.begin() + static_cast<std::ptrdiff_t>(bd),
                             xs.begin() + static_cast<std::ptrdiff_t>(bd + k));
  std::vector<int64_t> ind = sizes.empty()
                                 ? std::vector<int64_t>{}
                                 : load_indices(idx, ctx.op_name(), "x", sizes, a.batch_dims);
  int64_t batch = product(xs, 0, bd), tuples = product(is, bd, is.size() - 1);
  int64_t slice = product(xs, bd + k, xs.size()), batch_stride = product(xs, bd, xs.size());
  std::vector<int64_t> tuple_strides = strides_of(sizes);  // in slices
  TG_CHECK_INTERNAL(batch * tuples * slice == y.num_elements(), "gather_nd output size");
  by_element_size(dtype_size(x.dtype()), [&](auto tag) {
    using E = decltype(tag);
    copy_rows(static_cast<const E*>(x.raw_data()), static_cast<E*>(y.raw_data()), batch * tuples,
              slice, [&](int64_t r) {
                int64_t off = 0;
                for (size_t j = 0; j < k; ++j) off += ind[r * k + j] * tuple_strides[j];
                return (r / tuples) * batch_stride + off * slice;
              });
  });
}

/// Walks the elements of an indices tensor (shape `is`) row by row (rows of its last dim) and
/// calls f(i, target) for element i, where target is the flat offset in the operand (shape
/// `xs`) of the element it addresses along `axis` (with index ind[i], already normalized).
/// Rows are processed in parallel when `parallel`, else in row-major order.
template <typename F>
void for_each_element_target(const Shape& xs, const Shape& is, int64_t axis,
                             const std::vector<int64_t>& ind, bool parallel, F&& f) {
  int64_t n = num_elements(is);
  if (n == 0) return;
  size_t r = is.size(), ax = static_cast<size_t>(axis);
  std::vector<int64_t> xstr = strides_of(xs);
  int64_t len = is[r - 1], rows = n / len;
  int64_t inner = ax == r - 1 ? 0 : xstr[r - 1], axis_stride = xstr[ax];
  auto run_rows = [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      int64_t base = 0, rest = row;
      for (size_t d = r - 1; d-- > 0;) {
        int64_t c = rest % is[d];
        rest /= is[d];
        if (d != ax) base += c * xstr[d];
      }
      for (int64_t j = 0, i = row * len; j < len; ++j, ++i) {
        f(i, base + j * inner + ind[static_cast<size_t>(i)] * axis_stride);
      }
    }
  };
  if (parallel)
    parallel_for(rows, std::max<int64_t>(1, kGrain / len), run_rows);
  else
    run_rows(0, rows);
}


void gather_elements_kernel(KernelContext& ctx) {
  const auto& a = std::get<GatherElementsDesc>(ctx.node.attrs);
  const TensorData &x = ctx.inputs[0], &idx = ctx.inputs[1];
  TensorData& y = ctx.outputs[0];
  const Shape &xs = x.shape(), &is = idx.shape();
  check_element_shapes(xs, is, a.axis, ctx.op_name());
  TG_CHECK_INTERNAL(y.shape() == is, "gather_elements output shape");
  std::vector<int64_t> ind =
      load_indices(idx, ctx.op_name(), "x", {xs[static_cast<size_t>(a.axis)]}, a.axis);
  by_element_size(dtype_size(x.dtype()), [&](auto tag) {
    using E = decltype(tag);
    const E* src = static_cast<const E*>(x.raw_data());
    E* dst = static_cast<E*>(y.raw_data());
    for_each_element_target(xs, is, a.axis, ind, true,
                            [&](int64_t i, int64_t t) { dst[i] = src[t]; });
  });
}

// ---------------------------------------------------------------------------------------------
// Scatters.

/// Combines the value already in the output with an update. Integers wrap around (two's
/// complement); bool add/max is logical or, mul/min logical and; float min/max propagate NaN.
template <ScatterReduction R, typename T>
T combine(T old, T upd) {
  if constexpr (R == ScatterReduction::none) {
    return upd;
  } else if constexpr (std::is_same_v<T, bool>) {
    return (R == ScatterReduction::add || R == ScatterReduction::max) ? (old || upd) : (old && upd);
  } else if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    if constexpr (R == ScatterReduction::add)
      return static_cast<T>(static_cast<U>(static_cast<U>(old) + static_cast<U>(upd)));
    if constexpr (R == ScatterReduction::mul)
      return static_cast<T>(static_cast<U>(static_cast<U>(old) * static_cast<U>(upd)));
    if constexpr (R == ScatterReduction::min) return upd < old ? upd : old;
    return upd > old ? upd : old;
  } else {
    using C = compute_t<T>;
    C a = static_cast<C>(old), b = static_cast<C>(upd);
    if constexpr (R == ScatterReduction::add) return static_cast<T>(a + b);
    if constexpr (R == ScatterReduction::mul) return static_cast<T>(a * b);
    if (std::isnan(a)) return old;
    if (std::isnan(b)) return upd;
    if constexpr (R == ScatterReduction::min) return b < a ? upd : old;
    return b > a ? upd : old;
  }
}

/// Calls f(T{}, integral_constant<ScatterReduction, R>{}): with reduction none, T is an unsigned
/// type of the element size (pure data movement, every dtype); otherwise the storage type.
template <typename F>
void dispatch_scatter(DType dtype, ScatterReduction r, const char* op, F&& f) {
  using SR = ScatterReduction;
  auto typed = [&](auto red) {
    dispatch<DTypeGroup::all>(dtype, op, [&](auto tag) { f(tag, red); });
  };
  switch (r) {
    case SR::none:
      by_element_size(dtype_size(dtype),
                      [&](auto tag) { f(tag, std::integral_constant<SR, SR::none>{}); });
      break;
    case SR::add:
      typed(std::integral_constant<SR, SR::add>{});
      break;
    case SR::mul:
      typed(std::integral_constant<SR, SR::mul>{});
      break;
    case SR::min:
      typed(std::integral_constant<SR, SR::min>{});
      break;
    case SR::max:
      typed(std::integral_constant<SR, SR::max>{});
      break;
    default:
      fail(ErrorCode::invalid_argument, op, "unknown reduction {}", static_cast<int>(r));
  }
}

void scatter_nd_kernel(KernelContext& ctx) {
  const auto& a = std::get<ScatterNdDesc>(ctx.node.attrs);
  const TensorData &data = ctx.inputs[0], &idx = ctx.inputs[1], &upd = ctx.inputs[2];
  TensorData& y = ctx.outputs[0];
  const Shape &ds = data.shape(), &is = idx.shape();
  auto k = static_cast<size_t>(is.back());
  TG_CHECK_INTERNAL(k <= ds.size(), "scatter_nd index depth");
  std::vector<int64_t> sizes(ds.begin(), ds.begin() + static_cast<std::ptrdiff_t>(k));
  std::vector<int64_t> ind =
      sizes.empty() ? std::vector<int64_t>{} : load_indices(idx, ctx.op_name(), "data", sizes, 0);
  int64_t tuples = product(is, 0, is.size() - 1), slice = product(ds, k, ds.size());
  TG_CHECK_INTERNAL(tuples * slice == upd.num_elements(), "scatter_nd updates size");
  std::vector<int64_t> tuple_strides = strides_of(sizes);
  copy_data(data, y);
  dispatch_scatter(data.dtype(), a.reduction, ctx.op_name(), [&](auto tag, auto red) {
    using T = decltype(tag);
    const T* u = static_cast<const T*>(upd.raw_data());
    T* out = static_cast<T*>(y.raw_data());
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t off = 0;
      for (size_t j = 0; j < k; ++j) off += ind[t * k + j] * tuple_strides[j];
      T* dst = out + off * slice;
      const T* src = u + t * slice;
      for (int64_t s = 0; s < slice; ++s) dst[s] = combine<decltype(red)::value>(dst[s], src[s]);
    }
  });
}

void scatter_elements_kernel(KernelContext& ctx) {
  const auto& a = std::get<ScatterElementsDesc>(ctx.node.attrs);
  const TensorData &data = ctx.inputs[0], &idx = ctx.inputs[1], &upd = ctx.inputs[2];
  TensorData& y = ctx.outputs[0];
  const Shape &ds = data.shape(), &is = idx.shape();
  check_element_shapes(ds, is, a.axis, ctx.op_name());
  TG_CHECK_INTERNAL(upd.shape() == is, "scatter_elements updates shape");
  std::vector<int64_t> ind =
      load_indices(idx, ctx.op_name(), "data", {ds[static_cast<size_t>(a.axis)]}, a.axis);
  copy_data(data, y);
  dispatch_scatter(data.dtype(), a.reduction, ctx.op_name(), [&](auto tag, auto red) {
    using T = decltype(tag);
    const T* u = static_cast<const T*>(upd.raw_data());
    T* out = static_cast<T*>(y.raw_data());
    for_each_element_target(ds, is, a.axis, ind, false, [&](int64_t i, int64_t t) {
      out[t] = combine<decltype(red)::value>(out[t], u[i]);
    });
  });
}

}  // namespace

void register_gather_kernels(KernelTable& t) {
  t.set(ir::OpKind::gather, gather_kernel);
  t.set(ir::OpKind::gather_nd, gather_nd_kernel);
  t.set(ir::OpKind::gather_elements, gather_elements_kernel);
  t.set(ir::OpKind::scatter_nd, scatter_nd_kernel);
  t.set(ir::OpKind::scatter_elements, scatter_elements_kernel);
}

}  // namespace tg::cpu
