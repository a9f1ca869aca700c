// Operations on in-memory datasets.
#include <cstring>

#include "data/reader.h"

namespace tg::data {

Dataset slice(const Dataset& dataset, int64_t begin, int64_t end) {
  if (dataset.images.empty()) return dataset;  // an empty Dataset{}
  const int64_t n = dataset.size();
  begin = std::clamp<int64_t>(begin, 0, n);
  end = std::clamp<int64_t>(end, begin, n);
  const int64_t count = end - begin;
  Dataset out;
  out.num_classes = dataset.num_classes;
  out.layout = dataset.layout;
  Shape image_shape = dataset.images.shape();
  image_shape[0] = count;
  out.images = TensorData(image_shape, DType::f32);
  out.labels = TensorData({count}, DType::i64);
  const int64_t per_image = n == 0 ? 0 : dataset.images.num_elements() / n;
  if (count > 0) {
    std::memcpy(out.images.data<float>(), dataset.images.data<float>() + begin * per_image,
                static_cast<size_t>(count * per_image) * sizeof(float));
    std::memcpy(out.labels.data<int64_t>(), dataset.labels.data<int64_t>() + begin,
                static_cast<size_t>(count) * sizeof(int64_t));
  }
  return out;
}

std::vector<int64_t> label_histogram(const Dataset& dataset) {
  std::vector<int64_t> counts(static_cast<size_t>(std::max<int64_t>(dataset.num_classes, 0)), 0);
  const int64_t n = dataset.size();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t label = dataset.labels.data<int64_t>()[i];
    if (label >= 0 && label < dataset.num_classes) ++counts[static_cast<size_t>(label)];
  }
  return counts;
}

}  // namespace tg::data
