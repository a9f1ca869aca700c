// Vector-Jacobian rules of the matmul op family.
#include "autodiff/rules.h"

namespace tg::autodiff {
void register_matmul_rules(RuleTable& t) {}
}  // namespace tg::autodiff
