// Builders and type inference of the pool op family (stub: filled in by issue 4).
#include "ops/builder.h"

namespace tg::ops {
void register_pool_ops(OpRegistry& r) { (void)r; }
}  // namespace tg::ops
