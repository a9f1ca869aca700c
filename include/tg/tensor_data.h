// Concrete tensor values.
#pragma once
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "tg/device.h"
#include "tg/error.h"
#include "tg/export.h"
#include "tg/shape.h"

namespace tg {

/// A dense row-major tensor value on a device. Copies share the same storage (like a
/// shared_ptr); values are treated as immutable once produced. Shapes are always static here.
class TG_API TensorData {
 public:
  TensorData() = default;
  /// Uninitialized storage for `shape` x `dtype` on `device`. Raises tg::Error(invalid_argument)
  /// for a dynamic or negative dim, tg::Error(unsupported) for a device without a backend (or a
  /// CUDA device this machine does not have), tg::Error(out_of_memory) when the device has too
  /// little free memory (the message gives the bytes asked for and free).
  TensorData(Shape shape, DType dtype, Device device = Device::cpu());

  /// Copies `values` into a new host tensor of `shape` (row-major). Raises
  /// tg::Error(shape_mismatch) when values.size() differs from the shape's element count.
  template <typename T>
  static TensorData from_vector(const std::vector<T>& values, Shape shape) {
    if constexpr (std::is_same_v<T, bool>) {
      std::vector<uint8_t> bytes(values.begin(), values.end());
      return from_bytes(bytes.data(), bytes.size(), DType::bool_, std::move(shape));
    } else {
      return from_bytes(values.data(), values.size(), dtype_of_v<T>, std::move(shape));
    }
  }
  template <typename T>
  static TensorData from_vector(std::initializer_list<T> values, Shape shape) {
    std::vector<T> v(values);
    return from_vector<T>(v, std::move(shape));
  }
  /// Wraps `bytes`-addressable memory at `data` on `device` (a host pointer, or a device pointer
  /// for CUDA) as a tensor of `shape` x `dtype` without copying, for interoperation (DLPack
  /// producers, the runtime's arenas). `owner` keeps the memory alive for as long as any copy of
  /// the result lives (it may be null when the caller guarantees that). The memory must be at
  /// least 16-byte aligned and hold nbytes() bytes. Raises tg::Error(invalid_argument) for a null
  /// `data` with a non-empty shape or a dynamic dim.
  static TensorData from_external(void* data, Shape shape, DType dtype, Device device,
                                  std::shared_ptr<void> owner);

  /// A 0-d tensor holding `value`.
  template <typename T> static TensorData scalar(T value) { return from_vector<T>({value}, {}); }
  /// Every element equal to `value` (converted to `dtype` as a cast would).
  static TensorData full(Shape shape, DType dtype, double value);
  static TensorData zeros(Shape shape, DType dtype = DType::f32) { return full(shape, dtype, 0.0); }
  /// Uniform on [low, high) from the counter-based Philox4x32-10 generator (Salmon et al., SC'11),
  /// identical to tg::random_uniform with the same seed on every backend. Floating dtypes only.
  static TensorData random_uniform(Shape shape, float low, float high, uint64_t seed,
                                   DType dtype = DType::f32);
  /// Normal(mean, stddev) from Philox4x32-10 with the Box-Muller transform, identical to
  /// tg::random_normal with the same seed. Floating dtypes only.
  static TensorData random_normal(Shape shape, float mean, float stddev, uint64_t seed,
                                  DType dtype = DType::f32);

  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  TensorType type() const { return {shape_, dtype_}; }
  Device device() const { return device_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t num_elements() const { return tg::num_elements(shape_); }
  size_t nbytes() const { return static_cast<size_t>(num_elements()) * dtype_size(dtype_); }
  /// True for a default-constructed TensorData that holds nothing.
  bool empty() const { return !storage_; }

  /// Raw host pointer (CPU tensors only; raises tg::Error(unsupported) otherwise).
  void* raw_data();
  const void* raw_data() const;
  template <typename T> T* data() {
    check_access(dtype_of_v<T>);
    return static_cast<T*>(raw_data());
  }
  template <typename T> const T* data() const {
    check_access(dtype_of_v<T>);
    return static_cast<const T*>(raw_data());
  }
  /// The values in row-major order; T must match dtype() (raises tg::Error(dtype_mismatch)).
  template <typename T> std::vector<T> to_vector() const {
    TensorData host = to(Device::cpu());
    const T* p = host.data<T>();
    return std::vector<T>(p, p + host.num_elements());
  }
  /// Address of the first element on the tensor's device (a device pointer for CUDA tensors), for
  /// backends; nullptr when empty.
  const void* storage_ptr() const { return storage_.get(); }
  void* storage_ptr() { return storage_.get(); }
  /// The shared storage block (copies and reshaped views share it).
  const std::shared_ptr<void>& storage() const { return storage_; }
  /// Element i (row-major) converted to double, for tests and printing (copies a device tensor
  /// to the host first).
  double element_as_double(int64_t i) const;
  /// Copy on `device` (the same object when already there). Host<->device copies go through
  /// pinned staging buffers and are complete when this returns.
  TensorData to(Device device) const;
  /// A deep copy on the same device.
  TensorData clone() const;
  /// Same storage viewed with another shape of equal element count.
  TensorData reshaped(Shape shape) const;
  /// A short human-readable rendering: "f32[2,2] {1, 2, 3, 4}" (at most `max_elements`).
  std::string to_string(int64_t max_elements = 16) const;

 private:
  static TensorData from_bytes(const void* data, size_t count, DType dtype, Shape shape);
  void check_access(DType requested) const;

  std::shared_ptr<void> storage_;
  Shape shape_;
  DType dtype_ = DType::f32;
  Device device_;
};

}  // namespace tg
