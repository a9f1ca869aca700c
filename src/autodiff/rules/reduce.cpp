// Vector-Jacobian rules of the reduce op family (reduce_and/or and argmax/argmin are not
// differentiable; reduce_mean and reduce_variance are composites differentiated through their
// primitives).
//   reduce_sum:  the cotangent broadcast back over the reduced dims.
//   reduce_prod: the cotangent times the product of the other elements of the group, exact with
//                zeros: y / x where the group has no zero; at the one zero of a group with a
//                single zero, the product of the nonzero elements (0 elsewhere in that group);
//                0 everywhere in a group with two zeros or more.
//   reduce_max / reduce_min: the cotangent split equally among the elements equal to the result
//                (ties share it, as JAX does); when the result is NaN it goes to the NaNs.
#include "autodiff/rules.h"

namespace tg::autodiff {
namespace {

using ir::OpKind;

bool wants_gradient(const VjpContext& c) {
  return c.cotangents[0].valid() && is_floating(c.inputs[0].dtype());
}

/// A result of the reduction (cotangent or output) with the reduced dims kept as 1.
Tensor with_kept_dims(Tensor r, const Tensor& x, const ReduceDesc& d) {
  if (d.keep_dims) return r;
  Shape kept = x.shape();
  for (int64_t a : d.axes) kept[static_cast<size_t>(a)] = 1;
  return kept == r.shape() ? r : reshape(r, kept);
}

/// r (kept dims) stretched to x's shape.
Tensor broadcast_like(Tensor r, const Tensor& x) {
  if (is_static(x.shape())) return r.shape() == x.shape() ? r : broadcast_to(r, x.shape());
  return add(r, zeros_like(x));
}

void reduce_sum_rule(VjpContext& c) {
  if (!wants_gradient(c)) return;
  const ReduceDesc& d = c.attrs<ReduceDesc>();
  c.input_cotangents[0] =
      broadcast_like(with_kept_dims(c.cotangents[0], c.inputs[0], d), c.inputs[0]);
}

void reduce_prod_rule(VjpContext& c) {
  if (!wants_gradient(c)) return;
  const ReduceDesc& d = c.attrs<ReduceDesc>();
  const ReduceDesc kept{d.axes, true};
  Tensor x = c.inputs[0];
  const DType t = x.dtype();
  Tensor zero = c.graph.constant(0.0, t), one = c.graph.constant(1.0, t);
  Tensor is_zero = equal(x, zero);
  Tensor nonzero = select(is_zero, one, x);  // x with its zeros replaced by 1
  Tensor prod_nonzero = reduce_prod(nonzero, kept);
  Tensor zeros = reduce_sum(cast(is_zero, t), kept);
  // The product of the other elements of x's group, for each element of x.
  Tensor at_zero = select(equal(zeros, one), prod_nonzero, zero);
  Tensor at_nonzero = select(equal(zeros, zero), div(prod_nonzero, nonzero), zero);
  Tensor others = select(is_zero, at_zero, at_nonzero);
  c.input_cotangents[0] = mul(others, with_kept_dims(c.cotangents[0], x, d));
}

void reduce_extremum_rule(VjpContext& c) {
  if (!wants_gradient(c)) return;
  const ReduceDesc& d = c.attrs<ReduceDesc>();
  Tensor x = c.inputs[0];
  const DType t = x.dtype();
  Tensor y = with_kept_dims(c.outputs[0], x, d);
  // The winners: the elements equal to the result, or the NaNs (a NaN result comes from them).
  Tensor chosen = logical_or(equal(x, y), is_nan(x));
  Tensor count = reduce_sum(cast(chosen, t), {d.axes, true});
  Tensor share = div(with_kept_dims(c.cotangents[0], x, d), count);
  c.input_cotangents[0] = select(chosen, share, c.graph.constant(0.0, t));
}

}  // namespace

void register_reduce_rules(RuleTable& t) {
  t.set(OpKind::reduce_sum, reduce_sum_rule);
  t.set(OpKind::reduce_prod, reduce_prod_rule);
  t.set(OpKind::reduce_max, reduce_extremum_rule);
  t.set(OpKind::reduce_min, reduce_extremum_rule);
}

}  // namespace tg::autodiff
