// `tg eval`: evaluates a checkpoint written by `tg train --save` on a dataset's test split.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>
#include <memory>

#include "commands.h"
#include "common.h"
#include "options.h"

namespace tg::cli {
namespace {

struct EvalArgs {
  CommonArgs common;
  std::string load;
};

// The zoo model of the args, compiled for evaluation (the optimizer is unused; loading after
// compile restores the optimizer state too).
nn::Model compiled_model(const CommonArgs& args, const data::Dataset& test, const Device& device) {
  nn::Model model = build_model(args, test);
  model.compile(nn::Optimizer::adam(), nn::Loss::sparse_categorical_crossentropy,
                {nn::Metric::accuracy}, device, {.precision = parse_precision(args.precision)});
  return model;
}

// Loads --load into `model`. When it does not fit but fits the same model built with the other
// --layout, says so (a UsageError naming the flag to change) instead of listing the kernels.
void load_checkpoint(nn::Model& model, const EvalArgs& a, const data::Dataset& test,
                     const Device& device) {
  try {
    model.load(a.load);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::shape_mismatch) throw;
    CommonArgs other = a.common;
    other.layout = a.common.layout == "nhwc" ? "nchw" : "nhwc";
    try {
      // One image's shape in the other layout is all the model needs.
      const Shape s = test.images.shape();
      data::Dataset like;
      like.num_classes = test.num_classes;
      like.images = TensorData::zeros(other.layout == "nchw" ? Shape{1, s[3], s[1], s[2]}
                                                             : Shape{1, s[2], s[3], s[1]});
      compiled_model(other, like, device).load(a.load);
    } catch (const Error&) {
      throw e;  // not a layout difference: the original mismatches
    }
    throw UsageError(fmt::format("--layout {} does not match the checkpoint {}: it was saved by a "
                                 "--layout {} model (the same kernels with their dims in another "
                                 "order). Evaluate it with --layout {}",
                                 a.common.layout, a.load, other.layout, other.layout));
  }
}

void run_eval(const EvalArgs& a) {
  const Device device = parse_device(a.common.device, "eval");
  data::Dataset test = load_dataset(a.common, data::Split::test, "eval");
  nn::Model model = compiled_model(a.common, test, device);
  load_checkpoint(model, a, test, device);
  fmt::print("tg eval: {} from {} on {} test: {}\n", a.common.model, a.load, a.common.dataset,
             describe(test));
  std::fflush(stdout);
  const auto start = std::chrono::steady_clock::now();
  nn::Logs logs = model.evaluate(test.images, test.labels, {.batch_size = a.common.batch_size});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("throughput: {:.1f} samples/s ({} in {:.2f} s); test loss {:.4f}\n",
             seconds > 0 ? static_cast<double>(test.size()) / seconds : 0.0,
             count(test.size(), "example"), seconds,
             logs.at("loss"));
  fmt::print("test accuracy: {:.2f}%\n", 100.0 * logs.at("accuracy"));
}

}  // namespace

void add_eval_command(CLI::App& app) {
  auto args = std::make_shared<EvalArgs>();
  args->common.batch_size = 256;
  CLI::App* cmd = app.add_subcommand("eval", "Evaluate a saved checkpoint on a test split");
  add_common_options(*cmd, args->common);
  existing_file(cmd->add_option("--load,-l", args->load, "Checkpoint written by tg train --save")
                    ->required()
                    ->type_name("FILE"));
  cmd->callback([args] { run_eval(*args); });
}

}  // namespace tg::cli
