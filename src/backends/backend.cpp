#include "backends/backend.h"

#include "backends/cpu/cpu_backend.h"
#include "core/error_util.h"
#ifdef TG_HAVE_CUDA
#include "backends/cuda/cuda_backend.h"
#endif

namespace tg::backends {

const Backend& backend_for(Device device) {
  if (device.is_cpu()) return cpu::cpu_backend();
#ifdef TG_HAVE_CUDA
  if (device.is_cuda()) return cuda::cuda_backend(device.index);
#endif
  fail(ErrorCode::unsupported, "device", "no backend for {} in this build", device.to_string());
}

}  // namespace tg::backends
