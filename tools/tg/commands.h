// The `tg` command's subcommands. main.cpp builds the CLI11 app and calls each add_*_command;
// a new subcommand is a new file defining its add_*_command plus one declaration and one call.
#pragma once

namespace CLI {
class App;
}

namespace tg::cli {

/// `tg train`: trains a model on a dataset, prints progress, the test accuracy and throughput,
/// and optionally saves a checkpoint (train.cpp).
void add_train_command(CLI::App& app);
/// `tg eval`: evaluates a saved checkpoint on a dataset's test split (eval.cpp).
void add_eval_command(CLI::App& app);

#ifdef TG_HAVE_ONNX
/// `tg run`: runs an ONNX model or a saved executable (run.cpp).
void add_run_command(CLI::App& app);
/// `tg compile`: compiles an ONNX model into a saved executable, .tgx (run.cpp).
void add_compile_command(CLI::App& app);
/// `tg inspect`: prints an ONNX model's graph, or a .tgx file's header (inspect.cpp).
void add_inspect_command(CLI::App& app);
#endif

}  // namespace tg::cli
