// Vector-Jacobian rules of the random op family.
#include "autodiff/rules.h"

namespace tg::autodiff {
void register_random_rules(RuleTable& t) {}
}  // namespace tg::autodiff
