// Vector-Jacobian rules of the source op family.
#include "autodiff/rules.h"

namespace tg::autodiff {
void register_source_rules(RuleTable& t) {}
}  // namespace tg::autodiff
