// MNIST and CIFAR-10 readers on small hand-written files, the synthetic generator, slicing.
#include <optional>
#include <set>

#include "data/files.h"
#include "test_util.h"
#include "tg/data.h"

namespace tg {
namespace {

using testing::idx_u8;
using testing::TempDir;
using testing::write_bytes;

// Expected f32 pixel values: byte / 255 rounded to float, written out per byte.
std::vector<double> scaled(const std::vector<uint8_t>& bytes) {
  std::vector<double> out;
  for (uint8_t b : bytes) out.push_back(static_cast<double>(static_cast<float>(b) / 255.f));
  return out;
}

struct MnistFiles {
  TempDir dir;
  std::string images = dir.file("img.idx");
  std::string labels = dir.file("lbl.idx");
};

// Two 2x3 images: {0, 51, 102, 153, 204, 255} and {255, 0, 1, 2, 3, 128}; labels 7 and 3.
const std::vector<uint8_t> kPixels = {0, 51, 102, 153, 204, 255, 255, 0, 1, 2, 3, 128};

TEST(LoadMnist, ScalesPixelsAndWidensLabels) {
  MnistFiles f;
  write_bytes(f.images, idx_u8({2, 2, 3}, kPixels));
  write_bytes(f.labels, testing::gzip_bytes(idx_u8({2}, {7, 3}), f.dir.file("s.gz")));
  data::Dataset d = data::load_mnist(f.images, f.labels);
  EXPECT_EQ(d.size(), 2);
  EXPECT_EQ(d.num_classes, 10);
  EXPECT_EQ(d.layout, Layout::nhwc);
  EXPECT_EQ(d.image_shape(), (Shape{2, 3, 1}));
  testing::expect_equal(d.images, scaled(kPixels), {2, 2, 3, 1});
  EXPECT_EQ(d.images.element_as_double(1), 0.2f);  // 51 / 255
  EXPECT_EQ(d.labels.dtype(), DType::i64);
  testing::expect_equal(d.labels, {7, 3}, {2});

  data::Dataset nchw = data::load_mnist(f.images, f.labels, {.layout = Layout::nchw});
  testing::expect_equal(nchw.images, scaled(kPixels), {2, 1, 2, 3});
  data::Dataset first = data::load_mnist(f.images, f.labels, {.limit = 1});
  testing::expect_equal(first.images, scaled({0, 51, 102, 153, 204, 255}), {1, 2, 3, 1});
  testing::expect_equal(first.labels, {7}, {1});
}

TEST(LoadMnist, InconsistentFilesAreInvalidArguments) {
  MnistFiles f;
  write_bytes(f.images, idx_u8({2, 2, 3}, kPixels));
  write_bytes(f.labels, idx_u8({3}, {1, 2, 3}));
  EXPECT_TG_ERROR(data::load_mnist(f.images, f.labels), ErrorCode::invalid_argument,
                  "[mnist] " + f.images + " holds 2 images but " + f.labels + " holds 3 labels");
  write_bytes(f.labels, idx_u8({2}, {1, 10}));
  EXPECT_TG_ERROR(data::load_mnist(f.images, f.labels), ErrorCode::invalid_argument,
                  "[mnist] " + f.labels + ": label 10 of example 1 is outside [0, 10)");
  write_bytes(f.labels, idx_u8({1, 2}, {1, 2}));
  EXPECT_TG_ERROR(data::load_mnist(f.images, f.labels), ErrorCode::invalid_argument,
                  "labels must be an IDX u8 array of rank 1, got u8[1,2]");
  write_bytes(f.images, idx_u8({12}, kPixels));
  EXPECT_TG_ERROR(data::load_mnist(f.images, f.labels), ErrorCode::invalid_argument,
                  "images must be an IDX u8 array of rank 3");
  EXPECT_TG_ERROR(data::load_mnist(f.images, f.labels, {.layout = Layout::hwio}),
                  ErrorCode::invalid_argument, "[mnist] layout must be nhwc or nchw");
  EXPECT_TG_ERROR(data::load_mnist(f.images, f.labels, {.limit = -2}), ErrorCode::invalid_argument,
                  "limit must be >= 0 or -1");
  EXPECT_TG_ERROR(data::load_mnist(f.dir.file("none"), f.labels), ErrorCode::not_found, "no such file");
}

TEST(LoadMnist, DirectoryPrefersGzipAndNamesMissingFiles) {
  TempDir dir;
  write_bytes(dir.file("t10k-images-idx3-ubyte"), idx_u8({1, 1, 2}, {0, 255}));
  write_bytes(dir.file("t10k-images-idx3-ubyte.gz"),
              testing::gzip_bytes(idx_u8({1, 1, 2}, {255, 0}), dir.file("s.gz")));
  write_bytes(dir.file("t10k-labels-idx1-ubyte"), idx_u8({1}, {4}));
  data::Dataset d = data::load_mnist_dir(dir.path(), data::Split::test);
  testing::expect_equal(d.images, {1, 0}, {1, 1, 2, 1});
  testing::expect_equal(d.labels, {4}, {1});
  EXPECT_TG_ERROR(data::load_mnist_dir(dir.path(), data::Split::train), ErrorCode::not_found,
                  "train-images-idx3-ubyte.gz nor ");
}

// A CIFAR-10 record: label, then channel-major pixels with value (c * 7 + y * 3 + x) % 256 + seed.
std::vector<uint8_t> cifar_record(uint8_t label, int seed) {
  std::vector<uint8_t> r = {label};
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 32; ++y)
      for (int x = 0; x < 32; ++x) r.push_back(static_cast<uint8_t>((c * 7 + y * 3 + x + seed) % 256));
  return r;
}

TEST(LoadCifar10, ConcatenatesBatchesInBothLayouts) {
  TempDir dir;
  std::vector<uint8_t> a = cifar_record(9, 0), b = cifar_record(0, 100), c = cifar_record(5, 200);
  std::vector<uint8_t> ab = a;
  ab.insert(ab.end(), b.begin(), b.end());
  write_bytes(dir.file("data_batch_1.bin"), ab);
  write_bytes(dir.file("data_batch_2.bin"), c);
  std::vector<std::string> files = {dir.file("data_batch_1.bin"), dir.file("data_batch_2.bin")};
  data::Dataset nhwc = data::load_cifar10(files);
  EXPECT_EQ(nhwc.images.shape(), (Shape{3, 32, 32, 3}));
  testing::expect_equal(nhwc.labels, {9, 0, 5}, {3});
  const float* px = nhwc.images.data<float>();
  for (int i = 0; i < 3; ++i)
    for (int y = 0; y < 32; y += 5)
      for (int x = 0; x < 32; x += 3)
        for (int ch = 0; ch < 3; ++ch) {
          const int byte = (ch * 7 + y * 3 + x + 100 * i) % 256;
          ASSERT_EQ(px[((i * 32 + y) * 32 + x) * 3 + ch], static_cast<float>(byte) / 255.f)
              << i << " " << y << " " << x << " " << ch;
        }
  data::Dataset nchw = data::load_cifar10(files, {.layout = Layout::nchw, .limit = 2});
  EXPECT_EQ(nchw.images.shape(), (Shape{2, 3, 32, 32}));
  std::vector<uint8_t> stored(ab.begin() + 1, ab.begin() + 3073);
  stored.insert(stored.end(), ab.begin() + 3074, ab.end());
  testing::expect_equal(nchw.images, scaled(stored), {2, 3, 32, 32});
}

TEST(LoadCifar10, BadFilesAreNamed) {
  TempDir dir;
  const std::string f = dir.file("test_batch.bin");
  std::vector<uint8_t> rec = cifar_record(3, 0);
  rec.resize(3000);
  write_bytes(f, rec);
  EXPECT_TG_ERROR(data::load_cifar10({f}), ErrorCode::invalid_argument,
                  "[cifar10] " + f + ": size 3000 bytes is not a multiple of the 3073-byte record");
  write_bytes(f, cifar_record(10, 0));
  EXPECT_TG_ERROR(data::load_cifar10_dir(dir.path(), data::Split::test), ErrorCode::invalid_argument,
                  "label 10 of record 0 is outside [0, 10)");
  EXPECT_TG_ERROR(data::load_cifar10({}), ErrorCode::invalid_argument, "[cifar10] no batch files");
  EXPECT_TG_ERROR(data::load_cifar10_dir(dir.path(), data::Split::train), ErrorCode::not_found,
                  "data_batch_1.bin: no such file");
}

TEST(Synthetic, ReproducibleBalancedAndSharedPrototypes) {
  data::SyntheticOptions o{.num_examples = 25, .height = 3, .width = 2, .channels = 2,
                           .num_classes = 10, .noise = 0.25, .seed = 7, .sample_seed = 1};
  data::Dataset a = data::make_synthetic(o), b = data::make_synthetic(o);
  EXPECT_EQ(a.images.shape(), (Shape{25, 3, 2, 2}));
  EXPECT_EQ(a.images.to_vector<float>(), b.images.to_vector<float>());
  EXPECT_EQ(a.labels.to_vector<int64_t>(), b.labels.to_vector<int64_t>());
  EXPECT_EQ(data::label_histogram(a), (std::vector<int64_t>{3, 3, 3, 3, 3, 2, 2, 2, 2, 2}));
  for (float v : a.images.to_vector<float>()) {
    EXPECT_GE(v, 0.f);
    EXPECT_LT(v, 1.f);
  }
  o.sample_seed = 2;
  EXPECT_NE(data::make_synthetic(o).images.to_vector<float>(), a.images.to_vector<float>());
  // Without noise every image is its class prototype, the same in two sample streams.
  o.noise = 0;
  data::Dataset p = data::make_synthetic(o);
  o.sample_seed = 3;
  data::Dataset q = data::make_synthetic(o);
  for (int i = 0; i < 25; ++i) {
    if (p.labels.data<int64_t>()[i] != q.labels.data<int64_t>()[0]) continue;
    std::vector<float> img(p.images.data<float>() + i * 12, p.images.data<float>() + i * 12 + 12);
    EXPECT_EQ(img, std::vector<float>(q.images.data<float>(), q.images.data<float>() + 12));
  }
}

TEST(Synthetic, NchwIsTheTransposeOfNhwc) {
  data::SyntheticOptions o{.num_examples = 4, .height = 2, .width = 3, .channels = 2, .seed = 3};
  data::Dataset nhwc = data::make_synthetic(o);
  o.layout = Layout::nchw;
  data::Dataset nchw = data::make_synthetic(o);
  EXPECT_EQ(nchw.images.shape(), (Shape{4, 2, 2, 3}));
  const float* a = nhwc.images.data<float>();
  const float* b = nchw.images.data<float>();
  for (int n = 0; n < 4; ++n)
    for (int y = 0; y < 2; ++y)
      for (int x = 0; x < 3; ++x)
        for (int c = 0; c < 2; ++c) EXPECT_EQ(a[((n * 2 + y) * 3 + x) * 2 + c], b[((n * 2 + c) * 2 + y) * 3 + x]);
}

TEST(Synthetic, BadOptionsAreInvalidArguments) {
  EXPECT_TG_ERROR(data::make_synthetic({.num_examples = -1}), ErrorCode::invalid_argument, "[synthetic]");
  EXPECT_TG_ERROR(data::make_synthetic({.height = 0}), ErrorCode::invalid_argument, "height");
  EXPECT_TG_ERROR(data::make_synthetic({.num_classes = 0}), ErrorCode::invalid_argument, "num_classes");
  EXPECT_TG_ERROR(data::make_synthetic({.noise = 1.5}), ErrorCode::invalid_argument, "noise must be in [0, 1]");
  EXPECT_TG_ERROR(data::make_synthetic({.layout = Layout::oihw}), ErrorCode::invalid_argument, "layout");
}

TEST(DatasetSlice, CopiesRowsAndClamps) {
  data::Dataset d = data::make_synthetic({.num_examples = 5, .height = 1, .width = 2, .channels = 1});
  data::Dataset s = data::slice(d, 1, 3);
  EXPECT_EQ(s.images.shape(), (Shape{2, 1, 2, 1}));
  std::vector<float> all = d.images.to_vector<float>();
  EXPECT_EQ(s.images.to_vector<float>(), std::vector<float>(all.begin() + 2, all.begin() + 6));
  std::vector<int64_t> labels = d.labels.to_vector<int64_t>();
  EXPECT_EQ(s.labels.to_vector<int64_t>(), std::vector<int64_t>(labels.begin() + 1, labels.begin() + 3));
  EXPECT_EQ(data::slice(d, -4, 100).size(), 5);
  EXPECT_EQ(data::slice(d, 4, 2).images.shape(), (Shape{0, 1, 2, 1}));
  EXPECT_EQ(data::slice(data::Dataset{}, 0, 3).size(), 0);
}

}  // namespace
}  // namespace tg

namespace tg {
namespace {

// Image i of a [N, C, H, W] (nchw) or [N, H, W, C] (nhwc) buffer at (c, y, x), 0 outside.
float pixel(const data::Dataset& d, int64_t i, int64_t c, int64_t y, int64_t x) {
  const Shape& s = d.images.shape();
  const bool nhwc = d.layout == Layout::nhwc;
  const int64_t h = nhwc ? s[1] : s[2], w = nhwc ? s[2] : s[3], ch = nhwc ? s[3] : s[1];
  if (y < 0 || y >= h || x < 0 || x >= w) return 0.f;
  const int64_t at = nhwc ? ((i * h + y) * w + x) * ch + c : ((i * ch + c) * h + y) * w + x;
  return d.images.data<float>()[at];
}

// The (dy, dx) in [-m, m]^2 with out(c, y, x) == in(c, y - dy, x - dx) everywhere, or none.
std::optional<std::pair<int, int>> find_shift(const data::Dataset& in, const data::Dataset& out,
                                              int64_t i, int m, int h, int w, int c) {
  for (int dy = -m; dy <= m; ++dy)
    for (int dx = -m; dx <= m; ++dx) {
      bool same = true;
      for (int k = 0; k < c && same; ++k)
        for (int y = 0; y < h && same; ++y)
          for (int x = 0; x < w && same; ++x) same = pixel(out, i, k, y, x) == pixel(in, i, k, y - dy, x - dx);
      if (same) return std::pair{dy, dx};
    }
  return std::nullopt;
}

TEST(RandomShift, EachImageIsATranslationWithZeroFill) {
  // Pixels 1..N*H*W*C (never 0), so a zero-filled border is visible.
  for (Layout layout : {Layout::nhwc, Layout::nchw}) {
    data::Dataset d = data::make_synthetic({.num_examples = 40, .height = 4, .width = 5, .channels = 2,
                                            .layout = layout});
    float* px = d.images.data<float>();
    for (int64_t k = 0; k < d.images.num_elements(); ++k) px[k] = static_cast<float>(k + 1);
    data::Dataset s = data::random_shift(d, 2, 11);
    EXPECT_EQ(s.images.shape(), d.images.shape());
    EXPECT_EQ(s.labels.to_vector<int64_t>(), d.labels.to_vector<int64_t>());
    std::set<std::pair<int, int>> seen;
    for (int64_t i = 0; i < 40; ++i) {
      auto shift = find_shift(d, s, i, 2, 4, 5, 2);
      ASSERT_TRUE(shift.has_value()) << "image " << i;
      seen.insert(*shift);
    }
    EXPECT_GT(seen.size(), 8u);  // 25 possible offsets over 40 images
    EXPECT_EQ(data::random_shift(d, 2, 11).images.to_vector<float>(), s.images.to_vector<float>());
    EXPECT_NE(data::random_shift(d, 2, 12).images.to_vector<float>(), s.images.to_vector<float>());
    EXPECT_EQ(data::random_shift(d, 0, 11).images.to_vector<float>(), d.images.to_vector<float>());
  }
  EXPECT_TG_ERROR(data::random_shift(data::make_synthetic({}), -1, 0), ErrorCode::invalid_argument,
                  "[random_shift] max_shift must be >= 0");
}

}  // namespace
}  // namespace tg
