// Vector-Jacobian rules of the binary op family.
#include "autodiff/rules.h"

namespace tg::autodiff {
void register_binary_rules(RuleTable& t) {}
}  // namespace tg::autodiff
