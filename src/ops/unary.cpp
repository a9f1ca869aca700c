// Elementwise unary ops: dtype rules and builders.
#include "ops/builder.h"

namespace tg {
namespace {

enum class Rule { floating, numeric, boolean, float_to_bool };

Rule rule_of(ir::OpKind k) {
  switch (k) {
    case ir::OpKind::neg: case ir::OpKind::abs: case ir::OpKind::sign: case ir::OpKind::square:
      return Rule::numeric;
    case ir::OpKind::logical_not: return Rule::boolean;
    case ir::OpKind::is_nan: case ir::OpKind::is_inf: return Rule::float_to_bool;
    default: return Rule::floating;
  }
}

std::vector<TensorType> infer_unary(const ir::Node& node, std::span<const TensorType> in) {
  const TensorType& x = in[0];
  std::string_view op = ir::op_name(node.kind);
  switch (rule_of(node.kind)) {
    case Rule::numeric:
      if (!is_numeric(x.dtype)) fail(ErrorCode::dtype_mismatch, op, "needs a numeric input, got {}", x.to_string());
      return {x};
    case Rule::boolean:
      if (x.dtype != DType::bool_) fail(ErrorCode::dtype_mismatch, op, "needs a bool input, got {}", x.to_string());
      return {x};
    case Rule::float_to_bool:
      if (!is_floating(x.dtype)) fail(ErrorCode::dtype_mismatch, op, "needs a floating input, got {}", x.to_string());
      return {{x.shape, DType::bool_}};
    case Rule::floating:
      if (!is_floating(x.dtype)) fail(ErrorCode::dtype_mismatch, op, "needs a floating input, got {} (use cast)", x.to_string());
      return {x};
  }
  return {x};
}

}  // namespace

namespace ops {
void register_unary_ops(OpRegistry& r) {
  for (const ir::OpInfo& info : ir::all_ops()) {
    if (info.family == ir::OpFamily::unary) r.set(info.kind, infer_unary);
  }
}
}  // namespace ops

#define TG_UNARY_BUILDER(name) \
  Tensor name(Tensor x) { return ops::make_op(ir::OpKind::name, {x}); }
TG_UNARY_BUILDER(neg)
TG_UNARY_BUILDER(abs)
TG_UNARY_BUILDER(sign)
TG_UNARY_BUILDER(exp)
TG_UNARY_BUILDER(log)
TG_UNARY_BUILDER(log1p)
TG_UNARY_BUILDER(expm1)
TG_UNARY_BUILDER(sqrt)
TG_UNARY_BUILDER(rsqrt)
TG_UNARY_BUILDER(reciprocal)
TG_UNARY_BUILDER(square)
TG_UNARY_BUILDER(sin)
TG_UNARY_BUILDER(cos)
TG_UNARY_BUILDER(tan)
TG_UNARY_BUILDER(tanh)
TG_UNARY_BUILDER(sigmoid)
TG_UNARY_BUILDER(erf)
TG_UNARY_BUILDER(floor)
TG_UNARY_BUILDER(ceil)
TG_UNARY_BUILDER(round)
TG_UNARY_BUILDER(logical_not)
TG_UNARY_BUILDER(is_nan)
TG_UNARY_BUILDER(is_inf)
#undef TG_UNARY_BUILDER

}  // namespace tg
