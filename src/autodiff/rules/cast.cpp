// Vector-Jacobian rules of the cast op family.
#include "autodiff/rules.h"

namespace tg::autodiff {
void register_cast_rules(RuleTable& t) {}
}  // namespace tg::autodiff
