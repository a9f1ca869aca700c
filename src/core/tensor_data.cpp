#include "tg/tensor_data.h"

#include <fmt/format.h>

#include <cstring>

#include "core/allocator.h"
#include "core/convert.h"
#include "core/device_runtime.h"
#include "core/error_util.h"
#include "core/philox.h"

namespace tg {

TensorData::TensorData(Shape shape, DType dtype, Device device)
    : shape_(std::move(shape)), dtype_(dtype), device_(device) {
  int64_t bytes = static_cast<int64_t>(dtype_size(dtype));
  for (int64_t d : shape_) {
    if (d < 0) {
      fail(ErrorCode::invalid_argument, "tensor_data", "shape {} has a dynamic or negative dim",
           str(shape_));
    }
    if (__builtin_mul_overflow(bytes, d, &bytes)) {
      fail(ErrorCode::invalid_argument, "tensor_data", "shape {} of {} is too large to address",
           str(shape_), dtype_name(dtype));
    }
  }
  if (device.is_cpu()) {
    storage_ = host_allocate(nbytes());
    return;
  }
  const core::DeviceRuntime* rt = core::device_runtime(device.kind);
  if (rt == nullptr) {
    fail(ErrorCode::unsupported, "tensor_data", "device {} has no backend in this build", device.to_string());
  }
  storage_ = rt->allocate(device.index, nbytes());
}

TensorData TensorData::from_external(void* data, Shape shape, DType dtype, Device device,
                                     std::shared_ptr<void> owner) {
  TensorData t;
  t.shape_ = std::move(shape);
  t.dtype_ = dtype;
  t.device_ = device;
  for (int64_t d : t.shape_) {
    if (d < 0) fail(ErrorCode::invalid_argument, "tensor_data", "shape {} has a dynamic or negative dim", str(t.shape_));
  }
  if (data == nullptr) {
    if (t.num_elements() != 0) fail(ErrorCode::invalid_argument, "tensor_data", "null data for shape {}", str(t.shape_));
    alignas(64) static char empty_block[64];
    data = empty_block;
  }
  // The aliasing constructor: the storage points at `data` and shares ownership with `owner`.
  t.storage_ = std::shared_ptr<void>(std::move(owner), data);
  return t;
}

namespace core {
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes) {
  if (bytes == 0) return;
  if (dst_device.is_cpu() && src_device.is_cpu()) {
    std::memcpy(dst, src, bytes);
    return;
  }
  const Device& accel = dst_device.is_cpu() ? src_device : dst_device;
  const core::DeviceRuntime* rt = core::device_runtime(accel.kind);
  if (rt == nullptr) {
    fail(ErrorCode::unsupported, "tensor_data", "copy from {} to {} is not supported in this build",
         src_device.to_string(), dst_device.to_string());
  }
  rt->copy(dst, dst_device, src, src_device, bytes);
}
}  // namespace core

TensorData TensorData::from_bytes(const void* data, size_t count, DType dtype, Shape shape) {
  int64_t n = tg::num_elements(shape);
  if (n < 0 || static_cast<size_t>(n) != count) {
    fail(ErrorCode::shape_mismatch, "from_vector", "{} values do not fill shape {} ({} elements)",
         count, str(shape), n);
  }
  TensorData t(std::move(shape), dtype);
  if (count) std::memcpy(t.raw_data(), data, t.nbytes());
  return t;
}

TensorData TensorData::full(Shape shape, DType dtype, double value) {
  TensorData t(std::move(shape), dtype);
  int64_t n = t.num_elements();
  void* p = t.raw_data();
  for (int64_t i = 0; i < n; ++i) store_from_double(dtype, p, i, value);
  return t;
}

namespace {
TensorData random_tensor(Shape shape, DType dtype, bool normal, double a, double b, uint64_t seed,
                         const char* op) {
  if (!is_floating(dtype)) {
    fail(ErrorCode::dtype_mismatch, op, "dtype {} is not floating", dtype_name(dtype));
  }
  TensorData t(std::move(shape), dtype);
  int64_t n = t.num_elements();
  void* p = t.raw_data();
  // Same element values as the random ops' kernels (philox::uniform_value / normal_value).
  auto generate = [&](auto* out) {
    using T = std::remove_pointer_t<decltype(out)>;
    for (int64_t i = 0; i < n; ++i) {
      auto k = static_cast<uint64_t>(i);
      out[i] = normal ? philox::normal_value<T>(seed, k, a, b) : philox::uniform_value<T>(seed, k, a, b);
    }
  };
  switch (dtype) {
    case DType::f64: generate(static_cast<double*>(p)); break;
    case DType::f16: generate(static_cast<f16_t*>(p)); break;
    case DType::bf16: generate(static_cast<bf16_t*>(p)); break;
    default: generate(static_cast<float*>(p)); break;
  }
  return t;
}
}  // namespace

TensorData TensorData::random_uniform(Shape shape, float low, float high, uint64_t seed, DType dtype) {
  return random_tensor(std::move(shape), dtype, false, low, high, seed, "random_uniform");
}
TensorData TensorData::random_normal(Shape shape, float mean, float stddev, uint64_t seed,
                                     DType dtype) {
  return random_tensor(std::move(shape), dtype, true, mean, stddev, seed, "random_normal");
}

void* TensorData::raw_data() {
  if (!storage_) fail(ErrorCode::invalid_argument, "tensor_data", "empty TensorData has no data");
  return storage_.get();
}
const void* TensorData::raw_data() const {
  if (!storage_) fail(ErrorCode::invalid_argument, "tensor_data", "empty TensorData has no data");
  return storage_.get();
}

void TensorData::check_access(DType requested) const {
  if (requested != dtype_) {
    fail(ErrorCode::dtype_mismatch, "tensor_data", "tensor holds {}, accessed as {}",
         dtype_name(dtype_), dtype_name(requested));
  }
  if (!device_.is_cpu()) {
    fail(ErrorCode::unsupported, "tensor_data", "data on {} is not host-accessible; use to(cpu)",
         device_.to_string());
  }
}

double TensorData::element_as_double(int64_t i) const {
  if (i < 0 || i >= num_elements()) {
    fail(ErrorCode::out_of_range, "tensor_data", "element {} outside {} elements", i, num_elements());
  }
  if (!device_.is_cpu()) return to(Device::cpu()).element_as_double(i);
  return load_as_double(dtype_, raw_data(), i);
}

TensorData TensorData::to(Device device) const {
  if (device == device_ || empty()) {
    if (empty()) {
      TensorData t = *this;
      t.device_ = device;
      return t;
    }
    return *this;
  }
  TensorData t(shape_, dtype_, device);
  core::copy_bytes(t.storage_.get(), device, storage_.get(), device_, nbytes());
  return t;
}

TensorData TensorData::clone() const {
  TensorData t(shape_, dtype_, device_);
  if (!nbytes()) return t;
  if (device_.is_cpu()) {
    std::memcpy(t.raw_data(), raw_data(), nbytes());
    return t;
  }
  core::copy_bytes(t.storage_.get(), device_, storage_.get(), device_, nbytes());
  return t;
}

TensorData TensorData::reshaped(Shape shape) const {
  if (tg::num_elements(shape) != num_elements()) {
    fail(ErrorCode::shape_mismatch, "tensor_data", "cannot view {} as {}", str(shape_), str(shape));
  }
  TensorData t = *this;
  t.shape_ = std::move(shape);
  return t;
}

std::string TensorData::to_string(int64_t max_elements) const {
  std::string out = type().to_string() + " {";
  if (empty()) return out + "empty}";
  int64_t n = num_elements();
  TensorData host = to(Device::cpu());
  for (int64_t i = 0; i < n && i < max_elements; ++i) {
    if (i) out += ", ";
    out += fmt::format("{:g}", host.element_as_double(i));
  }
  if (n > max_elements) out += max_elements > 0 ? ", ..." : "...";
  return out + "}";
}

}  // namespace tg
