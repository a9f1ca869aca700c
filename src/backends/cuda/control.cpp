// CUDA kernels of the control family: the CPU's interpreting kernels (device-agnostic: the
// predicate or trip count is read back to the host, then the taken region runs on the GPU).
// Control flow that stays on the GPU (CUDA graph conditional nodes) is later work.
#include "backends/cpu/cpu_backend.h"
#include "backends/cuda/cuda_backend.h"

namespace tg::cuda {

void register_control_kernels(KernelTable& t) { cpu::register_control_kernels(t); }

}  // namespace tg::cuda
