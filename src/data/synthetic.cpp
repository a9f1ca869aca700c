// A seeded synthetic image-classification task (class prototypes plus uniform noise).
#include <cmath>
#include <utility>

#include "data/reader.h"
#include "data/splitmix.h"

namespace tg::data {
namespace {

constexpr std::string_view kOp = "synthetic";

using detail::SplitMix64;

void check(const SyntheticOptions& o) {
  if (o.num_examples < 0 || o.height <= 0 || o.width <= 0 || o.channels <= 0) {
    fail(ErrorCode::invalid_argument, kOp,
         "num_examples must be >= 0 and height, width, channels > 0, got {} examples of {}x{}x{}",
         o.num_examples, o.height, o.width, o.channels);
  }
  if (o.num_classes < 1) fail(ErrorCode::invalid_argument, kOp, "num_classes must be >= 1, got {}", o.num_classes);
  if (!(o.noise >= 0.0 && o.noise <= 1.0)) {
    fail(ErrorCode::invalid_argument, kOp, "noise must be in [0, 1], got {}", o.noise);
  }
  if (o.layout != Layout::nhwc && o.layout != Layout::nchw) {
    fail(ErrorCode::invalid_argument, kOp, "layout must be nhwc or nchw");
  }
}

// Balanced labels (i mod classes) in a Fisher-Yates shuffled order.
std::vector<int64_t> shuffled_labels(int64_t n, int64_t classes, SplitMix64& rng) {
  std::vector<int64_t> labels(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) labels[static_cast<size_t>(i)] = i % classes;
  for (int64_t i = n - 1; i > 0; --i) {
    auto j = static_cast<int64_t>(rng.next() % static_cast<uint64_t>(i + 1));
    std::swap(labels[static_cast<size_t>(i)], labels[static_cast<size_t>(j)]);
  }
  return labels;
}

}  // namespace

Dataset make_synthetic(const SyntheticOptions& o) {
  check(o);
  const int64_t n = o.num_examples, h = o.height, w = o.width, c = o.channels;
  const int64_t pixels = h * w * c;
  SplitMix64 task_rng(o.seed);
  std::vector<float> prototypes(static_cast<size_t>(o.num_classes * pixels));
  for (float& p : prototypes) p = task_rng.uniform();
  // A distinct stream per (seed, sample_seed): the sample seed passes through one mixing round.
  SplitMix64 sample_rng(SplitMix64(o.sample_seed ^ 0x5851F42D4C957F2Dull).next() ^ o.seed);
  Dataset out;
  out.num_classes = o.num_classes;
  out.layout = o.layout;
  std::vector<int64_t> labels = shuffled_labels(n, o.num_classes, sample_rng);
  out.labels = TensorData::from_vector<int64_t>(labels, {n});
  out.images = TensorData(o.layout == Layout::nhwc ? Shape{n, h, w, c} : Shape{n, c, h, w}, DType::f32);
  float* dst = out.images.data<float>();
  const auto keep = static_cast<float>(1.0 - o.noise), noise = static_cast<float>(o.noise);
  for (int64_t i = 0; i < n; ++i) {
    const float* proto = prototypes.data() + labels[static_cast<size_t>(i)] * pixels;
    float* image = dst + i * pixels;
    for (int64_t p = 0; p < pixels; ++p) {  // p walks [H, W, C] order in both layouts
      const int64_t ch = p % c, hw = p / c;
      const int64_t at = o.layout == Layout::nhwc ? p : ch * h * w + hw;
      image[at] = keep * proto[p] + noise * sample_rng.uniform();
    }
  }
  return out;
}

}  // namespace tg::data
