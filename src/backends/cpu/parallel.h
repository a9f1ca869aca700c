// Multi-threading for CPU kernels: core/parallel.h's helpers in the CPU backend's namespace.
#pragma once
#include "core/parallel.h"

namespace tg::cpu {
using core::kGrain;
using core::num_threads;
using core::parallel_for;
}  // namespace tg::cpu
