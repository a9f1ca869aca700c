// CPU kernels of the random op family. (Being written.)
#include "backends/cpu/cpu_backend.h"

namespace tg::cpu {
void register_random_kernels(KernelTable& t) {}
}  // namespace tg::cpu
