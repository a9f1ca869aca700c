// The device runtimes core code needs (TensorData's storage and copies, Device's GPU count),
// behind an interface: the CUDA backend implements it, and device_runtime() is defined above
// core (src/backends/registry.cpp), so core includes no backend (docs/design/0005).
#pragma once
#include <cstddef>
#include <memory>

#include "tg/device.h"

namespace tg::core {

class DeviceRuntime {
 public:
  virtual ~DeviceRuntime() = default;
  /// Devices of this kind usable now (0 without a driver or device; never throws).
  virtual int device_count() const = 0;
  /// `bytes` bytes (256-byte aligned) on device `index`, freed when the pointer goes; raises
  /// tg::Error(out_of_memory) with the sizes when the device is full.
  virtual std::shared_ptr<void> allocate(int index, size_t bytes) const = 0;
  /// Copies `bytes` bytes between host memory and this kind's devices in the order of the device's
  /// own stream; a copy to the host is complete on return (it waits for the device).
  virtual void copy(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes) const = 0;
  /// The device's own stream (a cudaStream_t) that TensorGraph's work on it is queued on.
  virtual void* stream(int index) const = 0;
  /// Waits for the work queued on the device's own stream.
  virtual void synchronize(int index) const = 0;
};

/// Copies `bytes` bytes between any two of: host memory and devices (through their runtime, in
/// the order of the device's own stream; a copy to the host waits). Raises
/// tg::Error(unsupported) for a device this build has no runtime for.
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes);

/// The runtime of devices of `kind` (Device::Kind::cuda), or nullptr when this build has none.
const DeviceRuntime* device_runtime(Device::Kind kind);

}  // namespace tg::core
