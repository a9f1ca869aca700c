// Vector-Jacobian rules of the variable family: a read passes its cotangent to the variable.
#include "autodiff/rules.h"

namespace tg::autodiff {
void register_variable_rules(RuleTable& t) {
  t.set(ir::OpKind::read_variable, [](VjpContext& c) { c.input_cotangents[0] = c.cotangents[0]; });
}
}  // namespace tg::autodiff
