// Vector-Jacobian rules of the binary op family. Each operand's cotangent is computed in the
// broadcast output shape and summed back to the operand's shape (unbroadcast). Comparisons,
// logical ops and floor_div are not differentiable; integer operands get no gradient.
#include "autodiff/rules.h"

namespace tg::autodiff {
namespace {

/// The output cotangent when a gradient flows into this (floating) node, else an invalid Tensor.
Tensor flowing(const VjpContext& c) {
  if (!c.cotangents[0].valid() || !is_floating(c.inputs[0].dtype())) return {};
  return c.cotangents[0];
}

/// Sets both operands' cotangents from their broadcast-shaped values.
void set_both(VjpContext& c, const Tensor& ga, const Tensor& gb) {
  c.input_cotangents[0] = unbroadcast(ga, c.inputs[0].shape());
  c.input_cotangents[1] = unbroadcast(gb, c.inputs[1].shape());
}

/// A 0-d constant of t's dtype.
Tensor scalar(const Tensor& t, double value) {
  Graph g(t.graph_impl());
  return g.constant(value, t.dtype());
}

void add_rule(VjpContext& c) {
  if (Tensor g = flowing(c); g.valid()) set_both(c, g, g);
}

void sub_rule(VjpContext& c) {
  if (Tensor g = flowing(c); g.valid()) set_both(c, g, neg(g));
}

void mul_rule(VjpContext& c) {
  if (Tensor g = flowing(c); g.valid()) set_both(c, mul(g, c.inputs[1]), mul(g, c.inputs[0]));
}

/// d/da = 1/b, d/db = -a/b^2 = -(a/b)/b, computed as (g/b) * (a/b) to avoid overflowing b^2.
void div_rule(VjpContext& c) {
  Tensor g = flowing(c);
  if (!g.valid()) return;
  Tensor g_over_b = div(g, c.inputs[1]);
  set_both(c, g_over_b, neg(mul(g_over_b, c.outputs[0])));
}

/// d/da = b a^(b-1), taken as 0 where b == 0; d/db = log(a) a^b, taken as 0 where a == 0 (JAX),
/// and NaN where a < 0 (log of a negative number).
void pow_rule(VjpContext& c) {
  Tensor g = flowing(c);
  if (!g.valid()) return;
  const Tensor& a = c.inputs[0];
  const Tensor& b = c.inputs[1];
  Tensor zero = scalar(a, 0.0);
  Tensor da = select(equal(b, zero), zero, mul(b, pow(a, b - 1.0)));
  Tensor db = select(equal(a, zero), zero, mul(log(a), c.outputs[0]));
  set_both(c, mul(g, da), mul(g, db));
}

/// maximum and minimum: the cotangent goes to the operand equal to the result; on a tie each
/// operand gets half (JAX). A NaN result passes no gradient to either operand.
void extremum_rule(VjpContext& c) {
  Tensor g = flowing(c);
  if (!g.valid()) return;
  Tensor zero = scalar(g, 0.0);
  Tensor half = g * 0.5;
  Tensor a_wins = equal(c.inputs[0], c.outputs[0]);
  Tensor b_wins = equal(c.inputs[1], c.outputs[0]);
  set_both(c, select(a_wins, select(b_wins, half, g), zero),
           select(b_wins, select(a_wins, half, g), zero));
}

/// mod(a, b) = a - trunc(a/b) b: d/da = 1, d/db = -trunc(a/b).
void mod_rule(VjpContext& c) {
  Tensor g = flowing(c);
  if (!g.valid()) return;
  Tensor q = div(c.inputs[0], c.inputs[1]);
  Tensor trunc_q = select(less(q, scalar(q, 0.0)), ceil(q), floor(q));
  set_both(c, g, neg(mul(g, trunc_q)));
}

/// floor_mod(a, b) = a - floor(a/b) b: d/da = 1, d/db = -floor(a/b).
void floor_mod_rule(VjpContext& c) {
  Tensor g = flowing(c);
  if (!g.valid()) return;
  set_both(c, g, neg(mul(g, floor_div(c.inputs[0], c.inputs[1]))));
}

/// atan2(y, x): d/dy = x / (x^2 + y^2), d/dx = -y / (x^2 + y^2) (NaN at the origin).
void atan2_rule(VjpContext& c) {
  Tensor g = flowing(c);
  if (!g.valid()) return;
  const Tensor& y = c.inputs[0];
  const Tensor& x = c.inputs[1];
  Tensor s = div(g, add(square(x), square(y)));
  set_both(c, mul(s, x), neg(mul(s, y)));
}

}  // namespace

void register_binary_rules(RuleTable& t) {
  using ir::OpKind;
  t.set(OpKind::add, add_rule);
  t.set(OpKind::sub, sub_rule);
  t.set(OpKind::mul, mul_rule);
  t.set(OpKind::div, div_rule);
  t.set(OpKind::pow, pow_rule);
  t.set(OpKind::maximum, extremum_rule);
  t.set(OpKind::minimum, extremum_rule);
  t.set(OpKind::mod, mod_rule);
  t.set(OpKind::floor_mod, floor_mod_rule);
  t.set(OpKind::atan2, atan2_rule);
}

}  // namespace tg::autodiff
