// Vector-Jacobian rules of the reduce op family.
#include "autodiff/rules.h"

namespace tg::autodiff {
void register_reduce_rules(RuleTable& t) {}
}  // namespace tg::autodiff
