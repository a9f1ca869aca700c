// The gather op family: dtype/shape rules and builders. (Being written.)
#include "ops/builder.h"

namespace tg::ops {
void register_gather_ops(OpRegistry& r) {}
}  // namespace tg::ops
