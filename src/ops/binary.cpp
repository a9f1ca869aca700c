// Elementwise binary ops with NumPy broadcasting: dtype rules, builders and operators.
#include <cmath>

#include "ops/builder.h"

namespace tg {
namespace {

enum class Rule { numeric, floating, compare, logical };

Rule rule_of(ir::OpKind k) {
  switch (k) {
    case ir::OpKind::pow: case ir::OpKind::atan2: return Rule::floating;
    case ir::OpKind::equal: case ir::OpKind::not_equal: case ir::OpKind::less:
    case ir::OpKind::less_equal: case ir::OpKind::greater: case ir::OpKind::greater_equal:
      return Rule::compare;
    case ir::OpKind::logical_and: case ir::OpKind::logical_or: case ir::OpKind::logical_xor:
      return Rule::logical;
    default: return Rule::numeric;
  }
}

std::vector<TensorType> infer_binary(const ir::Node& node, std::span<const TensorType> in) {
  std::string_view op = ir::op_name(node.kind);
  ops::check_same_dtype(in, op);
  DType t = in[0].dtype;
  Shape shape = ops::broadcast_shapes(in[0].shape, in[1].shape, op);
  switch (rule_of(node.kind)) {
    case Rule::numeric:
      if (!is_numeric(t)) fail(ErrorCode::dtype_mismatch, op, "needs numeric operands, got {}", in[0].to_string());
      return {{shape, t}};
    case Rule::floating:
      if (!is_floating(t)) fail(ErrorCode::dtype_mismatch, op, "needs floating operands, got {} (use cast)", in[0].to_string());
      return {{shape, t}};
    case Rule::compare: return {{shape, DType::bool_}};
    case Rule::logical:
      if (t != DType::bool_) fail(ErrorCode::dtype_mismatch, op, "needs bool operands, got {}", in[0].to_string());
      return {{shape, DType::bool_}};
  }
  return {{shape, t}};
}

}  // namespace

namespace ops {
void register_binary_ops(OpRegistry& r) {
  for (const ir::OpInfo& info : ir::all_ops()) {
    if (info.family == ir::OpFamily::binary) r.set(info.kind, infer_binary);
  }
}
}  // namespace ops

#define TG_BINARY_BUILDER(name) \
  Tensor name(Tensor a, Tensor b) { return ops::make_op(ir::OpKind::name, {a, b}); }
TG_BINARY_BUILDER(add)
TG_BINARY_BUILDER(sub)
TG_BINARY_BUILDER(mul)
TG_BINARY_BUILDER(div)
TG_BINARY_BUILDER(pow)
TG_BINARY_BUILDER(maximum)
TG_BINARY_BUILDER(minimum)
TG_BINARY_BUILDER(mod)
TG_BINARY_BUILDER(floor_mod)
TG_BINARY_BUILDER(floor_div)
TG_BINARY_BUILDER(equal)
TG_BINARY_BUILDER(not_equal)
TG_BINARY_BUILDER(less)
TG_BINARY_BUILDER(less_equal)
TG_BINARY_BUILDER(greater)
TG_BINARY_BUILDER(greater_equal)
TG_BINARY_BUILDER(logical_and)
TG_BINARY_BUILDER(logical_or)
TG_BINARY_BUILDER(logical_xor)
#undef TG_BINARY_BUILDER
Tensor atan2(Tensor y, Tensor x) { return ops::make_op(ir::OpKind::atan2, {y, x}); }

namespace {

/// The scalar operand of a tensor-scalar operator: a 0-d constant of `like`'s dtype. For an
/// integer dtype the value must be an integer in the dtype's range (so that it converts exactly:
/// int_tensor * 0.5 is an error, not int_tensor * 0).
Tensor scalar_operand(const Tensor& like, double value, ir::OpKind kind, int like_index) {
  std::string_view op = ir::op_name(kind);
  if (!like.valid()) fail(ErrorCode::invalid_argument, op, "input {} is an empty Tensor", like_index);
  DType t = like.dtype();
  if (is_integer(t)) {
    // The range is [lo, end): both are powers of two, exact as doubles.
    int bits = static_cast<int>(dtype_size(t)) * 8;
    double end = std::ldexp(1.0, t == DType::u8 ? bits : bits - 1);
    double lo = t == DType::u8 ? 0.0 : -end;
    if (!(value >= lo && value < end) || std::trunc(value) != value) {
      fail(ErrorCode::invalid_argument, op, "scalar {} is not representable as {} (use cast)", value,
           dtype_name(t));
    }
  }
  return ops::scalar_like(like, value, t);
}

}  // namespace

Tensor operator+(Tensor a, Tensor b) { return add(a, b); }
Tensor operator-(Tensor a, Tensor b) { return sub(a, b); }
Tensor operator*(Tensor a, Tensor b) { return mul(a, b); }
Tensor operator/(Tensor a, Tensor b) { return div(a, b); }
Tensor operator-(Tensor a) { return neg(a); }
Tensor operator+(Tensor a, double b) { return add(a, scalar_operand(a, b, ir::OpKind::add, 0)); }
Tensor operator-(Tensor a, double b) { return sub(a, scalar_operand(a, b, ir::OpKind::sub, 0)); }
Tensor operator*(Tensor a, double b) { return mul(a, scalar_operand(a, b, ir::OpKind::mul, 0)); }
Tensor operator/(Tensor a, double b) { return div(a, scalar_operand(a, b, ir::OpKind::div, 0)); }
Tensor operator+(double a, Tensor b) { return add(scalar_operand(b, a, ir::OpKind::add, 1), b); }
Tensor operator-(double a, Tensor b) { return sub(scalar_operand(b, a, ir::OpKind::sub, 1), b); }
Tensor operator*(double a, Tensor b) { return mul(scalar_operand(b, a, ir::OpKind::mul, 1), b); }
Tensor operator/(double a, Tensor b) { return div(scalar_operand(b, a, ir::OpKind::div, 1), b); }

}  // namespace tg
