// Data augmentation on in-memory datasets.
#include <cstring>

#include "data/reader.h"
#include "data/splitmix.h"

namespace tg::data {

Dataset random_shift(const Dataset& dataset, int64_t max_shift, uint64_t seed) {
  if (max_shift < 0) fail(ErrorCode::invalid_argument, "random_shift", "max_shift must be >= 0, got {}", max_shift);
  Dataset out = dataset;
  if (dataset.images.empty()) return out;
  out.images = dataset.images.clone();
  const Shape& s = dataset.images.shape();
  const bool nhwc = dataset.layout == Layout::nhwc;
  const int64_t n = s[0], h = nhwc ? s[1] : s[2], w = nhwc ? s[2] : s[3], c = nhwc ? s[3] : s[1];
  // Offsets in elements between neighbouring rows / columns, and between channels.
  const int64_t row = nhwc ? w * c : w, col = nhwc ? c : 1, chan = nhwc ? 1 : h * w;
  const int64_t per_image = h * w * c;
  const float* src = dataset.images.data<float>();
  float* dst = out.images.data<float>();
  std::memset(dst, 0, static_cast<size_t>(n * per_image) * sizeof(float));
  detail::SplitMix64 rng(seed);
  const auto span = static_cast<uint64_t>(2 * max_shift + 1);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t dy = static_cast<int64_t>(rng.next() % span) - max_shift;
    const int64_t dx = static_cast<int64_t>(rng.next() % span) - max_shift;
    const float* a = src + i * per_image;
    float* b = dst + i * per_image;
    for (int64_t y = std::max<int64_t>(0, dy); y < std::min(h, h + dy); ++y) {
      for (int64_t x = std::max<int64_t>(0, dx); x < std::min(w, w + dx); ++x) {
        for (int64_t k = 0; k < c; ++k) b[y * row + x * col + k * chan] = a[(y - dy) * row + (x - dx) * col + k * chan];
      }
    }
  }
  return out;
}

}  // namespace tg::data
