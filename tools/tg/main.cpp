// The `tg` command: parses the command line with CLI11 and runs one subcommand.
// Exit status: 0 on success, 2 for a usage error (an unknown command or option, a bad value, files
// that do not fit the model: the message names the flag or file and the fix, then the usage
// follows), 1 when the command fails (tg: error (<code>): ...).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "commands.h"
#include "options.h"
#include "tg/error.h"

#ifndef TG_VERSION
#define TG_VERSION "unknown"
#endif

namespace {

// "tg train: <message>" and the usage of `command`, on stderr.
int usage_error(const CLI::App& command, const std::string& message) {
  std::fflush(stdout);
  const std::string name = tg::cli::command_name(command);
  const CLI::App* parent = command.get_parent();
  fmt::print(stderr, "{}: {}\n\n{}", name, message,
             parent ? command.help(tg::cli::command_name(*parent)) : command.help());
  return 2;
}

// The subcommand the user chose (the app itself when none).
const CLI::App& chosen(const CLI::App& app) {
  std::vector<CLI::App*> parsed = app.get_subcommands();
  return parsed.empty() ? app : *parsed.front();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tg: train, evaluate and run TensorGraph models", "tg"};
  app.set_version_flag("--version", std::string("tg (TensorGraph) ") + TG_VERSION);
  app.require_subcommand(1);
  tg::cli::add_train_command(app);
  tg::cli::add_eval_command(app);
#ifdef TG_HAVE_ONNX
  tg::cli::add_run_command(app);
  tg::cli::add_compile_command(app);
  tg::cli::add_inspect_command(app);
#endif
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    app.parse(argc, argv);  // runs the chosen subcommand's callback
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // CLI11 rejected the command line: explain the first unknown command or option, else pass
    // on CLI11's message ("--load is required").
    if (auto d = tg::cli::diagnose(app, args)) return usage_error(*d->command, d->message);
    return usage_error(chosen(app), e.what());
  } catch (const tg::cli::UsageError& e) {
    return usage_error(chosen(app), e.what());
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
