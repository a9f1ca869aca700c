// The interpreter every backend lowers to: it runs a planned graph step by step through the
// backend's kernel table, allocating outputs on the backend's device, freeing values after their
// last use, running control-flow regions on demand, and committing variable assignments only when
// the whole run succeeded.
#pragma once
#include <memory>

#include "backends/backend.h"
#include "backends/kernel.h"

namespace tg::backends {

/// A Program that interprets `plan` on `device` with `kernels` (which must outlive it).
std::unique_ptr<Program> make_interpreter(std::shared_ptr<const PlannedGraph> plan, Device device,
                                          const KernelTable& kernels);

}  // namespace tg::backends
