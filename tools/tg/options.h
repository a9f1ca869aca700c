// The `tg` command's usage errors, in the words of the command line: option checks that name the
// flag the user typed and the fix ("--epochs must be >= 1, got 0"), suggestions for mistyped
// commands and options ("unknown command 'trian'; did you mean 'train'?"), plural forms.
// main.cpp prints a UsageError with the usage of the command and exits with status 2.
#pragma once
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace tg::cli {

/// A mistake in the command line (a bad flag or value, files that do not fit the model): main
/// prints "tg <command>: <what>" and the command's usage, and exits with status 2. what() is
/// phrased with the flags and files the user gave, never with C++ names.
class UsageError : public std::runtime_error {
 public:
  explicit UsageError(const std::string& what) : std::runtime_error(what) {}
};

/// Checks that `option` (an integer option) is given a whole number in [min, max]: "abc" raises
/// UsageError("--batch-size: 'abc' is not a number; give a whole number >= 1"), 0 raises
/// UsageError("--epochs must be >= 1, got 0"). Sets the option's type name shown by --help.
CLI::Option* whole_number(CLI::Option* option, int64_t min,
                          std::optional<int64_t> max = std::nullopt);
/// Checks that `option` is given a finite number > `above` (strictly): UsageError
/// "--lr must be > 0, got -1" or "--lr: 'x' is not a number; ...".
CLI::Option* number_above(CLI::Option* option, double above);
/// Checks that `option` is one of `choices` (`what` names them: "a model of the zoo"):
/// UsageError("--model: 'resnet' is not a model of the zoo; did you mean 'resnet18'? Choose one
/// of mnist_cnn, mlp, ..."). Sets the help's type name to the choices.
CLI::Option* one_of(CLI::Option* option, const std::vector<std::string>& choices,
                    const std::string& what);
/// Checks that `option` names an existing file (directory): UsageError
/// "--load: no such file '/x/y.safetensors'".
CLI::Option* existing_file(CLI::Option* option);
CLI::Option* existing_directory(CLI::Option* option);
/// Checks that `option` names a device: cpu, cuda or cuda:N (N >= 0); "gpu" gets "did you mean
/// 'cuda'?". Whether that GPU exists is checked when the command runs (parse_device, common.h).
CLI::Option* device_name(CLI::Option* option);

/// The closest of `candidates` to `word` (edit distance at most a third of its length, at least
/// 1; a candidate `word` is a prefix of counts too), or "" when none is close.
std::string closest(const std::string& word, const std::vector<std::string>& candidates);

/// After CLI11 rejected the command line `args` (without the program name): the first unknown
/// command, unknown option or option missing its value, explained ("tg: unknown command 'trian';
/// did you mean 'train'?"), and the (sub)command whose usage to print; nullopt when none of those
/// is the problem.
struct Diagnosis {
  std::string message;
  const CLI::App* command = nullptr;
};
std::optional<Diagnosis> diagnose(const CLI::App& app, const std::vector<std::string>& args);

/// "tg" for the top-level app, "tg train" for a subcommand.
std::string command_name(const CLI::App& command);

/// "1 epoch", "2 epochs", "0 epochs" (`plural` defaults to singular + "s").
std::string count(int64_t n, const std::string& singular, const std::string& plural = "");

}  // namespace tg::cli
