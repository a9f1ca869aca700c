#include "backends/cuda/cuda_backend.h"

#include <deque>
#include <mutex>
#include <vector>

#include "backends/cuda/context.h"
#include "backends/interpreter.h"
#include "core/error_util.h"

namespace tg::cuda {

namespace {

// Timing events of TG_PROFILE, reused.
std::mutex& event_pool_mu() {
  static std::mutex mu;
  return mu;
}
std::vector<cudaEvent_t>& event_pool() {
  static auto* pool = new std::vector<cudaEvent_t>();
  return *pool;
}
cudaEvent_t take_event() {
  {
    std::lock_guard lock(event_pool_mu());
    if (!event_pool().empty()) {
      cudaEvent_t e = event_pool().back();
      event_pool().pop_back();
      return e;
    }
  }
  cudaEvent_t e = nullptr;
  check(cudaEventCreate(&e), "profile", "cudaEventCreate");
  return e;
}

}  // namespace

const KernelTable& kernel_table() {
  static const KernelTable table = [] {
    KernelTable t;
#define TG_CALL_CUDA_REGISTER_KERNELS(family) register_##family##_kernels(t);
    TG_OP_FAMILIES(TG_CALL_CUDA_REGISTER_KERNELS)
#undef TG_CALL_CUDA_REGISTER_KERNELS
    t.synchronize = [](Device d) { cuda::synchronize(d.index); };
    t.record_event = [](Device d) -> void* {
      cudaEvent_t e = take_event();
      check(cudaEventRecord(e, activate(d.index).stream), "profile", "cudaEventRecord");
      return e;
    };
    t.event_ms = [](void* from, void* to) {
      float ms = 0;
      check(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(from), static_cast<cudaEvent_t>(to)), "profile",
            "cudaEventElapsedTime");
      return static_cast<double>(ms);
    };
    t.release_event = [](void* e) {
      std::lock_guard lock(event_pool_mu());
      event_pool().push_back(static_cast<cudaEvent_t>(e));
    };
    return t;
  }();
  return table;
}

namespace {

class CudaBackend final : public backends::Backend {
 public:
  explicit CudaBackend(int device) : device_(device) {}
  Device device() const override { return Device::cuda(device_); }
  bool supports(const ir::Node& node) const override {
    return node.kind == ir::OpKind::placeholder || kernel_table().get(node.kind) != nullptr;
  }
  bool fuses_elementwise() const override { return true; }
  std::unique_ptr<backends::Program> lower(std::shared_ptr<const backends::PlannedGraph> plan) const override {
    activate(device_);
    return backends::make_interpreter(std::move(plan), Device::cuda(device_), kernel_table());
  }

 private:
  int device_;
};

}  // namespace

const backends::Backend& cuda_backend(int device) {
  check_device(device);
  static std::mutex mu;
  static auto* backends = new std::deque<CudaBackend>;
  std::lock_guard<std::mutex> lock(mu);
  for (const CudaBackend& b : *backends) {
    if (b.device().index == device) return b;
  }
  return backends->emplace_back(device);
}

}  // namespace tg::cuda
