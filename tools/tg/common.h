// Options and helpers shared by `tg train` and `tg eval`: dataset selection and loading, zoo
// model construction, device and layout parsing.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "tg/data.h"
#include "tg/model.h"

namespace CLI {
class App;
}

namespace tg::cli {

/// The dataset and model flags common to train and eval.
struct CommonArgs {
  std::string model = "mnist_cnn";
  std::string dataset = "mnist";  ///< mnist, cifar10 or synthetic
  std::string data_dir;           ///< empty: the shipped data/mnist (mnist only)
  std::string layout = "nhwc";
  std::string device = "cpu";
  std::string precision = "f32";  ///< conv/matmul arithmetic on CUDA: f32, tf32, bf16, f16
  int64_t limit = -1;             ///< at most this many examples of each split
  int64_t synthetic_examples = 2048;  ///< training examples of --dataset synthetic
  int64_t batch_size = 64;
  uint64_t seed = 0;
};

/// Adds --model, --dataset, --data-dir, --layout, --device, --precision, --limit,
/// --synthetic-examples, --batch-size and --seed to `cmd`, bound to `args`, each checked when the
/// command line is parsed (a bad value is a UsageError, options.h).
void add_common_options(CLI::App& cmd, CommonArgs& args);

Layout parse_layout(const std::string& name);
/// Device::cpu() for "cpu"; for "cuda" / "cuda:N" (a name device_name, options.h, accepted) the
/// CUDA device when this build has a CUDA backend and that GPU, else tg::Error(unsupported)
/// "[command] --device cuda:N: no such CUDA GPU here ...".
Device parse_device(const std::string& name, std::string_view command);
/// "f32", "tf32", "bf16", "f16" (checked when parsed) as a ComputePrecision.
ComputePrecision parse_precision(const std::string& name);

/// "arena: 1.2 MB per run (3.4 MB of intermediates without reuse; 1 allocated)": the memory
/// plan of a compiled executable (Executable::arena_bytes), for tg run and tg inspect.
std::string arena_line(const Executable& exe);

/// Checks, before any work, that a file can be written at `path` (given as `option`, e.g. "--save"):
/// not empty, not a directory, its directory exists (no part of the path is a file) and is
/// writable (access(2); for an existing device or FIFO, which is written in place: the file). A
/// UsageError saying why otherwise (so a training run is not lost to a typo or a read-only
/// directory found only when it saves).
void check_output_file(const std::string& path, std::string_view option);
/// Checks, before any work, that `path` (given as `option`, e.g. "-o") is a directory or can be
/// created as one: it is not an existing file and no part of it is a file. A UsageError otherwise.
void check_output_dir(const std::string& path, std::string_view option);

/// Whether `path` names a saved executable: its extension is .tgx, or its first 4 bytes are the
/// .tgx magic "TGX1" (a file renamed; docs/design/0008). Anything else is taken for an ONNX model.
bool is_saved_executable(const std::string& path);

/// The directory holding the MNIST IDX files: --data-dir when given, else the first of
/// <source tree>/data/mnist, <exe>/../data/mnist, <exe>/../share/tensorgraph/data/mnist,
/// ./data/mnist that exists; tg::Error(not_found) listing the places tried otherwise.
std::string mnist_dir(const std::string& data_dir);

/// The `split` part of the dataset the args name, in their layout, limited by --limit.
/// synthetic: --synthetic-examples training examples (a quarter of that, at least 1, for test)
/// of a 28x28x1 10-class task chosen by --seed. cifar10 without --data-dir is a UsageError.
data::Dataset load_dataset(const CommonArgs& args, data::Split split, std::string_view command);

/// "8000 x 28x28x1 (nhwc), 10 classes".
std::string describe(const data::Dataset& dataset);

/// The zoo model args.model for images like `dataset`'s, in args.layout, seeded by args.seed.
nn::Model build_model(const CommonArgs& args, const data::Dataset& dataset);

}  // namespace tg::cli
