// Vector-Jacobian rules of the conv op family (stub: filled in by issue 4).
#include "autodiff/rules.h"

namespace tg::autodiff {
void register_conv_rules(RuleTable& t) { (void)t; }
}  // namespace tg::autodiff
