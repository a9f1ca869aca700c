// CUDA kernels of the variable family: the CPU's kernels, which only move TensorData handles; the
// run's VariableTransaction (made for the CUDA device) keeps variables on the GPU across runs.
#include "backends/cpu/cpu_backend.h"
#include "backends/cuda/cuda_backend.h"

namespace tg::cuda {

void register_variable_kernels(KernelTable& t) { cpu::register_variable_kernels(t); }

}  // namespace tg::cuda
