// CPU kernels of fused_elementwise, fused_reduce and fused_stencil: step by step through the CPU's own elementwise kernels (the
// CPU backend does not ask for fusion; this runs when TG_FUSION=1 forces it, e.g. to test the pass).
#include "backends/cpu/cpu_backend.h"
#include "backends/fused_stepwise.h"

namespace tg::cpu {

void register_fused_kernels(KernelTable& t) {
  t.set(ir::OpKind::fused_elementwise, [](KernelContext& ctx) { backends::run_fused_stepwise(ctx, kernel_table()); });
  t.set(ir::OpKind::fused_reduce, [](KernelContext& ctx) { backends::run_fused_reduce_stepwise(ctx, kernel_table()); });
  t.set(ir::OpKind::fused_stencil, [](KernelContext& ctx) { backends::run_fused_stencil_stepwise(ctx, kernel_table()); });
}

}  // namespace tg::cpu
