// Reduction ONNX ops: ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare, ArgMax,
// ArgMin. Axes are an attribute before opset 13 (ReduceSum) / 18 (the others) and an optional
// input from then on; an empty axes list reduces everything unless noop_with_empty_axes.
#include "frontends/onnx/converters.h"

namespace tg::onnx {
namespace {

enum class Kind { sum, mean, max, min, prod, l1, l2, log_sum, log_sum_exp, sum_square };

Tensor via_f64_mean(Tensor x, ReduceDesc d) {
  if (is_floating(x.dtype())) return reduce_mean(x, d);
  return cast(reduce_mean(cast(x, DType::f64), d), x.dtype());
}

// The elementwise step before the reduction (also the whole result with noop_with_empty_axes).
Tensor pre(Kind k, Tensor x) {
  switch (k) {
    case Kind::l1: return abs(x);
    case Kind::l2:
    case Kind::sum_square: return x * x;
    default: return x;
  }
}

Tensor reduce(Kind k, Tensor x, ReduceDesc d) {
  switch (k) {
    case Kind::sum: return reduce_sum(x, d);
    case Kind::mean: return via_f64_mean(x, d);
    case Kind::max: return x.dtype() == DType::bool_ ? reduce_or(x, d) : reduce_max(x, d);
    case Kind::min: return x.dtype() == DType::bool_ ? reduce_and(x, d) : reduce_min(x, d);
    case Kind::prod: return reduce_prod(x, d);
    case Kind::l1:
    case Kind::sum_square: return reduce_sum(pre(k, x), d);
    case Kind::l2: {
      if (!is_floating(x.dtype())) return cast(sqrt(reduce_sum(cast(x * x, DType::f64), d)), x.dtype());
      return sqrt(reduce_sum(x * x, d));
    }
    case Kind::log_sum: {
      if (!is_floating(x.dtype())) return cast(log(reduce_sum(cast(x, DType::f64), d)), x.dtype());
      return log(reduce_sum(x, d));
    }
    case Kind::log_sum_exp: {
      Tensor xf = is_floating(x.dtype()) ? x : cast(x, DType::f64);
      // log(sum(exp(x - m))) + m with m the (finite) max: no overflow for large x.
      Tensor m = reduce_max(xf, {.axes = d.axes, .keep_dims = true});
      m = select(is_inf(m), scalar_like(m, 0), m);
      Tensor s = log(reduce_sum(exp(xf - m), d));
      Tensor y = s + (d.keep_dims ? m : reshape(m, s.shape()));
      return cast_to(y, x.dtype());
    }
  }
  return x;
}

std::vector<Tensor> convert(NodeContext& c, Kind k, int64_t axes_input_since) {
  Tensor x = c.input(0);
  bool keep = c.attr_int("keepdims", 1) != 0;
  std::vector<int64_t> axes;
  bool noop = false;
  if (c.opset() >= axes_input_since) {
    if (c.has_input(1)) axes = c.ints(1);
    noop = c.attr_int("noop_with_empty_axes", 0) != 0;
  } else {
    axes = c.attr_ints("axes");
  }
  if (axes.empty() && noop) return {pre(k, x)};
  for (int64_t& a : axes) a = c.axis(a, x.rank());
  return {reduce(k, x, {.axes = axes, .keep_dims = keep})};
}

std::vector<Tensor> arg_reduce(NodeContext& c, bool is_max) {
  Tensor x = c.input(0);
  int64_t axis = c.axis(c.attr_int("axis", 0), x.rank());
  bool keep = c.attr_int("keepdims", 1) != 0;
  bool last = c.attr_int("select_last_index", 0) != 0;
  ArgReduceDesc d{.axis = axis, .keep_dims = keep};
  if (!last) return {is_max ? argmax(x, d) : argmin(x, d)};
  // The last extreme: the first one of the reversed axis, mapped back.
  int64_t dim = c.static_dim(0, axis);
  Tensor r = is_max ? argmax(reverse(x, {axis}), d) : argmin(reverse(x, {axis}), d);
  return {c.graph().constant(static_cast<double>(dim - 1), DType::i64) - r};
}

}  // namespace

std::vector<Tensor> convert_reduce_sum(NodeContext& c) { return convert(c, Kind::sum, 13); }
std::vector<Tensor> convert_reduce_mean(NodeContext& c) { return convert(c, Kind::mean, 18); }
std::vector<Tensor> convert_reduce_max(NodeContext& c) { return convert(c, Kind::max, 18); }
std::vector<Tensor> convert_reduce_min(NodeContext& c) { return convert(c, Kind::min, 18); }
std::vector<Tensor> convert_reduce_prod(NodeContext& c) { return convert(c, Kind::prod, 18); }
std::vector<Tensor> convert_reduce_l1(NodeContext& c) { return convert(c, Kind::l1, 18); }
std::vector<Tensor> convert_reduce_l2(NodeContext& c) { return convert(c, Kind::l2, 18); }
std::vector<Tensor> convert_reduce_log_sum(NodeContext& c) { return convert(c, Kind::log_sum, 18); }
std::vector<Tensor> convert_reduce_log_sum_exp(NodeContext& c) {
  return convert(c, Kind::log_sum_exp, 18);
}
std::vector<Tensor> convert_reduce_sum_square(NodeContext& c) {
  return convert(c, Kind::sum_square, 18);
}
std::vector<Tensor> convert_arg_max(NodeContext& c) { return arg_reduce(c, true); }
std::vector<Tensor> convert_arg_min(NodeContext& c) { return arg_reduce(c, false); }

}  // namespace tg::onnx
