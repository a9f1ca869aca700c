// The control family runs in the runtime (src/runtime/control_flow.cpp): no CUDA kernels.
#include "backends/cuda/cuda_backend.h"

namespace tg::cuda {

void register_control_kernels(KernelTable&) {}

}  // namespace tg::cuda
