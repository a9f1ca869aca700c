// CPU kernels of the gather op family. (Being written.)
#include "backends/cpu/cpu_backend.h"

namespace tg::cpu {
void register_gather_kernels(KernelTable& t) {}
}  // namespace tg::cpu
