// Vector-Jacobian rules of the conv family. conv2d(x, w) is bilinear, and its two backward ops are
// its partial adjoints: for all dy, x, w (one descriptor throughout)
//   <dy, conv2d(x, w)> = <conv2d_backward_data(dy, w), x> = <conv2d_backward_weights(dy, x), w>.
// Every rule follows from these identities:
//   y  = conv2d(x, w):                  dx = backward_data(ct, w),   dw = backward_weights(ct, x)
//   dx = backward_data(dy, w), ct ~ dx: d(dy) = conv2d(ct, w),        dw = backward_weights(dy, ct)
//   dw = backward_weights(dy, x), ct ~ dw: d(dy) = conv2d(x, ct),     dx = backward_data(dy, ct)
// so the second-order ops are again conv ops. x's batch dim may be dynamic, and so may its spatial
// dims: backward_data then resolves them from dy's when the graph is compiled (stride 1) or raises
// there (stride > 1), which only happens if x's gradient is actually computed.
#include "autodiff/rules.h"
#include "ir/attrs.h"

namespace tg::autodiff {
namespace {

void conv2d_rule(VjpContext& c) {
  if (!c.cotangents[0].valid()) return;
  const auto& d = c.attrs<Conv2dDesc>();
  Tensor x = c.inputs[0], w = c.inputs[1], ct = c.cotangents[0];
  c.input_cotangents[0] = conv2d_backward_data(ct, w, x.shape(), d);
  c.input_cotangents[1] = conv2d_backward_weights(ct, x, w.shape(), d);
}

void backward_data_rule(VjpContext& c) {
  if (!c.cotangents[0].valid()) return;
  const auto& a = c.attrs<ir::ConvBackwardAttrs>();
  Tensor dy = c.inputs[0], w = c.inputs[1], ct = c.cotangents[0];
  c.input_cotangents[0] = conv2d(ct, w, a.conv);
  c.input_cotangents[1] = conv2d_backward_weights(dy, ct, w.shape(), a.conv);
}

void backward_weights_rule(VjpContext& c) {
  if (!c.cotangents[0].valid()) return;
  const auto& a = c.attrs<ir::ConvBackwardAttrs>();
  Tensor dy = c.inputs[0], x = c.inputs[1], ct = c.cotangents[0];
  c.input_cotangents[0] = conv2d(x, ct, a.conv);
  c.input_cotangents[1] = conv2d_backward_data(dy, ct, x.shape(), a.conv);
}

}  // namespace

void register_conv_rules(RuleTable& t) {
  t.set(ir::OpKind::conv2d, conv2d_rule);
  t.set(ir::OpKind::conv2d_backward_data, backward_data_rule);
  t.set(ir::OpKind::conv2d_backward_weights, backward_weights_rule);
}

}  // namespace tg::autodiff
