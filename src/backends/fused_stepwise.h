// A fused_elementwise node run step by step through a backend's own kernels (one kernel and one
// temporary per step): the reference for generated fused kernels, and the CPU's implementation.
#pragma once
#include "backends/kernel.h"

namespace tg::backends {

/// Runs ctx's fused_elementwise node with `table`'s broadcast_to, unary/binary/ternary/cast
/// kernels (inputs first broadcast to the program's shape), and for row-reduction steps
/// (ir/fused_rows.h) its reduce_sum / reduce_max over the last axis, broadcast back.
void run_fused_stepwise(KernelContext& ctx, const KernelTable& table);
/// Runs ctx's fused_reduce node: the program as run_fused_stepwise, then `table`'s reduce_sum
/// kernel on each output value.
void run_fused_reduce_stepwise(KernelContext& ctx, const KernelTable& table);
/// Runs ctx's fused_stencil node (ir::FusedStencilAttrs) stage by stage: the prologue as
/// run_fused_stepwise, `table`'s stencil kernel (constant weights cast from float64 by its cast
/// kernel), then the epilogue. Each stage's temporary is a new tensor on ctx.device.
void run_fused_stencil_stepwise(KernelContext& ctx, const KernelTable& table);

}  // namespace tg::backends
