// Vector-Jacobian rules of the pool op family (stub: filled in by issue 4).
#include "autodiff/rules.h"

namespace tg::autodiff {
void register_pool_rules(RuleTable& t) { (void)t; }
}  // namespace tg::autodiff
