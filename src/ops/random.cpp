// The random op family (random_uniform, random_normal): attribute checks and builders. Both are
// source ops whose output type is given by the builder; the values come from src/core/philox.h.
#include <cmath>
#include <limits>

#include "ops/builder.h"

namespace tg {
namespace {

// Largest magnitude a parameter may have: the dtype's largest finite value (f16/bf16/f32 are
// computed in float).
double max_param(DType t) {
  if (t == DType::f64) return std::numeric_limits<double>::max();
  return t == DType::f16 ? 65504.0 : std::numeric_limits<float>::max();
}

void check_static_shape(const Shape& shape, std::string_view op) {
  for (int64_t d : shape) {
    if (d < 0) {
      fail(ErrorCode::invalid_argument, op, "shape {} must be static with dims >= 0", str(shape));
    }
  }
}

// a/b are (low, high) for uniform and (mean, stddev) for normal; `span` is the value the
// generator scales by (high - low, or stddev).
void check_params(const ir::RandomAttrs& a, DType dtype, bool normal, std::string_view op) {
  const char* na = normal ? "mean" : "low";
  const char* nb = normal ? "stddev" : "high";
  if (!std::isfinite(a.a) || !std::isfinite(a.b)) {
    fail(ErrorCode::invalid_argument, op, "{} {} and {} {} must be finite", na, a.a, nb, a.b);
  }
  if (normal && a.b < 0) fail(ErrorCode::invalid_argument, op, "stddev {} must be >= 0", a.b);
  if (!normal && a.a > a.b) {
    fail(ErrorCode::invalid_argument, op, "low {} must be <= high {}", a.a, a.b);
  }
  double span = normal ? a.b : a.b - a.a;
  if (!std::isfinite(span)) {
    fail(ErrorCode::invalid_argument, op, "high - low overflows (low {}, high {})", a.a, a.b);
  }
  // The span is computed in float for f16 too, so only the parameters need f16's range.
  const double m = max_param(dtype), span_max = max_param(dtype == DType::f16 ? DType::f32 : dtype);
  if (std::fabs(a.a) > m || std::fabs(a.b) > m || span > span_max) {
    fail(ErrorCode::invalid_argument, op, "{} {} / {} {} exceed the range of {} (+-{:g})", na, a.a,
         nb, a.b, dtype_name(dtype), m);
  }
}

std::vector<TensorType> infer_random(const ir::Node& node, std::span<const TensorType>) {
  std::string_view op = ir::op_name(node.kind);
  const TensorType& t = node.outputs.at(0);
  if (!is_floating(t.dtype)) {
    fail(ErrorCode::dtype_mismatch, op, "dtype {} is not floating (f16, bf16, f32, f64)",
         dtype_name(t.dtype));
  }
  check_static_shape(t.shape, op);
  check_params(std::get<ir::RandomAttrs>(node.attrs), t.dtype,
               node.kind == ir::OpKind::random_normal, op);
  return node.outputs;
}

}  // namespace

namespace ops {
void register_random_ops(OpRegistry& r) {
  r.set(ir::OpKind::random_uniform, infer_random);
  r.set(ir::OpKind::random_normal, infer_random);
}
}  // namespace ops

Tensor random_uniform(Graph& g, Shape shape, double low, double high, RandomDesc desc) {
  return ops::make_source(g, ir::OpKind::random_uniform, ir::RandomAttrs{low, high, desc.seed},
                          {std::move(shape), desc.dtype});
}

Tensor random_normal(Graph& g, Shape shape, double mean, double stddev, RandomDesc desc) {
  return ops::make_source(g, ir::OpKind::random_normal, ir::RandomAttrs{mean, stddev, desc.seed},
                          {std::move(shape), desc.dtype});
}

}  // namespace tg
