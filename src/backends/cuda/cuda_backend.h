// The CUDA backend: the runtime's contract (backends/backend.h) on NVIDIA GPUs: a table of CUDA
// kernels, one file per op family (src/backends/cuda/<family>.cpp), device code in
// kernels/*.cu and device/*.cuh, run-time generated kernels through nvrtc/.
#pragma once
#include "backends/backend.h"
#include "backends/kernel.h"

namespace tg::cuda {

using backends::Kernel;
using backends::KernelContext;
using backends::KernelTable;

/// Every family's CUDA kernels.
const KernelTable& kernel_table();
/// The backend for cuda:`device`; raises tg::Error(unsupported) when that GPU is not there.
const backends::Backend& cuda_backend(int device);

#define TG_DECLARE_CUDA_REGISTER_KERNELS(family) void register_##family##_kernels(KernelTable& t);
TG_OP_FAMILIES(TG_DECLARE_CUDA_REGISTER_KERNELS)
#undef TG_DECLARE_CUDA_REGISTER_KERNELS

}  // namespace tg::cuda
