#include "backends/cuda/cuda_backend.h"

#include <deque>
#include <mutex>

#include "backends/cuda/context.h"
#include "backends/interpreter.h"
#include "core/error_util.h"

namespace tg::cuda {

const KernelTable& kernel_table() {
  static const KernelTable table = [] {
    KernelTable t;
#define TG_CALL_CUDA_REGISTER_KERNELS(family) register_##family##_kernels(t);
    TG_OP_FAMILIES(TG_CALL_CUDA_REGISTER_KERNELS)
#undef TG_CALL_CUDA_REGISTER_KERNELS
    t.synchronize = [](Device d) { cuda::synchronize(d.index); };
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
