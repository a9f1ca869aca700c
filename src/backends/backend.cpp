#include "backends/backend.h"

#include "backends/cpu/cpu_backend.h"
#include "core/error_util.h"

namespace tg::backends {

const Backend& backend_for(Device device) {
  if (device.is_cpu()) return cpu::cpu_backend();
  fail(ErrorCode::unsupported, "device", "no backend for {} in this build", device.to_string());
}

}  // namespace tg::backends
