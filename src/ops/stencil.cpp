// The stencil op family: dtype/shape rules and builders. (Being written.)
#include "ops/builder.h"

namespace tg::ops {
void register_stencil_ops(OpRegistry& r) {}
}  // namespace tg::ops
