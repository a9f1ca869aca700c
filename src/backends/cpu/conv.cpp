// CPU kernels of the conv op family (stub: filled in by issue 4).
#include "backends/cpu/cpu_backend.h"

namespace tg::cpu {
void register_conv_kernels(KernelTable& t) { (void)t; }
}  // namespace tg::cpu
