// CPU kernels of the matmul op family. (Being written.)
#include "backends/cpu/cpu_backend.h"

namespace tg::cpu {
void register_matmul_kernels(KernelTable& t) {}
}  // namespace tg::cpu
