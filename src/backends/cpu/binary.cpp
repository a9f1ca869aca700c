// CPU kernels of the binary op family. (Being written.)
#include "backends/cpu/cpu_backend.h"

namespace tg::cpu {
void register_binary_kernels(KernelTable& t) {}
}  // namespace tg::cpu
