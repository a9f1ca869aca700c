// CPU kernels of the ternary op family. (Being written.)
#include "backends/cpu/cpu_backend.h"

namespace tg::cpu {
void register_ternary_kernels(KernelTable& t) {}
}  // namespace tg::cpu
