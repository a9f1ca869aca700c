// Helpers of the reliability tests (tests/reliability): devices to run on, bit-exact comparison,
// process memory figures.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "tg/tg.h"

namespace tg::testing {

/// The CPU, and cuda:0 when this build and machine have one.
inline std::vector<Device> test_devices() {
  std::vector<Device> d = {Device::cpu()};
  if (Device::cuda_device_count() > 0) d.push_back(Device::cuda(0));
  return d;
}

/// True when both tensors have the same type and the same bytes (host copies compared).
inline bool bit_identical(const TensorData& a, const TensorData& b) {
  if (a.type() != b.type()) return false;
  TensorData ha = a.to(Device::cpu()), hb = b.to(Device::cpu());
  return ha.nbytes() == hb.nbytes() && std::memcmp(ha.raw_data(), hb.raw_data(), ha.nbytes()) == 0;
}

/// Resident set size of this process in bytes (VmRSS of /proc/self/status; 0 when unknown).
inline int64_t resident_bytes() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;  // "VmRSS:  1234 kB"
  }
  return 0;
}

/// Whether the environment variable `name` is "1": the long versions of the reliability tests.
inline bool long_runs_enabled() {
  const char* v = std::getenv("TG_LONG_TESTS");
  return v && std::string(v) == "1";
}

}  // namespace tg::testing
