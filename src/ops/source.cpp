// Source ops: placeholder, constant, fill, iota (and the arange composite).
#include <cmath>

#include "ops/builder.h"

namespace tg {
namespace {

std::vector<TensorType> infer_declared(const ir::Node& node, std::span<const TensorType>) {
  return node.outputs;
}

std::vector<TensorType> infer_constant(const ir::Node& node, std::span<const TensorType>) {
  return {std::get<ir::ConstantAttrs>(node.attrs).value.type()};
}

// Sizes, named symbols (tg::symbolic_dim: bound per run of a compile-once executable), and
// with allow_dynamic -1.
void check_shape(const Shape& shape, std::string_view op, bool allow_dynamic) {
  for (int64_t d : shape) {
    const bool symbol = is_symbolic_dim(d);
    if (d < (allow_dynamic ? -1 : 0) && !symbol) {
      fail(ErrorCode::invalid_argument, op, "shape {} has an invalid dim {}", str(shape), d);
    }
  }
}

std::vector<TensorType> infer_iota(const ir::Node& node, std::span<const TensorType>) {
  const TensorType& t = node.outputs.at(0);
  ops::normalize_axis(std::get<ir::IotaAttrs>(node.attrs).axis, t.rank(), "iota");
  return node.outputs;
}

}  // namespace

namespace ops {
void register_source_ops(OpRegistry& r) {
  r.set(ir::OpKind::placeholder, infer_declared);
  r.set(ir::OpKind::constant, infer_constant);
  r.set(ir::OpKind::fill, infer_declared);
  r.set(ir::OpKind::iota, infer_iota);
}
}  // namespace ops

Tensor fill(Graph& g, Shape shape, double value, DType dtype) {
  check_shape(shape, "fill", false);
  return ops::make_source(g, ir::OpKind::fill, ir::FillAttrs{value}, {shape, dtype});
}

Tensor iota(Graph& g, Shape shape, int64_t axis, DType dtype) {
  check_shape(shape, "iota", false);
  if (!is_numeric(dtype)) {
    fail(ErrorCode::dtype_mismatch, "iota", "dtype {} is not numeric", dtype_name(dtype));
  }
  if (shape.empty()) fail(ErrorCode::invalid_argument, "iota", "shape must have rank >= 1");
  axis = ops::normalize_axis(axis, static_cast<int64_t>(shape.size()), "iota");
  return ops::make_source(g, ir::OpKind::iota, ir::IotaAttrs{axis}, {shape, dtype});
}

Tensor arange(Graph& g, double start, double limit, double delta, DType dtype) {
  if (delta == 0 || !std::isfinite(delta) || !std::isfinite(start) || !std::isfinite(limit)) {
    fail(ErrorCode::invalid_argument, "arange", "start {}, limit {}, delta {}: delta must be non-zero and all finite",
         start, limit, delta);
  }
  int64_t n = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((limit - start) / delta)));
  Tensor idx = iota(g, {n}, 0, is_floating(dtype) ? dtype : DType::f64);
  Tensor v = idx * delta + start;
  return v.dtype() == dtype ? v : cast(v, dtype);
}

}  // namespace tg
