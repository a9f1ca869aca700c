// CUDA kernels of the reduce family (to be filled in: a family without kernels makes compile()
// raise tg::Error(unsupported) for its ops on CUDA).
#include "backends/cuda/cuda_backend.h"

namespace tg::cuda {

void register_reduce_kernels(KernelTable& t) {}

}  // namespace tg::cuda
