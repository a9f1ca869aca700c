// The CUDA backend's backends::ControlRecorder (control_recorder.cpp): control flow as CUDA graph
// conditional nodes. The same object serves every device (the calls act on the stream given).
#pragma once
#include "backends/control_recording.h"

namespace tg::cuda {

const backends::ControlRecorder& control_recorder();

/// ControlRecorder::hold_pool for the calling thread's capture pool (allocator.cpp); no effect
/// outside a recording.
void hold_capture_pool(bool hold);

}  // namespace tg::cuda
