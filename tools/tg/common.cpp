#include "common.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include "options.h"

namespace tg::cli {
namespace fs = std::filesystem;

void add_common_options(CLI::App& cmd, CommonArgs& args) {
  std::string models;
  for (const std::string& name : nn::zoo::names()) models += (models.empty() ? "" : ", ") + name;
  one_of(cmd.add_option("--model,-m", args.model, "Zoo model: " + models)->capture_default_str(),
         nn::zoo::names(), "a model of the zoo");
  one_of(cmd.add_option("--dataset,-d", args.dataset,
                        "mnist (the shipped 8,000/2,000 digits, or --data-dir), cifar10 (--data-dir: "
                        "the cifar-10-batches-bin directory) or synthetic")
             ->capture_default_str(),
         {"mnist", "cifar10", "synthetic"}, "a dataset");
  existing_directory(cmd.add_option("--data-dir", args.data_dir,
                                    "Directory of the dataset files (mnist: {train,t10k}-{images-idx3,"
                                    "labels-idx1}-ubyte[.gz])")
                         ->type_name("DIR"));
  one_of(cmd.add_option("--layout", args.layout, "Image layout: nhwc or nchw")->capture_default_str(),
         {"nhwc", "nchw"}, "an image layout");
  device_name(cmd.add_option("--device", args.device, "cpu, cuda (the first GPU) or cuda:N")
                  ->capture_default_str());
  one_of(cmd.add_option("--precision", args.precision,
                        "Arithmetic of convolutions and matrix products on CUDA: f32, tf32, bf16 "
                        "or f16")
             ->capture_default_str(),
         {"f32", "tf32", "bf16", "f16"}, "a precision");
  whole_number(cmd.add_option("--limit", args.limit,
                              "Use at most this many examples of each split (-1: all)")
                   ->capture_default_str(),
               -1)
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            if (v == "0") throw UsageError("--limit 0 leaves no examples: give -1 (all) or a count >= 1");
            return "";
          },
          ""));
  whole_number(cmd.add_option("--synthetic-examples", args.synthetic_examples,
                              "Training examples of --dataset synthetic (test: a quarter)")
                   ->capture_default_str(),
               1);
  whole_number(cmd.add_option("--batch-size,-b", args.batch_size, "Examples per batch")
                   ->capture_default_str(),
               1);
  whole_number(cmd.add_option("--seed", args.seed, "Seed of the weights, the shuffling and synthetic data")
                   ->capture_default_str(),
               0);
}

void check_output_file(const std::string& path, std::string_view option) {
  if (path.empty()) throw UsageError(fmt::format("{}: an empty path", option));
  const fs::path p(path);
  std::error_code ec;
  if (fs::is_directory(p, ec)) {
    throw UsageError(fmt::format("{} {}: is a directory (give a file name in it)", option, path));
  }
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec)) {
    // The nearest part of the path that exists: a file there is not a directory (afile/x).
    for (fs::path a = dir; !a.empty(); a = a.parent_path()) {
      if (fs::exists(a, ec)) {
        if (!fs::is_directory(a, ec)) {
          throw UsageError(fmt::format("{} {}: '{}' is a file, not a directory", option, path, a.string()));
        }
        break;
      }
      if (a == a.parent_path()) break;
    }
    throw UsageError(fmt::format("{} {}: the directory '{}' does not exist", option, path, dir.string()));
  }
  // The save writes a temporary in the directory and renames it over the file; a device or FIFO
  // that exists (/dev/null) is written in place (core/file_write.h): that is what must be writable.
  struct stat st {};
  const bool in_place = ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode);
  const std::string target = in_place ? path : dir.string();
  if (::access(target.c_str(), in_place ? W_OK : W_OK | X_OK) != 0) {
    throw UsageError(fmt::format("{} {}: {} '{}' is not writable ({})", option, path,
                                 in_place ? "the file" : "the directory", target, std::strerror(errno)));
  }
}

void check_output_dir(const std::string& path, std::string_view option) {
  if (path.empty()) throw UsageError(fmt::format("{}: an empty path", option));
  std::error_code ec;
  for (fs::path p = fs::path(path); !p.empty(); p = p.parent_path()) {
    if (fs::exists(p, ec)) {
      if (!fs::is_directory(p, ec)) {
        throw UsageError(fmt::format("{} {}: '{}' is a file, not a directory", option, path, p.string()));
      }
      break;
    }
    if (p == p.parent_path()) break;
  }
}

namespace {
std::string megabytes(size_t bytes) { return fmt::format("{:.2f} MB", static_cast<double>(bytes) / 1e6); }
}  // namespace

std::string arena_line(const Executable& exe) {
  return fmt::format("arena: {} per run ({} of intermediates without reuse; {} allocated)",
                     megabytes(exe.arena_bytes()), megabytes(exe.unplanned_bytes()), exe.arena_count());
}

Layout parse_layout(const std::string& name) { return name == "nchw" ? Layout::nchw : Layout::nhwc; }

ComputePrecision parse_precision(const std::string& name) {
  if (name == "tf32") return ComputePrecision::tf32;
  if (name == "bf16") return ComputePrecision::bf16;
  if (name == "f16") return ComputePrecision::f16;
  return ComputePrecision::f32;
}

Device parse_device(const std::string& name, std::string_view command) {
  if (name == "cpu") return Device::cpu();
  // The name was checked when the command line was parsed (device_name, options.h).
  const int64_t index = name.size() > 5 ? std::strtoll(name.c_str() + 5, nullptr, 10) : 0;
  const int count = Device::cuda_device_count();
  if (index < 0 || index >= count) {
    throw Error(ErrorCode::unsupported,
                fmt::format("[{}] --device {}: no such CUDA GPU here ({} usable: no CUDA backend in "
                            "this build, no driver, or no GPU); use --device cpu",
                            command, name, count));
  }
  return Device::cuda(static_cast<int>(index));
}

namespace {

fs::path executable_dir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

bool has_mnist(const fs::path& dir) {
  std::error_code ec;
  return fs::exists(dir / "train-images-idx3-ubyte.gz", ec) ||
         fs::exists(dir / "train-images-idx3-ubyte", ec) ||
         fs::exists(dir / "t10k-images-idx3-ubyte.gz", ec);
}

}  // namespace

std::string mnist_dir(const std::string& data_dir) {
  if (!data_dir.empty()) return data_dir;
  std::vector<fs::path> candidates;
#ifdef TG_SOURCE_DIR
  candidates.push_back(fs::path(TG_SOURCE_DIR) / "data" / "mnist");
#endif
  const fs::path exe = executable_dir();
  if (!exe.empty()) {
    candidates.push_back(exe / ".." / "data" / "mnist");
    candidates.push_back(exe / ".." / "share" / "tensorgraph" / "data" / "mnist");
  }
  candidates.push_back(fs::path("data") / "mnist");
  std::string tried;
  for (const fs::path& c : candidates) {
    if (has_mnist(c)) return c.lexically_normal().string();
    tried += (tried.empty() ? "" : ", ") + c.lexically_normal().string();
  }
  throw Error(ErrorCode::not_found,
              fmt::format("[mnist] the shipped MNIST data was not found (tried {}); pass --data-dir",
                          tried));
}

data::Dataset load_dataset(const CommonArgs& args, data::Split split, std::string_view command) {
  const data::LoadOptions options{.layout = parse_layout(args.layout), .limit = args.limit};
  if (args.dataset == "mnist") return data::load_mnist_dir(mnist_dir(args.data_dir), split, options);
  if (args.dataset == "cifar10") {
    if (args.data_dir.empty()) {
      throw UsageError("--dataset cifar10 needs --data-dir DIR, the cifar-10-batches-bin directory "
                       "of https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz");
    }
    return data::load_cifar10_dir(args.data_dir, split, options);
  }
  const int64_t train = args.synthetic_examples;
  int64_t n = split == data::Split::train ? train : std::max<int64_t>(train / 4, 1);
  if (args.limit >= 0) n = std::min(n, args.limit);
  return data::make_synthetic({.num_examples = n, .seed = args.seed,
                               .sample_seed = split == data::Split::train ? 0u : 1u,
                               .layout = options.layout});
}

std::string describe(const data::Dataset& d) {
  const Shape s = d.image_shape();
  return fmt::format("{} x {}x{}x{} ({}), {}", d.size(), s[0], s[1], s[2],
                     d.layout == Layout::nhwc ? "nhwc" : "nchw", count(d.num_classes, "class", "classes"));
}

nn::Model build_model(const CommonArgs& args, const data::Dataset& dataset) {
  return nn::zoo::build(args.model, {.input_shape = dataset.image_shape(),
                                     .num_classes = dataset.num_classes,
                                     .layout = parse_layout(args.layout),
                                     .seed = args.seed});
}

bool is_saved_executable(const std::string& path) {
  if (std::filesystem::path(path).extension() == ".tgx") return true;
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::memcmp(magic, "TGX1", 4) == 0;
}

}  // namespace tg::cli
