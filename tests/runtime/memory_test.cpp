// Buffers are released after their last reader: a long chain over a large tensor keeps only a
// couple of intermediate values alive at a time.
#include <cmath>

#include "core/allocator.h"
#include "test_util.h"

namespace tg {
namespace {

TEST(Memory, ChainReleasesIntermediatesAfterTheirLastUse) {
  constexpr int64_t kN = int64_t{1} << 20;        // 1M f32 elements
  constexpr size_t kBytes = size_t{4} << 20;      // 4 MiB per tensor (an exact size class)
  constexpr int kSteps = 20;
  Graph g;
  Tensor x = g.placeholder({kN}, DType::f32, "x");
  Tensor y = x;
  for (int i = 0; i < kSteps; ++i) y = (i % 2 == 0) ? sin(y) : neg(y);
  TensorData input = TensorData::full({kN}, DType::f32, 0.5);
  // Warm-up run: compiles and caches the executable outside the measured section.
  g.run({{x, input}}, {y}, {}, Device::cpu());

  size_t base = host_allocator_stats().bytes_in_use;
  host_allocator_reset_peak();
  TensorData out = g.run({{x, input}}, {y}, {}, Device::cpu())[0];
  HostAllocatorStats s = host_allocator_stats();
  // Without release the chain would hold 20 tensors (80 MiB); with it, a step holds its input
  // and its output.
  EXPECT_LE(s.peak_bytes_in_use - base, 2 * kBytes) << "peak " << s.peak_bytes_in_use << " base " << base;
  EXPECT_LT(s.peak_bytes_in_use - base, 4 * kBytes);
  // After the run only the result is alive, in the buffer the warm-up run's result (released)
  // left with the executable's instance (docs/design/0010): nothing more is held than before.
  EXPECT_EQ(s.bytes_in_use, base);
  // While `out` is held, the next run's result takes one new buffer, and only that.
  TensorData again = g.run({{x, input}}, {y}, {}, Device::cpu())[0];
  EXPECT_EQ(host_allocator_stats().bytes_in_use - base, kBytes);
  EXPECT_NE(again.storage_ptr(), out.storage_ptr());

  // The values are right: ten rounds of x -> -sin(x).
  double v = static_cast<double>(0.5f);
  for (int i = 0; i < kSteps; ++i) v = (i % 2 == 0) ? std::sin(v) : -v;
  EXPECT_NEAR(out.element_as_double(0), v, 1e-5);
  EXPECT_NEAR(out.element_as_double(kN - 1), v, 1e-5);
}

TEST(Memory, ValueIsKeptUntilItsLastReader) {
  constexpr int64_t kN = int64_t{1} << 18;   // 1 MiB of f32
  constexpr size_t kBytes = size_t{1} << 20;
  Graph g;
  Tensor x = g.placeholder({kN}, DType::f32, "x");
  Tensor a = exp(x);            // read by b and, at the very end, by d
  Tensor b = neg(a);
  Tensor c = sqrt(b);
  Tensor d = neg(a);
  TensorData input = TensorData::zeros({kN});
  std::vector<TensorData> warm = g.run({{x, input}}, {c, d}, {}, Device::cpu());
  size_t base = host_allocator_stats().bytes_in_use;
  host_allocator_reset_peak();
  std::vector<TensorData> out = g.run({{x, input}}, {c, d}, {}, Device::cpu());
  // a, b, c alive together at most (b is released after c), then a, c, d.
  EXPECT_LE(host_allocator_stats().peak_bytes_in_use - base, 3 * kBytes);
  EXPECT_EQ(host_allocator_stats().bytes_in_use - base, 2 * kBytes);  // c and d
  EXPECT_TRUE(std::isnan(out[0].element_as_double(5)));               // sqrt(-1)
  EXPECT_EQ(out[1].element_as_double(5), -1.0);
}

}  // namespace
}  // namespace tg
