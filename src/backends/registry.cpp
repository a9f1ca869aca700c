// The one file that knows every backend: backend_for() for the runtime, and the device runtimes
// core code reaches through core::device_runtime() (TensorData on a GPU). Everything else
// reaches backends through src/backends/backend.h only.
#include "backends/backend.h"
#include "backends/control_recording.h"
#include "backends/file_upload.h"
#include "backends/cpu/cpu_backend.h"
#include "core/communicator.h"
#include "core/device_runtime.h"
#include "core/error_util.h"
#ifdef TG_HAVE_CUDA
#include "backends/cuda/control_recorder.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/file_upload.h"
#include "backends/cuda/runtime.h"
#endif

#ifdef TG_HAVE_CUDA
namespace tg::cuda {
// src/backends/cuda/collective.cpp
std::shared_ptr<detail::CommGroup> make_nccl_group(int rank, int world_size, int device, const std::string& id_file,
                                                   double timeout_seconds);
}  // namespace tg::cuda
#endif

namespace tg {

namespace backends {
const Backend& backend_for(Device device) {
  if (device.is_cpu()) return cpu::cpu_backend();
#ifdef TG_HAVE_CUDA
  if (device.is_cuda()) return cuda::cuda_backend(device.index);
#endif
  fail(ErrorCode::unsupported, "device", "no backend for {} in this build", device.to_string());
}

const ControlRecorder* control_recorder(Device device) {
#ifdef TG_HAVE_CUDA
  if (device.is_cuda()) return &cuda::control_recorder();
#endif
  return nullptr;
}

std::unique_ptr<FileUpload> start_file_upload(Device device, size_t bytes) {
#ifdef TG_HAVE_CUDA
  if (device.is_cuda()) return cuda::start_file_upload(device.index, bytes);
#endif
  (void)bytes;
  return nullptr;
}
}  // namespace backends

namespace core {
const DeviceRuntime* device_runtime(Device::Kind kind) {
#ifdef TG_HAVE_CUDA
  if (kind == Device::Kind::cuda) return &cuda::device_runtime();
#endif
  return nullptr;
}

std::shared_ptr<detail::CommGroup> make_nccl_group(int rank, int world_size, int device, const std::string& id_file,
                                                   double timeout_seconds) {
#ifdef TG_HAVE_CUDA
  return cuda::make_nccl_group(rank, world_size, device, id_file, timeout_seconds);
#else
  (void)rank, (void)world_size, (void)device, (void)id_file, (void)timeout_seconds;
  fail(ErrorCode::unsupported, "Communicator::nccl", "this build has no CUDA backend (NCCL runs on CUDA devices)");
#endif
}
}  // namespace core

}  // namespace tg
