// The shape / data-movement op family: shape rules and builders (broadcast_to, reshape, transpose,
// slice, pad, concat, reverse, tile) and the composites split, expand_dims and squeeze.
#include <algorithm>
#include <limits>
#include <numeric>

#include "core/dim_expr.h"
#include "ir/symbolic_count.h"
#include "ops/builder.h"

namespace tg {

namespace ops {

// Python slice.indices() for one dim of known size: the first index read and the number of
// elements. kSliceEnd as `end` means "to the end of the dim" in the direction of `stride` (so,
// for a negative stride, through index 0, like Python's None). Also used by the CPU kernel.
void resolve_slice_dim(int64_t begin, int64_t end, int64_t stride, int64_t dim, int64_t* start,
                       int64_t* length) {
  const bool forward = stride > 0;
  const int64_t lower = forward ? 0 : -1, upper = forward ? dim : dim - 1;
  auto clamp = [&](int64_t v) {
    if (v < 0) v = v < -dim ? lower : v + dim;  // written to avoid overflow for huge |v|
    return std::clamp(v, lower, upper);
  };
  int64_t b = clamp(begin);
  int64_t e = (end == kSliceEnd) ? (forward ? upper : lower) : clamp(end);
  // |stride| as unsigned so that stride == INT64_MIN does not overflow.
  uint64_t step = forward ? static_cast<uint64_t>(stride) : 0 - static_cast<uint64_t>(stride);
  uint64_t span = forward ? static_cast<uint64_t>(e - b) : static_cast<uint64_t>(b - e);
  bool empty = forward ? e <= b : b <= e;
  *start = b;
  *length = empty ? 0 : static_cast<int64_t>((span - 1) / step + 1);
}

std::optional<int64_t> slice_view_offset(const ir::Node& node) {
  if (node.kind != ir::OpKind::slice || node.outputs.size() != 1) return std::nullopt;
  const TensorType& out = node.outputs[0];
  if (!is_static(out.shape) || num_elements(out.shape) == 0) return std::nullopt;
  const SliceDesc& d = std::get<SliceDesc>(node.attrs);
  if (d.axes.size() != 1 || d.begin.size() != 1 || d.strides.size() != 1 || d.strides[0] != 1 || d.begin[0] < 0) {
    return std::nullopt;
  }
  const auto axis = static_cast<size_t>(d.axes[0]);
  if (axis >= out.shape.size()) return std::nullopt;
  for (size_t i = 0; i < axis; ++i) {
    if (out.shape[i] != 1) return std::nullopt;
  }
  int64_t row = static_cast<int64_t>(dtype_size(out.dtype));  // bytes of one index along the axis
  for (size_t i = axis + 1; i < out.shape.size(); ++i) row *= out.shape[i];
  const int64_t offset = d.begin[0] * row;
  if (offset % kSliceViewAlignment != 0) return std::nullopt;
  return offset;
}


}  // namespace ops

namespace {

using ir::OpKind;

std::string types_str(std::span<const TensorType> types) {
  std::string s;
  for (size_t i = 0; i < types.size(); ++i) s += (i ? ", " : "") + str(types[i].shape);
  return s;
}

/// a * b for dims (>= 0); raises tg::Error(invalid_argument) on overflow.
int64_t checked_mul(int64_t a, int64_t b, std::string_view op) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    fail(ErrorCode::invalid_argument, op, "size {} x {} overflows", a, b);
  return r;
}

int64_t checked_add(int64_t a, int64_t b, std::string_view op) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    fail(ErrorCode::invalid_argument, op, "size {} + {} overflows", a, b);
  return r;
}

/// "[2,-1,seq]": a shape as the user wrote it (str() would print -1 as "?"; symbols by name).
std::string raw(const Shape& s) {
  std::vector<std::string> dims;
  for (int64_t d : s) dims.push_back(d >= -1 ? std::to_string(d) : dim_name(d));
  return fmt::format("[{}]", fmt::join(dims, ","));
}

/// The type of a builder's tensor argument; raises tg::Error(invalid_argument) naming `op` for an
/// empty Tensor (before the builder reads its rank).
TensorType arg_type(const Tensor& x, std::string_view op, size_t index = 0) {
  if (!x.valid()) fail(ErrorCode::invalid_argument, op, "input {} is an empty Tensor", index);
  return x.type();
}

// ---- type inference --------------------------------------------------------------------------

std::vector<TensorType> infer_broadcast_to(const ir::Node& node, std::span<const TensorType> in) {
  const Shape& target = std::get<ir::BroadcastAttrs>(node.attrs).shape;
  const Shape& x = in[0].shape;
  auto mismatch = [&] {
    fail(ErrorCode::shape_mismatch, "broadcast_to", "cannot broadcast {} to {}", str(x),
         raw(target));
  };
  if (x.size() > target.size()) mismatch();
  const size_t lead = target.size() - x.size();
  Shape out = target;
  for (size_t i = 0; i < target.size(); ++i) {
    int64_t t = target[i];
    if ((t < -1 && !is_symbolic_dim(t)) || (t == -1 && i < lead)) {
      fail(ErrorCode::invalid_argument, "broadcast_to",
           "target shape {} has an invalid dim {} at {} (-1 only where x has a dim)", raw(target),
           t, i);
    }
    if (i < lead) continue;
    int64_t d = x[i - lead];
    if (t == -1) {
      out[i] = d;
    } else if (d != 1 && !ops::unify_dims(t, d, out[i])) {
      mismatch();
    } else if (d == 1) {
      out[i] = t;
    }
  }
  return {{out, in[0].dtype}};
}

std::vector<TensorType> infer_reshape(const ir::Node& node, std::span<const TensorType> in) {
  const Shape& target = std::get<ir::ReshapeAttrs>(node.attrs).shape;
  const Shape& x = in[0].shape;
  int64_t infer_at = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] < -1 && !is_symbolic_dim(target[i])) {
      fail(ErrorCode::invalid_argument, "reshape", "shape {} has an invalid dim {}", raw(target), target[i]);
    }
    if (target[i] != -1) continue;
    if (infer_at >= 0) {
      fail(ErrorCode::invalid_argument, "reshape", "shape {} has more than one -1", raw(target));
    }
    infer_at = static_cast<int64_t>(i);
  }
  // Symbols (tg::symbolic_dim) in the target stand for their sizes; -1 is the one dim to infer.
  const ir::SymbolicCount known = ir::symbolic_count(target, infer_at);
  const ir::SymbolicCount n = ir::symbolic_count(x);
  if (known.coef == INT64_MAX) fail(ErrorCode::invalid_argument, "reshape", "shape {} overflows", raw(target));
  Shape out = target;
  if (n.is_static() && known.is_static()) {
    if (infer_at < 0) {
      if (n.coef != known.coef) {
        fail(ErrorCode::shape_mismatch, "reshape",
             "cannot reshape {} ({} elements) to {} ({} elements)", str(x), n.coef, raw(target), known.coef);
      }
    } else {
      if (known.coef == 0) {
        fail(ErrorCode::invalid_argument, "reshape",
             "cannot infer the -1 of {} for {}: the other dims have no elements", raw(target), str(x));
      }
      if (n.coef % known.coef != 0) {
        fail(ErrorCode::shape_mismatch, "reshape", "cannot reshape {} ({} elements) to {}", str(x), n.coef,
             raw(target));
      }
      out[static_cast<size_t>(infer_at)] = n.coef / known.coef;
    }
  } else if (infer_at < 0 && !n.unknown && n.symbols == known.symbols && n.coef != known.coef) {
    // Symbols are sizes >= 1 (as in JAX's shape polymorphism): 12 x b x s never equals 5 x b x s.
    fail(ErrorCode::shape_mismatch, "reshape", "cannot reshape {} to {}: {} elements against {}", str(x), raw(target),
         n.coef, known.coef);
  } else if (infer_at >= 0 && !n.unknown && known.coef != 0 && n.coef % known.coef == 0 &&
             std::includes(n.symbols.begin(), n.symbols.end(), known.symbols.begin(), known.symbols.end())) {
    // Symbolic: [b, s, 768] to [-1, s, 12, 64] infers b. A rest of several symbols, or of a
    // symbol times a size, stays -1 (known at run time).
    std::vector<int64_t> rest;
    std::set_difference(n.symbols.begin(), n.symbols.end(), known.symbols.begin(), known.symbols.end(),
                        std::back_inserter(rest));
    const int64_t coef = n.coef / known.coef;
    int64_t& d = out[static_cast<size_t>(infer_at)];
    d = rest.empty() ? coef : (rest.size() == 1 && coef == 1 ? rest[0] : -1);
  }
  return {{out, in[0].dtype}};
}

/// Raises tg::Error(invalid_argument) unless `perm` is a permutation of 0..rank-1; the message
/// shows `given` (the perm as the user wrote it).
void check_permutation(const std::vector<int64_t>& perm, int64_t rank,
                       const std::vector<int64_t>& given) {
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  bool ok = static_cast<int64_t>(perm.size()) == rank;
  for (size_t i = 0; ok && i < perm.size(); ++i) {
    ok = perm[i] >= 0 && perm[i] < rank && !seen[static_cast<size_t>(perm[i])];
    if (ok) seen[static_cast<size_t>(perm[i])] = true;
  }
  if (!ok) {
    fail(ErrorCode::invalid_argument, "transpose", "perm [{}] is not a permutation of the {} dims",
         fmt::join(given, ","), rank);
  }
}

std::vector<TensorType> infer_transpose(const ir::Node& node, std::span<const TensorType> in) {
  const auto& perm = std::get<ir::TransposeAttrs>(node.attrs).perm;
  check_permutation(perm, in[0].rank(), perm);
  Shape out(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) out[i] = in[0].shape[static_cast<size_t>(perm[i])];
  return {{out, in[0].dtype}};
}

std::vector<TensorType> infer_slice(const ir::Node& node, std::span<const TensorType> in) {
  const SliceDesc& d = std::get<SliceDesc>(node.attrs);
  Shape out = in[0].shape;
  TG_CHECK_INTERNAL(d.begin.size() == d.axes.size() && d.end.size() == d.axes.size() &&
                        d.strides.size() == d.axes.size(),
                    "slice attributes are not normalized");
  for (size_t i = 0; i < d.axes.size(); ++i) {
    int64_t axis = d.axes[i];
    TG_CHECK_INTERNAL(axis >= 0 && axis < in[0].rank() && d.strides[i] != 0,
                      "bad slice attributes");
    int64_t dim = in[0].shape[static_cast<size_t>(axis)];
    if (dim < 0) {  // dynamic, or a symbol: from begin >= 0 to the end or to -m with a positive
      // stride, ceil((s - m - begin) / stride) while s >= begin + m (core/dim_expr.h); else -1
      constexpr int64_t kToEnd = int64_t{1} << 62;
      const int64_t b = d.begin[i], e = d.end[i], k = d.strides[i];
      const bool form = k > 0 && b >= 0 && b < kToEnd && (e >= kToEnd || (e < 0 && e > -kToEnd));
      const int64_t m = e >= kToEnd ? 0 : -e;
      out[static_cast<size_t>(axis)] = form ? core::affine_dim(dim, 1, k - 1 - m - b, k, b + m) : -1;
      continue;
    }
    int64_t start = 0;
    ops::resolve_slice_dim(d.begin[i], d.end[i], d.strides[i], dim, &start,
                           &out[static_cast<size_t>(axis)]);
  }
  return {{out, in[0].dtype}};
}

std::string_view pad_mode_str(PadMode m) {
  switch (m) {
    case PadMode::constant:
      return "constant";
    case PadMode::reflect:
      return "reflect";
    case PadMode::symmetric:
      return "symmetric";
    case PadMode::edge:
      return "edge";
    case PadMode::periodic:
      return "periodic";
  }
  return "?";
}

std::vector<TensorType> infer_pad(const ir::Node& node, std::span<const TensorType> in) {
  const PadDesc& p = std::get<PadDesc>(node.attrs);
  const Shape& x = in[0].shape;
  if (p.before.size() != x.size() || p.after.size() != x.size()) {
    fail(ErrorCode::invalid_argument, "pad",
         "before [{}] and after [{}] need one entry per dim of {}", fmt::join(p.before, ","),
         fmt::join(p.after, ","), str(x));
  }
  Shape out = x;
  for (size_t i = 0; i < x.size(); ++i) {
    if (p.before[i] < 0 || p.after[i] < 0) {
      fail(ErrorCode::invalid_argument, "pad", "negative padding (before [{}], after [{}])",
           fmt::join(p.before, ","), fmt::join(p.after, ","));
    }
    bool padded = p.before[i] > 0 || p.after[i] > 0;
    if (padded && x[i] >= 0 && p.mode != PadMode::constant &&
        x[i] < (p.mode == PadMode::reflect ? 2 : 1)) {
      fail(ErrorCode::invalid_argument, "pad", "{} padding of dim {} needs size >= {}, input is {}",
           pad_mode_str(p.mode), i, p.mode == PadMode::reflect ? 2 : 1, str(x));
    }
    if (x[i] >= 0) out[i] = checked_add(checked_add(x[i], p.before[i], "pad"), p.after[i], "pad");
    else if (padded) out[i] = core::affine_dim(x[i], 1, p.before[i] + p.after[i], 1);  // s + pads
  }
  return {{out, in[0].dtype}};
}

std::vector<TensorType> infer_concat(const ir::Node& node, std::span<const TensorType> in) {
  const int64_t axis = std::get<ir::ConcatAttrs>(node.attrs).axis;
  ops::check_same_dtype(in, "concat");
  const int64_t rank = in[0].rank();
  Shape out = in[0].shape;
  for (size_t k = 0; k < in.size(); ++k) {
    if (in[k].rank() != rank) {
      fail(ErrorCode::shape_mismatch, "concat", "input {} has rank {}, expected {} (inputs {})", k,
           in[k].rank(), rank, types_str(in));
    }
  }
  if (axis < 0 || axis >= rank) {
    fail(ErrorCode::invalid_argument, "concat", "axis {} is out of range for rank {}", axis, rank);
  }
  for (size_t k = 1; k < in.size(); ++k) {
    for (int64_t i = 0; i < rank; ++i) {
      int64_t d = in[k].shape[static_cast<size_t>(i)];
      int64_t& o = out[static_cast<size_t>(i)];
      if (i == axis) {
        o = (o < 0 || d < 0) ? core::add_dims(o, d) : checked_add(o, d, "concat");
      } else if (!ops::unify_dims(o, d, o)) {
        fail(ErrorCode::shape_mismatch, "concat",
             "dim {} of input {} is {}, expected {} (inputs {})", i, k, d, o, types_str(in));
      }
    }
  }
  return {{out, in[0].dtype}};
}

std::vector<TensorType> infer_reverse(const ir::Node& node, std::span<const TensorType> in) {
  for (int64_t a : std::get<ir::ReverseAttrs>(node.attrs).axes) {
    TG_CHECK_INTERNAL(a >= 0 && a < in[0].rank(), "reverse axes are not normalized");
  }
  return {in[0]};
}

std::vector<TensorType> infer_tile(const ir::Node& node, std::span<const TensorType> in) {
  const auto& m = std::get<ir::TileAttrs>(node.attrs).multiples;
  const Shape& x = in[0].shape;
  if (m.size() != x.size()) {
    fail(ErrorCode::invalid_argument, "tile", "multiples [{}] need one entry per dim of {}",
         fmt::join(m, ","), str(x));
  }
  Shape out = x;
  for (size_t i = 0; i < x.size(); ++i) {
    if (m[i] < 0)
      fail(ErrorCode::invalid_argument, "tile", "multiples [{}] has a negative entry",
           fmt::join(m, ","));
    out[i] = m[i] == 0 ? 0 : (x[i] < 0 ? core::affine_dim(x[i], m[i], 0, 1) : checked_mul(x[i], m[i], "tile"));
  }
  return {{out, in[0].dtype}};
}

}  // namespace

namespace ops {
void register_shape_ops(OpRegistry& r) {
  r.set(OpKind::broadcast_to, infer_broadcast_to);
  r.set(OpKind::reshape, infer_reshape);
  r.set(OpKind::transpose, infer_transpose);
  r.set(OpKind::slice, infer_slice);
  r.set(OpKind::pad, infer_pad);
  r.set(OpKind::concat, infer_concat);
  r.set(OpKind::reverse, infer_reverse);
  r.set(OpKind::tile, infer_tile);
}
}  // namespace ops

// ---- builders ----------------------------------------------------------------------------------

Tensor broadcast_to(Tensor x, Shape shape) {
  arg_type(x, "broadcast_to");
  return ops::make_op(OpKind::broadcast_to, {x}, ir::BroadcastAttrs{std::move(shape)});
}

Tensor reshape(Tensor x, Shape shape) {
  arg_type(x, "reshape");
  return ops::make_op(OpKind::reshape, {x}, ir::ReshapeAttrs{std::move(shape)});
}

Tensor transpose(Tensor x, std::vector<int64_t> perm) {
  const int64_t rank = arg_type(x, "transpose").rank();
  if (perm.empty()) {
    perm.resize(static_cast<size_t>(rank));
    std::iota(perm.rbegin(), perm.rend(), int64_t{0});
  } else {
    const std::vector<int64_t> given = perm;
    for (int64_t& p : perm) {
      if (p >= -rank && p < 0) p += rank;
    }
    check_permutation(perm, rank, given);
  }
  return ops::make_op(OpKind::transpose, {x}, ir::TransposeAttrs{std::move(perm)});
}

Tensor slice(Tensor x, SliceDesc desc) {
  const int64_t rank = arg_type(x, "slice").rank();
  const size_t n = desc.begin.size();
  if (desc.end.size() != n || (!desc.strides.empty() && desc.strides.size() != n) ||
      (!desc.axes.empty() && desc.axes.size() != n)) {
    fail(ErrorCode::invalid_argument, "slice",
         "begin, end, strides and axes need one entry per sliced axis (sizes {}, {}, {}, {})", n,
         desc.end.size(), desc.strides.size(), desc.axes.size());
  }
  if (desc.axes.empty()) {
    if (static_cast<int64_t>(n) > rank) {
      fail(ErrorCode::invalid_argument, "slice", "{} begin values for an input of rank {}", n,
           rank);
    }
    desc.axes.resize(n);
    std::iota(desc.axes.begin(), desc.axes.end(), int64_t{0});
  } else {
    for (int64_t& a : desc.axes) a = ops::normalize_axis(a, rank, "slice");
    std::vector<int64_t> sorted = desc.axes;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
      fail(ErrorCode::invalid_argument, "slice", "axes [{}] name a dim twice",
           fmt::join(desc.axes, ","));
    }
  }
  if (desc.strides.empty()) desc.strides.assign(n, 1);
  for (int64_t s : desc.strides) {
    if (s == 0)
      fail(ErrorCode::invalid_argument, "slice", "strides [{}] contain 0",
           fmt::join(desc.strides, ","));
  }
  return ops::make_op(OpKind::slice, {x}, std::move(desc));
}

/// Raises tg::Error(invalid_argument) when the constant cannot be stored in `dtype`.
void check_pad_value(double v, DType dtype) {
  auto fits = [&](double lo, double hi) { return v >= lo && v <= hi && v == v; };
  bool ok = true;
  switch (dtype) {
    case DType::i8:
      ok = fits(-128, 127);
      break;
    case DType::u8:
      ok = fits(0, 255);
      break;
    case DType::i32:
      ok = fits(-2147483648.0, 2147483647.0);
      break;
    case DType::i64:
      ok = fits(-9223372036854775808.0, 9223372036854774784.0);
      break;
    default:
      break;
  }
  if (!ok)
    fail(ErrorCode::invalid_argument, "pad", "value {} does not fit {}", v, dtype_name(dtype));
}

Tensor pad(Tensor x, PadDesc desc) {
  check_pad_value(desc.value, arg_type(x, "pad").dtype);
  return ops::make_op(OpKind::pad, {x}, std::move(desc));
}

Tensor concat(const std::vector<Tensor>& xs, int64_t axis) {
  if (xs.empty()) fail(ErrorCode::invalid_argument, "concat", "needs at least one tensor");
  for (size_t i = 0; i < xs.size(); ++i) arg_type(xs[i], "concat", i);
  const int64_t rank = xs[0].rank();
  if (rank == 0) fail(ErrorCode::invalid_argument, "concat", "cannot concatenate 0-d tensors");
  axis = ops::normalize_axis(axis, rank, "concat");
  return ops::make_op(OpKind::concat, xs, ir::ConcatAttrs{axis});
}

Tensor reverse(Tensor x, std::vector<int64_t> axes) {
  const int64_t rank = arg_type(x, "reverse").rank();
  return ops::make_op(OpKind::reverse, {x},
                      ir::ReverseAttrs{ops::normalize_axes(axes, rank, "reverse")});
}

Tensor tile(Tensor x, std::vector<int64_t> multiples) {
  arg_type(x, "tile");
  return ops::make_op(OpKind::tile, {x}, ir::TileAttrs{std::move(multiples)});
}

// ---- composites --------------------------------------------------------------------------------

namespace {

/// reshape(x, shape) for composites that keep x's dims (expand_dims, squeeze): x's dynamic dims
/// become the one -1 reshape can infer; more than one raises tg::Error(unsupported).
Tensor reshape_keeping_dims(Tensor x, const Shape& shape, std::string_view op) {
  if (std::count(shape.begin(), shape.end(), int64_t{-1}) > 1) {
    fail(ErrorCode::unsupported, op, "input {} has more than one dynamic dim", str(x.shape()));
  }
  if (std::count(shape.begin(), shape.end(), int64_t{-1}) == 1 &&
      std::count(shape.begin(), shape.end(), int64_t{0}) > 0) {
    // The element count (0) could not give the dynamic dim back.
    fail(ErrorCode::unsupported, op, "input {} has a dynamic dim beside a dim of size 0",
         str(x.shape()));
  }
  return reshape(x, shape);
}

}  // namespace

std::vector<Tensor> split(Tensor x, const std::vector<int64_t>& sizes, int64_t axis) {
  const TensorType t = arg_type(x, "split");
  axis = ops::normalize_axis(axis, t.rank(), "split");
  const int64_t dim = t.shape[static_cast<size_t>(axis)];
  if (sizes.empty()) fail(ErrorCode::invalid_argument, "split", "sizes is empty");
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0)
      fail(ErrorCode::invalid_argument, "split", "sizes [{}] has a negative entry",
           fmt::join(sizes, ","));
    total = checked_add(total, s, "split");
  }
  if (dim >= 0 && total != dim) {
    fail(ErrorCode::invalid_argument, "split", "sizes [{}] sum to {}, but dim {} of {} is {}",
         fmt::join(sizes, ","), total, axis, str(t.shape), dim);
  }
  std::vector<Tensor> pieces;
  int64_t begin = 0;
  for (int64_t s : sizes) {
    pieces.push_back(
        slice(x, {.begin = {begin}, .end = {begin + s}, .strides = {1}, .axes = {axis}}));
    begin += s;
  }
  return pieces;
}

std::vector<Tensor> split(Tensor x, int64_t num, int64_t axis) {
  const TensorType t = arg_type(x, "split");
  axis = ops::normalize_axis(axis, t.rank(), "split");
  const int64_t dim = t.shape[static_cast<size_t>(axis)];
  if (num <= 0) fail(ErrorCode::invalid_argument, "split", "num {} must be positive", num);
  if (dim < 0) {
    fail(ErrorCode::invalid_argument, "split", "dim {} of {} is dynamic: give the sizes", axis,
         str(t.shape));
  }
  if (dim % num != 0) {
    fail(ErrorCode::invalid_argument, "split", "dim {} of {} ({}) is not divisible by {}", axis,
         str(t.shape), dim, num);
  }
  return split(x, std::vector<int64_t>(static_cast<size_t>(num), dim / num), axis);
}

Tensor expand_dims(Tensor x, int64_t axis) {
  Shape shape = arg_type(x, "expand_dims").shape;
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (axis < -rank - 1 || axis > rank) {
    fail(ErrorCode::invalid_argument, "expand_dims",
         "axis {} is out of range [{}, {}] for input rank {}", axis, -rank - 1, rank, rank);
  }
  if (axis < 0) axis += rank + 1;
  shape.insert(shape.begin() + axis, 1);
  return reshape_keeping_dims(x, shape, "expand_dims");
}

Tensor squeeze(Tensor x, std::vector<int64_t> axes) {
  const Shape in = arg_type(x, "squeeze").shape;
  const int64_t rank = static_cast<int64_t>(in.size());
  std::vector<bool> drop(in.size(), false);
  if (axes.empty()) {
    for (size_t i = 0; i < in.size(); ++i) drop[i] = in[i] == 1;
  } else {
    for (int64_t a : ops::normalize_axes(axes, rank, "squeeze")) {
      int64_t d = in[static_cast<size_t>(a)];
      if (d != 1 && d >= 0) {
        fail(ErrorCode::invalid_argument, "squeeze", "dim {} of {} is {}, not 1", a, str(in), d);
      }
      if (d == -1 && std::count(in.begin(), in.end(), int64_t{-1}) > 1) {
        // The reshape could not tell the squeezed dim from the kept dynamic dims.
        fail(ErrorCode::unsupported, "squeeze",
             "cannot squeeze dynamic dim {} of {} while other dims are dynamic", a, str(in));
      }
      drop[static_cast<size_t>(a)] = true;
    }
  }
  Shape shape;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!drop[i]) shape.push_back(in[i]);
  }
  return reshape_keeping_dims(x, shape, "squeeze");
}

}  // namespace tg
