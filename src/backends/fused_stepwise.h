// A fused_elementwise node run step by step through a backend's own kernels (one kernel and one
// temporary per step): the reference for generated fused kernels, and the CPU's implementation.
#pragma once
#include "backends/kernel.h"

namespace tg::backends {

/// Runs ctx's fused_elementwise node with `table`'s unary/binary/ternary/cast kernels.
void run_fused_stepwise(KernelContext& ctx, const KernelTable& table);

}  // namespace tg::backends
