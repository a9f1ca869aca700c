// Vector-Jacobian rules of the unary op family. Each rule maps the output cotangent g to
// g * f'(x), written with x (the input) or y = f(x) (the output), whichever is cheaper.
// sign, floor, ceil and round have derivative 0 wherever it exists: their rules pass no
// gradient (the traversal treats that as zero), as do integer inputs.
#include <numbers>

#include "autodiff/rules.h"

namespace tg::autodiff {
namespace {

/// A unary derivative: the input cotangent from the output cotangent g, the input x and the
/// output y.
using UnaryVjp = Tensor (*)(const Tensor& g, const Tensor& x, const Tensor& y);

template <UnaryVjp F>
void unary_rule(VjpContext& c) {
  if (!c.cotangents[0].valid() || !is_floating(c.inputs[0].dtype())) return;
  c.input_cotangents[0] = F(c.cotangents[0], c.inputs[0], c.outputs[0]);
}

/// Derivative zero (almost everywhere): no gradient flows.
void no_gradient(VjpContext&) {}

Tensor neg_vjp(const Tensor& g, const Tensor&, const Tensor&) { return neg(g); }
/// abs'(x) = sign(x); sign(0) = 0 gives abs'(0) = 0 (PyTorch, JAX).
Tensor abs_vjp(const Tensor& g, const Tensor& x, const Tensor&) { return mul(g, sign(x)); }
Tensor exp_vjp(const Tensor& g, const Tensor&, const Tensor& y) { return mul(g, y); }
Tensor log_vjp(const Tensor& g, const Tensor& x, const Tensor&) { return div(g, x); }
Tensor log1p_vjp(const Tensor& g, const Tensor& x, const Tensor&) { return div(g, x + 1.0); }
Tensor expm1_vjp(const Tensor& g, const Tensor&, const Tensor& y) { return mul(g, y + 1.0); }
/// sqrt'(x) = 1 / (2 sqrt(x)) (inf at 0).
Tensor sqrt_vjp(const Tensor& g, const Tensor&, const Tensor& y) { return div(g * 0.5, y); }
/// rsqrt'(x) = -x^(-3/2) / 2 = -y^3 / 2.
Tensor rsqrt_vjp(const Tensor& g, const Tensor&, const Tensor& y) {
  return mul(g * -0.5, mul(square(y), y));
}
/// (1/x)' = -1/x^2 = -y^2.
Tensor reciprocal_vjp(const Tensor& g, const Tensor&, const Tensor& y) {
  return neg(mul(g, square(y)));
}
Tensor square_vjp(const Tensor& g, const Tensor& x, const Tensor&) { return mul(g * 2.0, x); }
Tensor sin_vjp(const Tensor& g, const Tensor& x, const Tensor&) { return mul(g, cos(x)); }
Tensor cos_vjp(const Tensor& g, const Tensor& x, const Tensor&) { return neg(mul(g, sin(x))); }
/// tan' = 1 + tan^2.
Tensor tan_vjp(const Tensor& g, const Tensor&, const Tensor& y) { return mul(g, square(y) + 1.0); }
/// tanh' = 1 - tanh^2.
Tensor tanh_vjp(const Tensor& g, const Tensor&, const Tensor& y) { return mul(g, 1.0 - square(y)); }
/// sigmoid' = y (1 - y).
Tensor sigmoid_vjp(const Tensor& g, const Tensor&, const Tensor& y) {
  return mul(g, mul(y, 1.0 - y));
}
/// erf'(x) = 2/sqrt(pi) exp(-x^2).
Tensor erf_vjp(const Tensor& g, const Tensor& x, const Tensor&) {
  return mul(g * (2.0 * std::numbers::inv_sqrtpi), exp(neg(square(x))));
}

}  // namespace

void register_unary_rules(RuleTable& t) {
  using ir::OpKind;
  t.set(OpKind::neg, unary_rule<neg_vjp>);
  t.set(OpKind::abs, unary_rule<abs_vjp>);
  t.set(OpKind::sign, no_gradient);
  t.set(OpKind::exp, unary_rule<exp_vjp>);
  t.set(OpKind::log, unary_rule<log_vjp>);
  t.set(OpKind::log1p, unary_rule<log1p_vjp>);
  t.set(OpKind::expm1, unary_rule<expm1_vjp>);
  t.set(OpKind::sqrt, unary_rule<sqrt_vjp>);
  t.set(OpKind::rsqrt, unary_rule<rsqrt_vjp>);
  t.set(OpKind::reciprocal, unary_rule<reciprocal_vjp>);
  t.set(OpKind::square, unary_rule<square_vjp>);
  t.set(OpKind::sin, unary_rule<sin_vjp>);
  t.set(OpKind::cos, unary_rule<cos_vjp>);
  t.set(OpKind::tan, unary_rule<tan_vjp>);
  t.set(OpKind::tanh, unary_rule<tanh_vjp>);
  t.set(OpKind::sigmoid, unary_rule<sigmoid_vjp>);
  t.set(OpKind::erf, unary_rule<erf_vjp>);
  t.set(OpKind::floor, no_gradient);
  t.set(OpKind::ceil, no_gradient);
  t.set(OpKind::round, no_gradient);
}

}  // namespace tg::autodiff
