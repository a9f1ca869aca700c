// CPU kernels of the shape op family. (Being written.)
#include "backends/cpu/cpu_backend.h"

namespace tg::cpu {
void register_shape_kernels(KernelTable& t) {}
}  // namespace tg::cpu
