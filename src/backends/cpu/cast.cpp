// CPU kernels of the cast op family. (Being written.)
#include "backends/cpu/cpu_backend.h"

namespace tg::cpu {
void register_cast_kernels(KernelTable& t) {}
}  // namespace tg::cpu
