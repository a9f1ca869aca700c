// Vector-Jacobian rules of the shape op family.
#include "autodiff/rules.h"

namespace tg::autodiff {
void register_shape_rules(RuleTable& t) {}
}  // namespace tg::autodiff
