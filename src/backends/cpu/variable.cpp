// The variable family (variable, read_variable, assign_variable) runs in the runtime, which owns
// the variables' buffers and the run's transaction (src/runtime/run_results.cpp): no CPU kernels.
#include "backends/cpu/cpu_backend.h"

namespace tg::cpu {

void register_variable_kernels(KernelTable&) {}

}  // namespace tg::cpu
