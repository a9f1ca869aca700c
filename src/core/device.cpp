#include "tg/device.h"

#include "core/device_runtime.h"
#include "core/env.h"
#include "tg/error.h"
#include "tg/interop.h"

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

namespace {
const core::DeviceRuntime& runtime_of(Device device, const char* what) {
  const core::DeviceRuntime* rt = core::device_runtime(device.kind);
  if (rt == nullptr || device.index < 0 || device.index >= rt->device_count()) {
    throw Error(ErrorCode::unsupported, std::string("[") + what + "] no usable device " + device.to_string() +
                                            " (build without the CUDA backend, no driver, or no such GPU)");
  }
  return *rt;
}
}  // namespace

void* device_stream(Device device) {
  if (device.is_cpu()) throw Error(ErrorCode::unsupported, "[device_stream] the CPU has no stream");
  return runtime_of(device, "device_stream").stream(device.index);
}

void synchronize(Device device) {
  if (device.is_cpu()) return;
  runtime_of(device, "synchronize").synchronize(device.index);
}

}  // namespace tg
