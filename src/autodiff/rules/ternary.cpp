// Vector-Jacobian rules of the ternary op family: select routes the cotangent by the condition
// and clamp routes it to whichever of x, low, high the result came from. Cotangents are computed
// in the broadcast output shape and summed back to each operand's shape (unbroadcast). The bool
// condition and integer operands get no gradient.
#include "autodiff/rules.h"

namespace tg::autodiff {
namespace {

/// A 0-d zero of t's dtype.
Tensor zero_scalar(const Tensor& t) {
  Graph g(t.graph_impl());
  return g.constant(0.0, t.dtype());
}

/// The output cotangent restricted to where `mask` holds (zero elsewhere), summed to `shape`.
Tensor routed(const Tensor& g, const Tensor& mask, const Shape& shape) {
  return unbroadcast(select(mask, g, zero_scalar(g)), shape);
}

/// select(condition, a, b): a gets the cotangent where condition is true, b where it is false.
void select_rule(VjpContext& c) {
  const Tensor& g = c.cotangents[0];
  if (!g.valid() || !is_floating(c.inputs[1].dtype())) return;
  const Tensor& cond = c.inputs[0];
  c.input_cotangents[1] = routed(g, cond, c.inputs[1].shape());
  c.input_cotangents[2] = routed(g, logical_not(cond), c.inputs[2].shape());
}

/// clamp(x, low, high) = min(max(x, low), high). Exactly one operand gets each element's
/// cotangent: x where low <= x <= high (ties go to x), low where x < low <= high, high where
/// x > high or low > high (the result is then high). A NaN x or bound passes none.
void clamp_rule(VjpContext& c) {
  const Tensor& g = c.cotangents[0];
  if (!g.valid() || !is_floating(c.inputs[0].dtype())) return;
  const Tensor& x = c.inputs[0];
  const Tensor& low = c.inputs[1];
  const Tensor& high = c.inputs[2];
  Tensor to_x = logical_and(greater_equal(x, low), less_equal(x, high));
  Tensor to_low = logical_and(less(x, low), less_equal(low, high));
  Tensor to_high = logical_or(greater(x, high), greater(low, high));
  c.input_cotangents[0] = routed(g, to_x, x.shape());
  c.input_cotangents[1] = routed(g, to_low, low.shape());
  c.input_cotangents[2] = routed(g, to_high, high.shape());
}

}  // namespace

void register_ternary_rules(RuleTable& t) {
  t.set(ir::OpKind::select, select_rule);
  t.set(ir::OpKind::clamp, clamp_rule);
}

}  // namespace tg::autodiff
