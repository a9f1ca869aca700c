// CUDA kernel of fused_elementwise. For now step by step through the CUDA elementwise kernels
// (correct, not yet faster); the generated one-kernel version replaces it.
#include "backends/cuda/cuda_backend.h"
#include "backends/fused_stepwise.h"

namespace tg::cuda {

void register_fused_kernels(KernelTable& t) {
  t.set(ir::OpKind::fused_elementwise, [](KernelContext& ctx) { backends::run_fused_stepwise(ctx, kernel_table()); });
}

}  // namespace tg::cuda
