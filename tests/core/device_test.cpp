// Device naming, default-device selection through TG_DEVICE, and the caching host allocator.
#include <cstdlib>
#include <optional>
#include <string>

#include "core/allocator.h"
#include "test_util.h"

namespace tg {
namespace {

/// Sets (or unsets, for nullopt) TG_DEVICE for the scope and restores the previous value.
class ScopedDeviceEnv {
 public:
  explicit ScopedDeviceEnv(std::optional<std::string> value) {
    if (const char* old = std::getenv("TG_DEVICE")) old_ = std::string(old);
    if (value) {
      setenv("TG_DEVICE", value->c_str(), 1);
    } else {
      unsetenv("TG_DEVICE");
    }
  }
  ~ScopedDeviceEnv() {
    if (old_) {
      setenv("TG_DEVICE", old_->c_str(), 1);
    } else {
      unsetenv("TG_DEVICE");
    }
  }
  ScopedDeviceEnv(const ScopedDeviceEnv&) = delete;
  ScopedDeviceEnv& operator=(const ScopedDeviceEnv&) = delete;

 private:
  std::optional<std::string> old_;
};

TEST(Device, ToStringAndEquality) {
  EXPECT_EQ(Device::cpu().to_string(), "cpu");
  EXPECT_EQ(Device::cuda().to_string(), "cuda:0");
  EXPECT_EQ(Device::cuda(3).to_string(), "cuda:3");
  EXPECT_TRUE(Device::cpu().is_cpu());
  EXPECT_FALSE(Device::cpu().is_cuda());
  EXPECT_TRUE(Device::cuda(1).is_cuda());
  EXPECT_EQ(Device::cuda(1), Device::cuda(1));
  EXPECT_NE(Device::cuda(0), Device::cuda(1));
  EXPECT_NE(Device::cpu(), Device::cuda(0));
  EXPECT_EQ(Device{}, Device::cpu());
}

TEST(Device, DefaultDeviceWithoutOverrideIsCudaWhenAGpuIsThere) {
  ScopedDeviceEnv env(std::nullopt);
  EXPECT_EQ(Device::default_device(), Device::cuda_device_count() > 0 ? Device::cuda(0) : Device::cpu());
}

TEST(Device, DefaultDeviceHonorsTgDevice) {
  {
    ScopedDeviceEnv env(std::string("cpu"));
    EXPECT_EQ(Device::default_device(), Device::cpu());
  }
  {
    ScopedDeviceEnv env(std::string(""));  // empty counts as unset
    EXPECT_EQ(Device::default_device(), Device::cuda_device_count() > 0 ? Device::cuda(0) : Device::cpu());
  }
}

TEST(Device, InvalidTgDeviceRaises) {
  ScopedDeviceEnv env(std::string("tpu"));
  EXPECT_TG_ERROR(Device::default_device(), ErrorCode::invalid_argument, "TG_DEVICE");
  EXPECT_TG_ERROR(Device::default_device(), ErrorCode::invalid_argument, "'tpu'");
}

TEST(Device, TgDeviceCudaGivesTheGpuOrRaisesWithoutOne) {
  ScopedDeviceEnv env(std::string("cuda"));
  if (Device::cuda_device_count() > 0) {
    EXPECT_EQ(Device::default_device(), Device::cuda(0));
  } else {
    EXPECT_TG_ERROR(Device::default_device(), ErrorCode::unsupported, "[device]");
  }
}

TEST(HostAllocator, FreedBlocksAreReusedFromTheCache) {
  const size_t bytes = (size_t{3} << 20) + 5;  // size class: 4 MiB
  void* first = nullptr;
  {
    std::shared_ptr<void> a = host_allocate(bytes);
    first = a.get();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
  }
  HostAllocatorStats before = host_allocator_stats();
  EXPECT_GE(before.bytes_cached, size_t{4} << 20);
  std::shared_ptr<void> b = host_allocate(bytes);
  HostAllocatorStats after = host_allocator_stats();
  EXPECT_EQ(b.get(), first);  // the block just freed comes back
  EXPECT_EQ(after.cache_hits, before.cache_hits + 1);
  EXPECT_EQ(after.allocations, before.allocations + 1);
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use + (size_t{4} << 20));
  EXPECT_EQ(after.bytes_cached, before.bytes_cached - (size_t{4} << 20));
}

TEST(HostAllocator, SizeClasses) {
  auto in_use_delta = [](size_t bytes) {
    size_t base = host_allocator_stats().bytes_in_use;
    std::shared_ptr<void> p = host_allocate(bytes);
    return host_allocator_stats().bytes_in_use - base;
  };
  EXPECT_EQ(in_use_delta(0), 64u);
  EXPECT_EQ(in_use_delta(1), 64u);
  EXPECT_EQ(in_use_delta(100), 128u);
  EXPECT_EQ(in_use_delta(4096), 4096u);
  EXPECT_EQ(in_use_delta((size_t{1} << 20) + 1), size_t{2} << 20);
  EXPECT_EQ(in_use_delta((size_t{5} << 20) + 1), size_t{6} << 20);
}

TEST(HostAllocator, PeakAndTrim) {
  host_allocator_reset_peak();
  HostAllocatorStats s0 = host_allocator_stats();
  EXPECT_EQ(s0.peak_bytes_in_use, s0.bytes_in_use);
  {
    std::shared_ptr<void> a = host_allocate(size_t{2} << 20);
    std::shared_ptr<void> b = host_allocate(size_t{2} << 20);
  }
  HostAllocatorStats s1 = host_allocator_stats();
  EXPECT_EQ(s1.bytes_in_use, s0.bytes_in_use);
  EXPECT_EQ(s1.peak_bytes_in_use, s0.bytes_in_use + (size_t{4} << 20));
  host_allocator_reset_peak();
  EXPECT_EQ(host_allocator_stats().peak_bytes_in_use, s1.bytes_in_use);
  host_allocator_trim();
  EXPECT_EQ(host_allocator_stats().bytes_cached, 0u);
  // TensorData storage goes through the same allocator.
  size_t base = host_allocator_stats().bytes_in_use;
  {
    TensorData t({1024}, DType::f32);
    EXPECT_EQ(host_allocator_stats().bytes_in_use, base + 4096);
  }
  EXPECT_EQ(host_allocator_stats().bytes_in_use, base);
}

}  // namespace
}  // namespace tg
