#include "backends/cpu/cpu_backend.h"

#include "core/error_util.h"
#include "backends/interpreter.h"

namespace tg::cpu {

const KernelTable& kernel_table() {
  static const KernelTable table = [] {
    KernelTable t;
#define TG_CALL_REGISTER_KERNELS(family) register_##family##_kernels(t);
    TG_OP_FAMILIES(TG_CALL_REGISTER_KERNELS)
#undef TG_CALL_REGISTER_KERNELS
    return t;
  }();
  return table;
}

namespace {

class CpuBackend final : public backends::Backend {
 public:
  Device device() const override { return Device::cpu(); }
  bool supports(const ir::Node& node) const override {
    return node.kind == ir::OpKind::placeholder || kernel_table().get(node.kind) != nullptr;
  }
  std::unique_ptr<backends::Program> lower(
      std::shared_ptr<const backends::PlannedGraph> plan) const override {
    return backends::make_interpreter(std::move(plan), Device::cpu(), kernel_table());
  }
};

}  // namespace

const backends::Backend& cpu_backend() {
  static const CpuBackend backend;
  return backend;
}

}  // namespace tg::cpu
