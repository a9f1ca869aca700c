#include "backends/cpu/cpu_backend.h"

#include <cstring>

#include "core/allocator.h"
#include "core/error_util.h"

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

// Everything happens when it is called: streams are ignored, copies are memcpy, and kernels raise
// their errors on the host (no device error record).
class CpuBackend final : public backends::Backend {
 public:
  Device device() const override { return Device::cpu(); }
  const KernelTable& kernels() const override { return kernel_table(); }
  std::shared_ptr<void> allocate(size_t bytes) const override { return host_allocate(bytes); }
  void copy(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes, void*) const override {
    if (bytes == 0) return;
    if (dst_device.is_cpu() && src_device.is_cpu()) {
      std::memcpy(dst, src, bytes);
      return;
    }
    // A feed on a GPU for a CPU executable.
    TensorData from = TensorData::from_external(const_cast<void*>(src), {static_cast<int64_t>(bytes)}, DType::u8,
                                                src_device, nullptr);
    TensorData host = from.to(Device::cpu());
    std::memcpy(dst, host.storage_ptr(), bytes);
  }
  void fill_zero(void* dst, size_t bytes, void*) const override { std::memset(dst, 0, bytes); }
  void commit(std::span<const backends::CommitCopy> copies, const backends::DeviceErrorRecord*,
              void*) const override {
    for (const auto& c : copies) std::memmove(c.dst, c.src, c.bytes);
  }
  backends::DeviceErrorRecord read_error(const backends::DeviceErrorRecord* record, void*) const override {
    return record ? *record : backends::DeviceErrorRecord{};
  }
};

}  // namespace

const backends::Backend& cpu_backend() {
  static const CpuBackend backend;
  return backend;
}

}  // namespace tg::cpu
