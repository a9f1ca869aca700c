// Vector-Jacobian rules of the gather op family.
#include "autodiff/rules.h"

namespace tg::autodiff {
void register_gather_rules(RuleTable& t) {}
}  // namespace tg::autodiff
