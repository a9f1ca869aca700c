// Vector-Jacobian rules of the unary op family.
#include "autodiff/rules.h"

namespace tg::autodiff {
void register_unary_rules(RuleTable& t) {}
}  // namespace tg::autodiff
