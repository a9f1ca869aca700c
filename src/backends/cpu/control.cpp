// The control family (if_else, for_loop, while_loop) runs in the runtime, which interprets the
// regions (src/runtime/control_flow.cpp): no CPU kernels.
#include "backends/cpu/cpu_backend.h"

namespace tg::cpu {

void register_control_kernels(KernelTable&) {}

}  // namespace tg::cpu
