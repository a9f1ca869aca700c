// Deferred device errors: runs that do not wait for the device to report bad values it found
// (for callers that keep the GPU busy ahead of the host, such as tensorgraph.torch).
#pragma once
#include "tg/export.h"
#include "tg/graph.h"

namespace tg {

/// Deferred device errors, as PyTorch's device-side asserts. An executable whose program checks
/// values on the device (an out-of-range gather or embedding index, an integer division by zero)
/// normally waits for the device at the end of each run to raise such an error from run(). With
/// `deferred` on, a run that replays a recorded CUDA graph does not wait: the device's error
/// record is copied to host memory behind the replay, and the error (the same tg::Error, naming
/// the op, the index and the position) is raised by a later run of the executable before that
/// run queues anything, or by check_device_errors. Until it is raised, the error stays recorded
/// on the device: the failed run's results and those of the runs queued after it are not valid
/// (a bad index reads as 0), and none of those runs commits a variable assignment. A run that
/// walks the nodes (the first runs, or TG_CUDA_GRAPHS=0) still waits and raises its own error; a
/// program without device checks never waits either way; the CPU is unaffected. An error still
/// unraised when the executable is destroyed is printed on stderr (what the host copy holds by
/// then). An executable compiled with disable_type_inference and varying dims (one program per
/// input signature) defers the errors of every signature's program: a run of any signature
/// raises what another signature's runs posted, and a program evicted from the signature cache
/// raises its unraised error at that eviction (waiting for the device). Raises
/// tg::Error(invalid_argument) for an empty executable.
TG_API void set_deferred_device_errors(const Executable& exe, bool deferred);

/// Waits for the device and raises the deferred device error (set_deferred_device_errors) of
/// `exe`'s runs, if one failed; each error is raised once. Runs under way on other threads raise
/// theirs at their next run. A no-op without deferred errors or on the CPU.
TG_API void check_device_errors(const Executable& exe);

}  // namespace tg
