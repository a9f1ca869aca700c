// CPU kernels of the reduce op family. (Being written.)
#include "backends/cpu/cpu_backend.h"

namespace tg::cpu {
void register_reduce_kernels(KernelTable& t) {}
}  // namespace tg::cpu
