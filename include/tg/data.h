// Datasets for training and evaluation: readers for MNIST IDX files (plain or gzip) and CIFAR-10
// binary batches, a seeded synthetic dataset, and slicing. Images come back as f32 in [0, 1].
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tg/export.h"
#include "tg/ops_conv.h"
#include "tg/tensor_data.h"

namespace tg::data {

/// An image-classification dataset held in host memory.
struct Dataset {
  /// f32 pixels scaled to [0, 1]: [N, H, W, C] when layout is nhwc, [N, C, H, W] when nchw.
  TensorData images;
  /// i64 class indices [N], each in [0, num_classes).
  TensorData labels;
  int64_t num_classes = 0;
  Layout layout = Layout::nhwc;

  /// N, the number of examples (0 for an empty Dataset).
  int64_t size() const { return labels.empty() ? 0 : labels.shape()[0]; }
  /// {H, W, C} for nhwc or {C, H, W} for nchw: the shape of one image.
  Shape image_shape() const { return Shape(images.shape().begin() + 1, images.shape().end()); }
};

/// Which part of a dataset: the training or the held-out test examples.
enum class Split { train, test };

struct LoadOptions {
  Layout layout = Layout::nhwc;  ///< nhwc or nchw (tg::Error(invalid_argument) otherwise)
  int64_t limit = -1;            ///< keep only the first `limit` examples; -1 keeps all
};

/// Reads an IDX file (the format of the MNIST distribution, http://yann.lecun.com/exdb/mnist/):
/// two zero bytes, a type code, the rank, the big-endian u32 dims, then the big-endian values.
/// Gzip-compressed files (detected by their content, not the name) are decompressed on the fly.
/// Type codes 0x08 (u8), 0x09 (i8), 0x0B (i16, widened to i32), 0x0C (i32), 0x0D (f32) and
/// 0x0E (f64) give tensors of those dtypes with the file's dims.
/// Errors name the file and what is wrong: a missing file (not_found); an unreadable, corrupt
/// gzip or truncated file, i.e. fewer bytes than the dims need (io_error); a bad magic number,
/// unknown type code, rank 0, or bytes after the last value (invalid_argument).
TG_API TensorData read_idx(const std::string& path);

/// Reads MNIST-style images (IDX u8 [N, H, W]) and labels (IDX u8 [N]), plain or gzip (the
/// layout of MNIST, Fashion-MNIST and the shipped data/mnist). Pixels are divided by 255; C = 1.
/// num_classes is 10. Errors (tg::Error "[mnist] <file>: ..."): those of read_idx, then
/// (invalid_argument) a non-u8 or wrong-rank file, image and label counts that differ, or a
/// label outside [0, 10) (naming its index).
TG_API Dataset load_mnist(const std::string& images_path, const std::string& labels_path,
                   const LoadOptions& options = {});
/// load_mnist on `dir`/{train,t10k}-{images-idx3,labels-idx1}-ubyte, each with or without ".gz"
/// (the ".gz" file is used when both exist). A missing file raises tg::Error(not_found) naming
/// the paths tried.
TG_API Dataset load_mnist_dir(const std::string& dir, Split split, const LoadOptions& options = {});

/// Reads CIFAR-10 binary batches (https://www.cs.toronto.edu/~kriz/cifar.html): records of one
/// label byte followed by 3072 bytes of a 32x32 RGB image, channel-major (1024 R, 1024 G,
/// 1024 B, each row-major). The files' records are concatenated in order; pixels / 255 into
/// [N, 32, 32, 3] (nhwc, transposed from the file's CHW) or [N, 3, 32, 32] (nchw, as stored).
/// num_classes is 10. Gzip-compressed files are accepted. Errors ("[cifar10] <file>: ..."): a
/// missing file (not_found), an unreadable or corrupt file (io_error), a size that is not a
/// multiple of 3073 bytes, an empty file list, or a label >= 10 (invalid_argument).
TG_API Dataset load_cifar10(const std::vector<std::string>& batch_paths, const LoadOptions& options = {});
/// load_cifar10 on `dir`/data_batch_{1..5}.bin (train) or `dir`/test_batch.bin (test), the files
/// of the "CIFAR-10 binary version" archive (cifar-10-batches-bin).
TG_API Dataset load_cifar10_dir(const std::string& dir, Split split, const LoadOptions& options = {});

struct SyntheticOptions {
  int64_t num_examples = 1024;
  int64_t height = 28;
  int64_t width = 28;
  int64_t channels = 1;
  int64_t num_classes = 10;
  /// Fraction of each pixel drawn as noise: pixel = (1 - noise) * prototype + noise * u with
  /// u ~ U[0, 1). 0 gives exact prototypes; 1 gives pure noise (nothing to learn). In [0, 1].
  double noise = 0.5;
  /// Selects the task: the class prototypes. Train and test sets of one task share it.
  uint64_t seed = 0;
  /// Selects the examples drawn from the task (e.g. 0 for train, 1 for test).
  uint64_t sample_seed = 0;
  Layout layout = Layout::nhwc;
};
/// A learnable synthetic classification task, reproducible from (seed, sample_seed) on every
/// platform (SplitMix64, Steele et al. 2014, drives every draw). Each class has a prototype
/// image with pixels uniform in [0, 1) drawn from `seed`; the labels are balanced
/// (i mod num_classes, then shuffled by Fisher-Yates) and each image mixes its class prototype
/// with uniform noise as SyntheticOptions::noise says. Errors ("[synthetic] ...",
/// invalid_argument): a non-positive size or class count, noise outside [0, 1], a bad layout.
TG_API Dataset make_synthetic(const SyntheticOptions& options);

/// Examples [begin, end) of `dataset` (copied), clamped to [0, size()]; begin > end gives an
/// empty dataset with the same image shape.
TG_API Dataset slice(const Dataset& dataset, int64_t begin, int64_t end);

/// A copy of `dataset` with each image translated by its own random offset (dy, dx), each
/// uniform in [-max_shift, max_shift] (SplitMix64 from `seed`), pixels moved off the image
/// dropped and uncovered ones set to 0: the usual "random shift" augmentation for MNIST-like
/// data. Labels are unchanged. max_shift 0 returns an equal copy. Errors ("[random_shift]",
/// invalid_argument): max_shift < 0.
TG_API Dataset random_shift(const Dataset& dataset, int64_t max_shift, uint64_t seed);

/// Counts of each label (size num_classes), for summaries and tests.
TG_API std::vector<int64_t> label_histogram(const Dataset& dataset);

}  // namespace tg::data
