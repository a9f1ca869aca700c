// The CPU backend: a kernel per op (one file per op family), run in schedule order.
#pragma once
#include "backends/backend.h"
#include "backends/kernel.h"

namespace tg::cpu {

using backends::Kernel;
using backends::KernelContext;
using backends::KernelTable;

/// Every family's kernels.
const KernelTable& kernel_table();
const backends::Backend& cpu_backend();

#define TG_DECLARE_REGISTER_KERNELS(family) void register_##family##_kernels(KernelTable& t);
TG_OP_FAMILIES(TG_DECLARE_REGISTER_KERNELS)
#undef TG_DECLARE_REGISTER_KERNELS

}  // namespace tg::cpu
