// Vector-Jacobian rules of the cast op family. A cast between floating dtypes passes the
// cotangent back cast to the input's dtype; a cast from or to an integer or bool dtype passes
// none (such values are piecewise constant). stop_gradient has no rule: it is not
// differentiable, so the traversal stops there.
#include "autodiff/rules.h"

namespace tg::autodiff {
namespace {

void cast_rule(VjpContext& c) {
  const Tensor& g = c.cotangents[0];
  DType in = c.inputs[0].dtype();
  if (!g.valid() || !is_floating(in) || !is_floating(g.dtype())) return;
  c.input_cotangents[0] = g.dtype() == in ? g : cast(g, in);
}

}  // namespace

void register_cast_rules(RuleTable& t) { t.set(ir::OpKind::cast, cast_rule); }

}  // namespace tg::autodiff
