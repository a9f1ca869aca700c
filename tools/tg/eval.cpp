// `tg eval`: evaluates a checkpoint written by `tg train --save` on a dataset's test split.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>
#include <memory>

#include "commands.h"
#include "common.h"

namespace tg::cli {
namespace {

struct EvalArgs {
  CommonArgs common;
  std::string load;
};

void run_eval(const EvalArgs& a) {
  const Device device = parse_device(a.common.device, "eval");
  data::Dataset test = load_dataset(a.common, data::Split::test, "eval");
  nn::Model model = build_model(a.common, test);
  // evaluate needs the loss and metric of compile (the optimizer is unused); loading after
  // compile restores the optimizer state too.
  model.compile(nn::Optimizer::adam(), nn::Loss::sparse_categorical_crossentropy,
                {nn::Metric::accuracy}, device, {.precision = parse_precision(a.common.precision)});
  model.load(a.load);
  fmt::print("tg eval: {} from {} on {} test: {}\n", a.common.model, a.load, a.common.dataset,
             describe(test));
  std::fflush(stdout);
  const auto start = std::chrono::steady_clock::now();
  nn::Logs logs = model.evaluate(test.images, test.labels, {.batch_size = a.common.batch_size});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("throughput: {:.1f} samples/s ({} examples in {:.2f} s); test loss {:.4f}\n",
             seconds > 0 ? static_cast<double>(test.size()) / seconds : 0.0, test.size(), seconds,
             logs.at("loss"));
  fmt::print("test accuracy: {:.2f}%\n", 100.0 * logs.at("accuracy"));
}

}  // namespace

void add_eval_command(CLI::App& app) {
  auto args = std::make_shared<EvalArgs>();
  args->common.batch_size = 256;
  CLI::App* cmd = app.add_subcommand("eval", "Evaluate a saved checkpoint on a test split");
  add_common_options(*cmd, args->common);
  cmd->add_option("--load,-l", args->load, "Checkpoint written by tg train --save")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->callback([args] { run_eval(*args); });
}

}  // namespace tg::cli
