// fused_elementwise exists only in compiled graphs (after autodiff): no rule.
#include "autodiff/rules.h"

namespace tg::autodiff {
void register_fused_rules(RuleTable&) {}
}  // namespace tg::autodiff
