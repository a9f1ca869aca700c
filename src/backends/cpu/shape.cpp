// CPU kernels of the shape / data-movement family. They move raw elements (any dtype, copied by
// element size): broadcast_to, transpose, slice, reverse and tile are all strided views of their
// input (an offset and one source stride per output dim, 0 for a broadcast dim, negative for a
// reversed one), copied by one routine; reshape returns a view of its input; pad and concat have
// their own loops.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <type_traits>

#include "ops/boundary.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/strided_view.h"
#include "backends/cpu/parallel.h"
#include "core/convert.h"
#include "core/error_util.h"

namespace tg::cpu {
namespace {

/// Calls f(std::integral_constant<size_t, E>) with E the element size of `dtype`.
template <typename F>
void by_element_size(DType dtype, F&& f) {
  switch (dtype_size(dtype)) {
    case 1:
      f(std::integral_constant<size_t, 1>{});
      break;
    case 2:
      f(std::integral_constant<size_t, 2>{});
      break;
    case 4:
      f(std::integral_constant<size_t, 4>{});
      break;
    case 8:
      f(std::integral_constant<size_t, 8>{});
      break;
    default:
      TG_CHECK_INTERNAL(false, "unexpected element size");
  }
}

// ---- strided views ---------------------------------------------------------------------------

using View = backends::StridedView;
using backends::simplify;

/// An unsigned integer of E bytes that may alias any element type: kernels move elements as
/// words of their size (bool, f16, f32, i64, ... all alike).
template <size_t E>
struct word_of;
template <>
struct word_of<1> {
  using type = uint8_t;
};
template <>
struct word_of<2> {
  using type = uint16_t;
};
template <>
struct word_of<4> {
  using type = uint32_t;
};
template <>
struct word_of<8> {
  using type = uint64_t;
};
template <size_t E>
using word_t [[gnu::may_alias]] = typename word_of<E>::type;

/// Copies n elements read with source stride `stride` into contiguous dst.
template <size_t E>
void copy_run(const std::byte* src, std::byte* dst, int64_t n, int64_t stride) {
  using W = word_t<E>;
  const W* s = reinterpret_cast<const W*>(src);
  W* d = reinterpret_cast<W*>(dst);
  if (stride == 1) {
    std::memcpy(dst, src, static_cast<size_t>(n) * E);
  } else if (stride == 0) {
    std::fill(d, d + n, *s);
  } else if (stride == -1) {
    for (int64_t i = 0; i < n; ++i) d[i] = s[-i];
  } else {
    for (int64_t i = 0; i < n; ++i) d[i] = s[i * stride];
  }
}

/// Source offset of the first element of `row` (row-major index over all dims but the last).
int64_t row_offset(const View& v, int64_t row, std::vector<int64_t>& idx) {
  int64_t off = v.offset;
  for (int64_t d = static_cast<int64_t>(v.shape.size()) - 2; d >= 0; --d) {
    idx[d] = row % v.shape[d];
    row /= v.shape[d];
    off += idx[d] * v.strides[d];
  }
  return off;
}

/// Copies row by row: the innermost dim is a run (memcpy when contiguous); parallel over rows.
template <size_t E>
void copy_rows(const std::byte* src, std::byte* dst, const View& v) {
  const int64_t rank = static_cast<int64_t>(v.shape.size());
  const int64_t inner = v.shape.back(), stride = v.strides.back();
  const int64_t rows = num_elements(v.shape) / inner;
  parallel_for(rows, std::max<int64_t>(1, kGrain / inner), [&](int64_t begin, int64_t end) {
    std::vector<int64_t> idx(static_cast<size_t>(rank), 0);
    int64_t off = row_offset(v, begin, idx);
    for (int64_t row = begin; row < end; ++row) {
      copy_run<E>(src + off * static_cast<int64_t>(E), dst + row * inner * static_cast<int64_t>(E),
                  inner, stride);
      for (int64_t d = rank - 2; d >= 0; --d) {  // advance the odometer over the outer dims
        off += v.strides[d];
        if (++idx[d] < v.shape[d]) break;
        off -= v.strides[d] * v.shape[d];
        idx[d] = 0;
      }
    }
  });
}

/// Transposes in square tiles through a small buffer: output dim q reads the source contiguously
/// (stride 1) and the innermost output dim is written contiguously, so both the reads and the
/// writes are whole cache lines (no cache-set aliasing for power-of-two strides).
template <size_t E>
void copy_tiled(const std::byte* src, std::byte* dst, const View& v, size_t q) {
  using W = word_t<E>;
  constexpr int64_t kTile = E == 8 ? 32 : 64;  // the buffer is 8 or 16 KiB
  const size_t last = v.shape.size() - 1;
  const std::vector<int64_t> out_strides = row_major_strides(v.shape);
  const int64_t nq = v.shape[q], nl = v.shape[last], sl = v.strides[last], dq = out_strides[q];
  const int64_t tq = (nq + kTile - 1) / kTile, tl = (nl + kTile - 1) / kTile;
  const int64_t outer = num_elements(v.shape) / (nq * nl);
  const W* in = reinterpret_cast<const W*>(src);
  W* out = reinterpret_cast<W*>(dst);
  parallel_for(
      outer * tq * tl, std::max<int64_t>(1, kGrain / (kTile * kTile)), [&](int64_t b, int64_t end) {
        W buf[kTile][kTile];
        for (int64_t task = b; task < end; ++task) {
          // q tiles vary fastest: a band of source rows is read to its end before the next band
          // (its lines and pages stay cached).
          int64_t rest = task / (tq * tl), l0 = (task / tq % tl) * kTile, q0 = (task % tq) * kTile;
          int64_t src_base = v.offset, dst_base = 0;
          for (int64_t d = static_cast<int64_t>(last) - 1; d >= 0; --d) {
            if (static_cast<size_t>(d) == q) continue;
            int64_t i = rest % v.shape[d];
            rest /= v.shape[d];
            src_base += i * v.strides[d];
            dst_base += i * out_strides[d];
          }
          const int64_t nq_t = std::min(nq - q0, kTile), nl_t = std::min(nl - l0, kTile);
          for (int64_t il = 0; il < nl_t; ++il) {  // contiguous source rows
            const W* s = in + src_base + q0 + (l0 + il) * sl;
            for (int64_t iq = 0; iq < nq_t; ++iq) buf[iq][il] = s[iq];
          }
          for (int64_t iq = 0; iq < nq_t; ++iq) {  // contiguous destination rows
            std::memcpy(out + dst_base + (q0 + iq) * dq + l0, buf[iq],
                        static_cast<size_t>(nl_t) * E);
          }
        }
      });
}

/// Writes the view of `in` into `out` (same dtype, out has the view's shape).
void copy_view(const TensorData& in, TensorData& out, const View& view) {
  if (out.num_elements() == 0) return;
  const View v = simplify(view);
  const auto* src = static_cast<const std::byte*>(in.raw_data());
  auto* dst = static_cast<std::byte*>(out.raw_data());
  const int64_t last_stride = v.strides.back();
  size_t q = v.shape.size();
  if (last_stride != 0 && last_stride != 1) {
    for (size_t i = 0; i + 1 < v.shape.size(); ++i) {
      if (v.strides[i] == 1) q = i;
    }
  }
  by_element_size(in.dtype(), [&](auto e) {
    if (q < v.shape.size()) {
      copy_tiled<decltype(e)::value>(src, dst, v, q);
    } else {
      copy_rows<decltype(e)::value>(src, dst, v);
    }
  });
}

// broadcast_to, transpose, slice, reverse and tile: a copy of the op's strided view of its input
// (a slice of one contiguous block is that block itself: backends::bind_slice_view).
void view_kernel(KernelContext& ctx) {
  if (ctx.node.kind == ir::OpKind::slice && backends::bind_slice_view(ctx)) return;
  if (std::optional<View> v = backends::view_of(ctx)) copy_view(ctx.inputs[0], ctx.outputs[0], *v);
}

void reshape_kernel(KernelContext& ctx) {
  ctx.outputs[0] = ctx.inputs[0].reshaped(ctx.node.outputs[0].shape);  // a view: no copy
}

// ---- concat ------------------------------------------------------------------------------------

/// Each output row (the dims before axis) is the inputs' rows one after another: one memcpy each.
void concat_kernel(KernelContext& ctx) {
  TensorData& out = ctx.outputs[0];
  const size_t axis = static_cast<size_t>(std::get<ir::ConcatAttrs>(ctx.node.attrs).axis);
  const Shape& shape = out.shape();
  const int64_t esize = static_cast<int64_t>(dtype_size(out.dtype()));
  int64_t outer = 1;
  for (size_t i = 0; i < axis; ++i) outer *= shape[i];
  const int64_t out_row = outer == 0 ? 0 : out.num_elements() / outer * esize;  // bytes
  std::vector<int64_t> in_row, dst_offset;                                      // bytes
  int64_t at = 0;
  for (const TensorData& x : ctx.inputs) {
    TG_CHECK_INTERNAL(x.dtype() == out.dtype() && x.rank() == out.rank(), "concat input type");
    in_row.push_back(outer == 0 ? 0 : x.num_elements() / outer * esize);
    dst_offset.push_back(at);
    at += in_row.back();
  }
  TG_CHECK_INTERNAL(at == out_row, "concat inputs do not fill the output");
  if (out_row == 0) return;
  auto* dst = static_cast<std::byte*>(out.raw_data());
  parallel_for(outer, std::max<int64_t>(1, kGrain * 4 / out_row), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      for (size_t k = 0; k < ctx.inputs.size(); ++k) {
        if (in_row[k] == 0) continue;
        const auto* src = static_cast<const std::byte*>(ctx.inputs[k].raw_data());
        std::memcpy(dst + r * out_row + dst_offset[k], src + r * in_row[k],
                    static_cast<size_t>(in_row[k]));
      }
    }
  });
}

// ---- pad ---------------------------------------------------------------------------------------

/// The input index that output position p (relative to the input's start, any distance outside
/// [0, dim)) reads, or -1 for the constant (see ops::boundary_index).
int64_t source_index(int64_t p, int64_t dim, PadMode mode) {
  return ops::boundary_index(p, dim, ops::boundary_of(mode));
}

struct PadPlan {
  std::vector<std::vector<int64_t>> maps;  ///< per dim: input index for each output index, or -1
  std::vector<int64_t> in_strides;
  Shape out_shape;
  int64_t before_last = 0, dim_last = 0;
};

PadPlan plan_pad(const TensorData& x, const PadDesc& p, const Shape& out, const char* op) {
  PadPlan plan{{}, row_major_strides(x.shape()), out, 0, 0};
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t dim = x.shape()[i];
    const bool padded = p.before[i] > 0 || p.after[i] > 0;
    if (padded && p.mode != PadMode::constant && dim < (p.mode == PadMode::reflect ? 2 : 1)) {
      fail(ErrorCode::invalid_argument, op, "dim {} of {} is too small for this padding mode", i,
           str(x.shape()));
    }
    std::vector<int64_t> map(static_cast<size_t>(out[i]));
    for (int64_t o = 0; o < out[i]; ++o)
      map[static_cast<size_t>(o)] = source_index(o - p.before[i], dim, p.mode);
    plan.maps.push_back(std::move(map));
  }
  plan.before_last = p.before.back();
  plan.dim_last = x.shape().back();
  return plan;
}

/// Fills one output row (the innermost dim); src_row is the input row it reads or null when the
/// whole row is padding.
template <size_t E>
void pad_row(const PadPlan& plan, const std::byte* src_row, std::byte* dst,
             const std::byte* value) {
  const std::vector<int64_t>& map = plan.maps.back();
  const int64_t n = static_cast<int64_t>(map.size()), e = static_cast<int64_t>(E);
  const int64_t mid0 = plan.before_last, mid1 = plan.before_last + plan.dim_last;
  for (int64_t o = 0; o < n; ++o) {
    if (src_row && o == mid0 && plan.dim_last > 0) {  // the input row itself: one memcpy
      std::memcpy(dst + o * e, src_row, static_cast<size_t>(plan.dim_last * e));
      o = mid1 - 1;
      continue;
    }
    const int64_t m = src_row ? map[static_cast<size_t>(o)] : -1;
    std::memcpy(dst + o * e, m < 0 ? value : src_row + m * e, E);
  }
}

template <size_t E>
void pad_copy(const TensorData& x, TensorData& y, const PadPlan& plan, const std::byte* value) {
  const auto* src = static_cast<const std::byte*>(x.raw_data());
  auto* dst = static_cast<std::byte*>(y.raw_data());
  const int64_t rank = static_cast<int64_t>(plan.out_shape.size());
  const int64_t inner = plan.out_shape.back(), e = static_cast<int64_t>(E);
  const int64_t rows = y.num_elements() / inner;
  parallel_for(rows, std::max<int64_t>(1, kGrain / inner), [&](int64_t b, int64_t end) {
    for (int64_t row = b; row < end; ++row) {
      int64_t rest = row, off = 0;
      bool inside = true;
      for (int64_t d = rank - 2; d >= 0 && inside; --d) {
        const int64_t m = plan.maps[d][static_cast<size_t>(rest % plan.out_shape[d])];
        rest /= plan.out_shape[d];
        inside = m >= 0;
        off += m * plan.in_strides[d];
      }
      pad_row<E>(plan, inside ? src + off * e : nullptr, dst + row * inner * e, value);
    }
  });
}

void pad_kernel(KernelContext& ctx) {
  const TensorData& x = ctx.inputs[0];
  TensorData& y = ctx.outputs[0];
  const PadDesc& p = std::get<PadDesc>(ctx.node.attrs);
  if (y.num_elements() == 0) return;
  if (x.rank() == 0) {
    std::memcpy(y.raw_data(), x.raw_data(), dtype_size(x.dtype()));
    return;
  }
  const PadPlan plan = plan_pad(x, p, y.shape(), ctx.op_name());
  alignas(8) std::byte value[8] = {};
  store_from_double(x.dtype(), value, 0, p.value);  // the builder checked that it fits
  by_element_size(x.dtype(), [&](auto e) { pad_copy<decltype(e)::value>(x, y, plan, value); });
}

}  // namespace

void register_shape_kernels(KernelTable& t) {
  using K = ir::OpKind;
  t.set(K::broadcast_to, view_kernel);
  t.set(K::reshape, reshape_kernel);
  t.set(K::transpose, view_kernel);
  t.set(K::slice, view_kernel);
  t.set(K::pad, pad_kernel);
  t.set(K::concat, concat_kernel);
  t.set(K::reverse, view_kernel);
  t.set(K::tile, view_kernel);
}

}  // namespace tg::cpu
