#include "tg/device.h"

#include "core/env.h"
#include "tg/error.h"

namespace tg {

Device Device::default_device() {
  if (auto o = env::device_override()) {
    if (*o == "cpu") return cpu();
    if (*o == "cuda") {
      throw Error(ErrorCode::unsupported,
                  "[device] TG_DEVICE=cuda, but this build has no CUDA backend yet");
    }
    throw Error(ErrorCode::invalid_argument, "[device] TG_DEVICE must be 'cpu' or 'cuda', not '" + *o + "'");
  }
  return cpu();  // the CUDA backend is not built yet
}

std::string Device::to_string() const {
  return is_cpu() ? std::string("cpu") : "cuda:" + std::to_string(index);
}

}  // namespace tg
