// Devices that hold tensors and run executables.
#pragma once
#include <string>

#include "tg/export.h"

namespace tg {

/// A compute device: the host CPU or CUDA GPU number `index`.
struct TG_API Device {
  enum class Kind { cpu, cuda };
  Kind kind = Kind::cpu;
  int index = 0;

  static Device cpu() { return {Kind::cpu, 0}; }
  static Device cuda(int index = 0) { return {Kind::cuda, index}; }
  /// CUDA device 0 when a GPU and the CUDA backend are present, otherwise the CPU. The
  /// environment variable TG_DEVICE=cpu|cuda overrides the choice.
  static Device default_device();
  /// Number of CUDA GPUs usable by this build (0 without the CUDA backend, a driver, or a GPU).
  static int cuda_device_count();

  bool is_cpu() const { return kind == Kind::cpu; }
  bool is_cuda() const { return kind == Kind::cuda; }
  /// "cpu" or "cuda:0".
  std::string to_string() const;
  friend bool operator==(const Device&, const Device&) = default;
};

}  // namespace tg
