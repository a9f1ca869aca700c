// CPU kernels of the pool op family (stub: filled in by issue 4).
#include "backends/cpu/cpu_backend.h"

namespace tg::cpu {
void register_pool_kernels(KernelTable& t) { (void)t; }
}  // namespace tg::cpu
