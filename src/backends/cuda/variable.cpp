// The variable family runs in the runtime, which keeps each variable in one fixed buffer per
// device and commits assignments in place (src/runtime/run_results.cpp): no CUDA kernels.
#include "backends/cuda/cuda_backend.h"

namespace tg::cuda {

void register_variable_kernels(KernelTable&) {}

}  // namespace tg::cuda
