// The device the control-flow tests (and the ONNX Loop/If ones) run on: TG_TEST_DEVICE=cuda runs them on cuda:0 (each graph
// runs interpreted first, then from a recorded CUDA graph with conditional nodes); default and
// without a usable GPU: the CPU. scripts/gpu-check runs them both ways.
#pragma once
#include <cstdlib>
#include <string>
#include <vector>

#include "test_util.h"

namespace tg::testing {

inline Device test_device() {
  const char* v = std::getenv("TG_TEST_DEVICE");
  if (v != nullptr && std::string(v) == "cuda" && Device::cuda_device_count() > 0) return Device::cuda(0);
  return Device::cpu();
}

/// run_cpu on test_device(); results are copied to the host.
inline std::vector<TensorData> run_on_test_device(Graph& g, const std::vector<Tensor>& targets, const Feeds& feeds = {}) {
  std::vector<TensorData> out = g.run(feeds, targets, {}, test_device());
  for (TensorData& t : out) t = t.to(Device::cpu());
  return out;
}

/// run1 on test_device().
inline TensorData run1_on_test_device(Graph& g, Tensor target, const Feeds& feeds = {}) {
  return run_on_test_device(g, {target}, feeds)[0];
}

}  // namespace tg::testing
