// The shipped real-MNIST subset data/mnist (see data/README.md): counts, the split rule's label
// histogram and order, and the pixel range.
#include <cmath>

#include "test_util.h"
#include "tg/data.h"
#include "test_paths.h"

namespace tg {
namespace {

const std::string kDir = std::string(TG_SOURCE_DIR) + "/data/mnist";

TEST(ShippedMnist, TrainSplitCountsAndHistogram) {
  data::Dataset train = data::load_mnist_dir(kDir, data::Split::train);
  EXPECT_EQ(train.images.shape(), (Shape{8000, 28, 28, 1}));
  EXPECT_EQ(train.size(), 8000);
  // Per digit: the package's count (1001, 1127, 991, 1032, 980, 863, 1014, 1070, 944, 978) - 200.
  EXPECT_EQ(data::label_histogram(train),
            (std::vector<int64_t>{801, 927, 791, 832, 780, 663, 814, 870, 744, 778}));
  // Round-robin interleave: the first round is 0..9, and the last images are all 1s (927 is the
  // largest count; 870 is the next, so the final 57 rounds hold only digit 1).
  std::vector<int64_t> labels = train.labels.to_vector<int64_t>();
  for (int i = 0; i < 10; ++i) EXPECT_EQ(labels[i], i);
  for (int i = 8000 - 57; i < 8000; ++i) ASSERT_EQ(labels[i], 1) << i;
  EXPECT_EQ(labels[8000 - 58], 7);
}

TEST(ShippedMnist, TestSplitIsBalancedAndInterleaved) {
  data::Dataset test = data::load_mnist_dir(kDir, data::Split::test, {.layout = Layout::nchw});
  EXPECT_EQ(test.images.shape(), (Shape{2000, 1, 28, 28}));
  EXPECT_EQ(data::label_histogram(test), std::vector<int64_t>(10, 200));
  std::vector<int64_t> labels = test.labels.to_vector<int64_t>();
  for (int i = 0; i < 2000; ++i) ASSERT_EQ(labels[i], i % 10) << i;
}

TEST(ShippedMnist, PixelsAreBytesScaledToUnitRange) {
  data::Dataset test = data::load_mnist_dir(kDir, data::Split::test);
  std::vector<float> px = test.images.to_vector<float>();
  float lo = 1.f, hi = 0.f;
  double sum = 0;
  for (float v : px) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
    const double level = static_cast<double>(v) * 255.0;
    ASSERT_NEAR(level, std::round(level), 1e-4);  // every value is byte / 255
  }
  EXPECT_EQ(lo, 0.f);
  EXPECT_EQ(hi, 1.f);
  // MNIST digits are white strokes on black: the mean intensity is about 0.13.
  EXPECT_GT(sum / static_cast<double>(px.size()), 0.08);
  EXPECT_LT(sum / static_cast<double>(px.size()), 0.2);
}

}  // namespace
}  // namespace tg
