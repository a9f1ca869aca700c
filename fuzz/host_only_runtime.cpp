// For the fuzz targets of the file readers, which link only the core and data layers: no device
// runtime (what src/backends/registry.cpp answers in a build without CUDA), so that they build
// without the rest of the library.
#include "core/device_runtime.h"

namespace tg::core {
const DeviceRuntime* device_runtime(Device::Kind) { return nullptr; }
}  // namespace tg::core
