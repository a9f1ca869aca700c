// The random op family (random_uniform, random_normal, random_uniform_like): attribute checks and
// builders. random_uniform/random_normal are source ops whose output type is given by the builder;
// random_uniform_like takes its shape from input 0 and its stream key from input 1. As for the
// sources, the output dtype (RandomDesc::dtype) is carried by the node's output type. The values
// come from src/core/philox.h.
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

void check_dtype(DType dtype, std::string_view op) {
  if (!is_floating(dtype)) {
    fail(ErrorCode::dtype_mismatch, op, "dtype {} is not floating (f16, bf16, f32, f64)",
         dtype_name(dtype));
  }
}

std::vector<TensorType> infer_random(const ir::Node& node, std::span<const TensorType>) {
  std::string_view op = ir::op_name(node.kind);
  const TensorType& t = node.outputs.at(0);
  check_dtype(t.dtype, op);
  check_static_shape(t.shape, op);
  check_params(std::get<ir::RandomAttrs>(node.attrs), t.dtype,
               node.kind == ir::OpKind::random_normal, op);
  return node.outputs;
}

// in[0]: `like` (any dtype, shape may be dynamic); in[1]: the key, an integer scalar. The output
// dtype is the one the builder put in node.outputs (kept when the pass re-infers at compile time).
std::vector<TensorType> infer_random_like(const ir::Node& node, std::span<const TensorType> in) {
  constexpr std::string_view op = "random_uniform_like";
  if (node.outputs.size() != 1) fail(ErrorCode::internal, op, "node has no output dtype");
  const DType dtype = node.outputs[0].dtype;
  check_dtype(dtype, op);
  if (!is_integer(in[1].dtype) || !in[1].shape.empty()) {
    fail(ErrorCode::invalid_argument, op, "key must be an integer scalar, got {} (like {})",
         in[1].to_string(), in[0].to_string());
  }
  const auto& a = std::get<ir::RandomLikeAttrs>(node.attrs);
  check_params(ir::RandomAttrs{a.low, a.high, a.seed}, dtype, false, op);
  return {TensorType{in[0].shape, dtype}};
}

}  // namespace

namespace ops {
void register_random_ops(OpRegistry& r) {
  r.set(ir::OpKind::random_uniform, infer_random);
  r.set(ir::OpKind::random_normal, infer_random);
  r.set(ir::OpKind::random_uniform_like, infer_random_like);
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

// Built like make_op, except that the node starts with its output type so that type inference
// (now and when compiling) knows desc.dtype.
Tensor random_uniform_like(Tensor like, Tensor key, double low, double high, RandomDesc desc) {
  constexpr std::string_view op = "random_uniform_like";
  if (!like.valid()) fail(ErrorCode::invalid_argument, op, "like is an empty Tensor");
  if (!key.valid()) fail(ErrorCode::invalid_argument, op, "key is an empty Tensor");
  if (key.graph_impl() != like.graph_impl()) {
    fail(ErrorCode::invalid_argument, op, "key belongs to another graph than like");
  }
  ir::Node n;
  n.kind = ir::OpKind::random_uniform_like;
  n.attrs = ir::RandomLikeAttrs{low, high, desc.seed};
  n.inputs = {{like.node_id(), like.index()}, {key.node_id(), key.index()}};
  n.outputs = {TensorType{like.shape(), desc.dtype}};
  const std::vector<TensorType> in{like.type(), key.type()};
  std::vector<TensorType> out = ops::infer_types(n, in);
  const std::shared_ptr<ir::Graph>& g = like.graph_impl();
  int id = g->add_node(n.kind, std::move(n.inputs), std::move(n.attrs), std::move(out));
  return Tensor(g, id, 0);
}

}  // namespace tg
