// Vector-Jacobian rules of the ternary op family.
#include "autodiff/rules.h"

namespace tg::autodiff {
void register_ternary_rules(RuleTable& t) {}
}  // namespace tg::autodiff
