// The `tg` command: parses the command line with CLI11 and runs one subcommand.
// Exit status: 0 on success, 2 for a usage error (bad flag or value), 1 when the command fails.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <exception>

#include "commands.h"
#include "tg/error.h"

#ifndef TG_VERSION
#define TG_VERSION "unknown"
#endif

int main(int argc, char** argv) {
  CLI::App app{"tg: train, evaluate and run TensorGraph models", "tg"};
  app.set_version_flag("--version", std::string("tg (TensorGraph) ") + TG_VERSION);
  app.require_subcommand(1);
  tg::cli::add_train_command(app);
  tg::cli::add_eval_command(app);
#ifdef TG_HAVE_ONNX
  tg::cli::add_run_command(app);
  tg::cli::add_inspect_command(app);
#endif
  try {
    app.parse(argc, argv);  // runs the chosen subcommand's callback
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help, the version, or the error with a usage hint
    return code == 0 ? 0 : 2;
  } catch (const tg::Error& e) {
    std::fflush(stdout);
    fmt::print(stderr, "tg: error ({}): {}\n", tg::error_code_name(e.code()), e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    fmt::print(stderr, "tg: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
