// select (where) and clamp, broadcasting all three operands; and cast.
#include <algorithm>
#include <iterator>

#include "ops/builder.h"
#include "tg/autodiff.h"

namespace tg {
namespace {

/// The NumPy broadcast of three shapes; the error names all three.
Shape broadcast3(std::span<const TensorType> in, std::string_view op) {
  try {
    return ops::broadcast_shapes(ops::broadcast_shapes(in[0].shape, in[1].shape, op), in[2].shape, op);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::shape_mismatch) throw;
  }
  fail(ErrorCode::shape_mismatch, op, "shapes {}, {} and {} do not broadcast", str(in[0].shape),
       str(in[1].shape), str(in[2].shape));
}

std::vector<TensorType> infer_ternary(const ir::Node& node, std::span<const TensorType> in) {
  std::string_view op = ir::op_name(node.kind);
  Shape shape = broadcast3(in, op);
  if (node.kind == ir::OpKind::select) {
    if (in[0].dtype != DType::bool_) {
      fail(ErrorCode::dtype_mismatch, op, "condition must be bool, got {}", in[0].to_string());
    }
    ops::check_same_dtype(in.subspan(1), op);
    return {{shape, in[1].dtype}};
  }
  ops::check_same_dtype(in, op);
  if (!is_numeric(in[0].dtype)) {
    fail(ErrorCode::dtype_mismatch, op, "needs numeric operands, got {}", in[0].to_string());
  }
  return {{shape, in[0].dtype}};
}

std::vector<TensorType> infer_cast(const ir::Node& node, std::span<const TensorType> in) {
  return {{in[0].shape, std::get<ir::CastAttrs>(node.attrs).dtype}};
}

}  // namespace

namespace ops {
void register_ternary_ops(OpRegistry& r) {
  r.set(ir::OpKind::select, infer_ternary);
  r.set(ir::OpKind::clamp, infer_ternary);
}
void register_cast_ops(OpRegistry& r) {
  r.set(ir::OpKind::cast, infer_cast);
  r.set(ir::OpKind::stop_gradient, [](const ir::Node&, std::span<const TensorType> in) {
    return std::vector<TensorType>{in[0]};
  });
}
}  // namespace ops

Tensor select(Tensor condition, Tensor a, Tensor b) {
  return ops::make_op(ir::OpKind::select, {condition, a, b});
}
Tensor cast(Tensor x, DType dtype) {
  if (std::find(std::begin(kAllDTypes), std::end(kAllDTypes), dtype) == std::end(kAllDTypes)) {
    fail(ErrorCode::invalid_argument, "cast", "unknown dtype {}", static_cast<int>(dtype));
  }
  return ops::make_op(ir::OpKind::cast, {x}, ir::CastAttrs{dtype});
}
Tensor clamp(Tensor x, Tensor low, Tensor high) {
  return ops::make_op(ir::OpKind::clamp, {x, low, high});
}

Tensor stop_gradient(Tensor x) { return ops::make_op(ir::OpKind::stop_gradient, {x}); }

}  // namespace tg
