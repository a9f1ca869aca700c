// MNIST-style datasets: IDX u8 images [N, H, W] and u8 labels [N].
#include <filesystem>

#include "data/reader.h"

namespace tg::data {
namespace {

constexpr std::string_view kOp = "mnist";
constexpr int64_t kMnistClasses = 10;

void check_u8_rank(const TensorData& t, int64_t rank, const std::string& path, const char* what) {
  if (t.dtype() != DType::u8 || t.rank() != rank) {
    detail::file_fail(ErrorCode::invalid_argument, kOp, path,
                      "{} must be an IDX u8 array of rank {}, got {}{}", what, rank,
                      dtype_name(t.dtype()), shape_to_string(t.shape()));
  }
}

// `dir`/name.gz when it exists, else `dir`/name; not_found when neither does.
std::string find_file(const std::string& dir, const std::string& name) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path gz = fs::path(dir) / (name + ".gz");
  fs::path plain = fs::path(dir) / name;
  if (fs::exists(gz, ec)) return gz.string();
  if (fs::exists(plain, ec)) return plain.string();
  fail(ErrorCode::not_found, kOp, "neither {} nor {} exists", gz.string(), plain.string());
}

}  // namespace

Dataset load_mnist(const std::string& images_path, const std::string& labels_path,
                   const LoadOptions& options) {
  detail::check_options(options, kOp);
  TensorData images = read_idx(images_path);
  check_u8_rank(images, 3, images_path, "images");
  TensorData labels = read_idx(labels_path);
  check_u8_rank(labels, 1, labels_path, "labels");
  if (images.shape()[0] != labels.shape()[0]) {
    fail(ErrorCode::invalid_argument, kOp, "{} holds {} images but {} holds {} labels",
         images_path, images.shape()[0], labels_path, labels.shape()[0]);
  }
  const int64_t n = detail::kept_count(labels.shape()[0], options);
  const int64_t h = images.shape()[1], w = images.shape()[2];
  const uint8_t* label_bytes = labels.data<uint8_t>();
  Dataset out;
  out.num_classes = kMnistClasses;
  out.layout = options.layout;
  out.labels = TensorData({n}, DType::i64);
  int64_t* label_out = out.labels.data<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    if (label_bytes[i] >= kMnistClasses) {
      detail::file_fail(ErrorCode::invalid_argument, kOp, labels_path,
                        "label {} of example {} is outside [0, {})", label_bytes[i], i,
                        kMnistClasses);
    }
    label_out[i] = label_bytes[i];
  }
  // With one channel, NHWC and NCHW hold the same bytes in the same order.
  Shape shape = options.layout == Layout::nhwc ? Shape{n, h, w, 1} : Shape{n, 1, h, w};
  out.images = TensorData(shape, DType::f32);
  const uint8_t* pixels = images.data<uint8_t>();
  float* dst = out.images.data<float>();
  for (int64_t i = 0, total = n * h * w; i < total; ++i) dst[i] = static_cast<float>(pixels[i]) / 255.f;
  return out;
}

Dataset load_mnist_dir(const std::string& dir, Split split, const LoadOptions& options) {
  const std::string prefix = split == Split::train ? "train" : "t10k";
  const std::string images = find_file(dir, prefix + "-images-idx3-ubyte");
  const std::string labels = find_file(dir, prefix + "-labels-idx1-ubyte");
  return load_mnist(images, labels, options);
}

}  // namespace tg::data
