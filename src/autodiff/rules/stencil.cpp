// Vector-Jacobian rules of the stencil op family.
#include "autodiff/rules.h"

namespace tg::autodiff {
void register_stencil_rules(RuleTable& t) {}
}  // namespace tg::autodiff
