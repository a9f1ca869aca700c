#include "tg/device.h"

#include "core/device_runtime.h"
#include "core/env.h"
#include "tg/error.h"

namespace tg {

Device Device::default_device() {
  if (auto o = env::device_override()) {
    if (*o == "cpu") return cpu();
    if (*o == "cuda") {
      if (cuda_device_count() == 0) {
        throw Error(ErrorCode::unsupported,
                    "[device] TG_DEVICE=cuda, but no CUDA GPU is usable (build without the CUDA "
                    "backend, no driver, or no GPU)");
      }
      return cuda(0);
    }
    throw Error(ErrorCode::invalid_argument, "[device] TG_DEVICE must be 'cpu' or 'cuda', not '" + *o + "'");
  }
  return cuda_device_count() > 0 ? cuda(0) : cpu();
}

int Device::cuda_device_count() {
  const core::DeviceRuntime* rt = core::device_runtime(Kind::cuda);
  return rt == nullptr ? 0 : rt->device_count();
}

std::string Device::to_string() const {
  return is_cpu() ? std::string("cpu") : "cuda:" + std::to_string(index);
}

}  // namespace tg
