// CIFAR-10 binary batches: records of 1 label byte + 3072 bytes of a 32x32x3 image (CHW).
#include <filesystem>

#include "data/reader.h"

namespace tg::data {
namespace {

constexpr std::string_view kOp = "cifar10";
constexpr int64_t kClasses = 10;
constexpr int64_t kSide = 32;
constexpr int64_t kChannels = 3;
constexpr int64_t kImageBytes = kSide * kSide * kChannels;  // 3072
constexpr int64_t kRecordBytes = 1 + kImageBytes;            // 3073

struct Batch {
  std::string path;
  std::vector<uint8_t> bytes;
  int64_t records = 0;
};

Batch read_batch(const std::string& path) {
  Batch b{path, detail::read_file(path, kOp), 0};
  if (b.bytes.size() % kRecordBytes != 0) {
    detail::file_fail(ErrorCode::invalid_argument, kOp, path,
                      "size {} bytes is not a multiple of the {}-byte record (1 label byte + "
                      "{} image bytes); truncated or not a CIFAR-10 binary batch",
                      b.bytes.size(), kRecordBytes, kImageBytes);
  }
  b.records = static_cast<int64_t>(b.bytes.size()) / kRecordBytes;
  return b;
}

// Writes record `r` of `b` as example `i` of `out` (pixels / 255, in out's layout).
void copy_record(const Batch& b, int64_t r, int64_t i, Dataset& out) {
  const uint8_t* rec = b.bytes.data() + r * kRecordBytes;
  if (rec[0] >= kClasses) {
    detail::file_fail(ErrorCode::invalid_argument, kOp, b.path,
                      "label {} of record {} is outside [0, {})", rec[0], r, kClasses);
  }
  out.labels.data<int64_t>()[i] = rec[0];
  const uint8_t* chw = rec + 1;
  float* dst = out.images.data<float>() + i * kImageBytes;
  if (out.layout == Layout::nchw) {
    for (int64_t k = 0; k < kImageBytes; ++k) dst[k] = static_cast<float>(chw[k]) / 255.f;
    return;
  }
  for (int64_t c = 0; c < kChannels; ++c) {
    for (int64_t p = 0; p < kSide * kSide; ++p) {
      dst[p * kChannels + c] = static_cast<float>(chw[c * kSide * kSide + p]) / 255.f;
    }
  }
}

}  // namespace

Dataset load_cifar10(const std::vector<std::string>& batch_paths, const LoadOptions& options) {
  detail::check_options(options, kOp);
  if (batch_paths.empty()) fail(ErrorCode::invalid_argument, kOp, "no batch files given");
  std::vector<Batch> batches;
  int64_t total = 0;
  for (const std::string& path : batch_paths) {
    batches.push_back(read_batch(path));
    total += batches.back().records;
  }
  const int64_t n = detail::kept_count(total, options);
  Dataset out;
  out.num_classes = kClasses;
  out.layout = options.layout;
  out.labels = TensorData({n}, DType::i64);
  out.images = TensorData(options.layout == Layout::nhwc ? Shape{n, kSide, kSide, kChannels}
                                                         : Shape{n, kChannels, kSide, kSide},
                          DType::f32);
  int64_t i = 0;
  for (const Batch& b : batches) {
    for (int64_t r = 0; r < b.records && i < n; ++r, ++i) copy_record(b, r, i, out);
  }
  return out;
}

Dataset load_cifar10_dir(const std::string& dir, Split split, const LoadOptions& options) {
  namespace fs = std::filesystem;
  std::vector<std::string> paths;
  if (split == Split::test) {
    paths.push_back((fs::path(dir) / "test_batch.bin").string());
  } else {
    for (int k = 1; k <= 5; ++k) {
      paths.push_back((fs::path(dir) / ("data_batch_" + std::to_string(k) + ".bin")).string());
    }
  }
  return load_cifar10(paths, options);
}

}  // namespace tg::data
