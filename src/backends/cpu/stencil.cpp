// CPU kernels of the stencil op family. (Being written.)
#include "backends/cpu/cpu_backend.h"

namespace tg::cpu {
void register_stencil_kernels(KernelTable& t) {}
}  // namespace tg::cpu
