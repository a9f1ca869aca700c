// Sharing TensorGraph's devices with other libraries: the stream TensorGraph's GPU work runs on and
// waiting for it, for zero-copy exchange of device memory (DLPack with PyTorch, JAX, CuPy; see
// TensorData::from_external and the Python package's __dlpack__ / from_dlpack).
#pragma once
#include "tg/device.h"
#include "tg/export.h"

namespace tg {

/// The CUDA stream (a cudaStream_t, passed opaquely) that TensorGraph queues its work for `device`
/// on: one non-blocking stream per device, shared by every run, copy and kernel that does not get
/// RunOptions::cuda_stream. Another library orders its work before TensorGraph's by making this
/// stream wait for its own (an event), as a DLPack producer does when a consumer passes it this
/// stream. Raises tg::Error(unsupported) for the CPU, a build without the CUDA backend, or a CUDA
/// device this machine does not have.
TG_API void* device_stream(Device device);

/// Waits until the work TensorGraph has queued for `device` so far (runs, copies) has finished, so
/// its results can be read on any stream. A no-op for the CPU. Raises tg::Error(internal) naming
/// the CUDA error when a kernel failed, tg::Error(unsupported) for a device without a backend.
TG_API void synchronize(Device device);

}  // namespace tg
