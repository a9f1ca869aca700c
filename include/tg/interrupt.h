// An interrupt hook for runs that may not end by themselves (a while_loop without
// max_iterations whose predicate stays true), e.g. Ctrl-C in an interactive session.
#pragma once
#include "tg/export.h"

namespace tg {

/// A function the runtime calls between iterations of loops it drives from the host (for_loop
/// and while_loop on the CPU, and on a GPU where a loop runs host-driven) and between the steps
/// of Model::fit's batches. It returns normally to go on, or throws to abort the run: the
/// exception propagates out of run() unchanged, and, as for any failed run, no variable
/// assignment of that run is committed. nullptr (the default) checks nothing. Process-wide and
/// thread-safe to set; the hook itself may be called from any thread that runs a graph, so it
/// must be thread-safe. The Python package installs one that raises KeyboardInterrupt on Ctrl-C.
using InterruptCheck = void (*)();
TG_API void set_interrupt_check(InterruptCheck check);

/// Calls the hook of set_interrupt_check, if one is set (what the host-driven loops call).
TG_API void check_interrupt();

}  // namespace tg
