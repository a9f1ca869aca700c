// Vector-Jacobian rules of the pool op family.
//   max_pool2d:          dx = max_pool2d_backward(cotangent, x): each output's cotangent goes to
//                        the first maximal element of its window (a subgradient at ties).
//   avg_pool2d:          dx = avg_pool2d_backward(cotangent, x).
//   avg_pool2d_backward: linear in dy with the window/divisor of the forward op, so its adjoint
//                        is avg_pool2d itself: d(dy) = avg_pool2d(cotangent); x only gives the
//                        shape and gets no gradient.
// max_pool2d_backward is not differentiable (its result is piecewise constant in x).
#include "autodiff/rules.h"
#include "ir/attrs.h"

namespace tg::autodiff {
namespace {

void max_pool2d_rule(VjpContext& c) {
  Tensor x = c.inputs[0], ct = c.cotangents[0];
  if (!ct.valid() || !is_floating(x.dtype())) return;
  c.input_cotangents[0] = max_pool2d_backward(ct, x, c.attrs<Pool2dDesc>());
}

void avg_pool2d_rule(VjpContext& c) {
  Tensor x = c.inputs[0], ct = c.cotangents[0];
  if (!ct.valid() || !is_floating(x.dtype())) return;
  c.input_cotangents[0] = avg_pool2d_backward(ct, x, c.attrs<Pool2dDesc>());
}

void avg_pool2d_backward_rule(VjpContext& c) {
  Tensor ct = c.cotangents[0];
  if (!ct.valid() || !is_floating(c.inputs[0].dtype())) return;
  c.input_cotangents[0] = avg_pool2d(ct, c.attrs<Pool2dDesc>());
}

}  // namespace

void register_pool_rules(RuleTable& t) {
  t.set(ir::OpKind::max_pool2d, max_pool2d_rule);
  t.set(ir::OpKind::avg_pool2d, avg_pool2d_rule);
  t.set(ir::OpKind::avg_pool2d_backward, avg_pool2d_backward_rule);
}

}  // namespace tg::autodiff
