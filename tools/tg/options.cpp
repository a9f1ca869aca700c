// Usage errors of the `tg` command in the words of the command line (options.h).
#include "options.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>

namespace tg::cli {
namespace {

// The user's text, shortened so that no message repeats a pasted screenful.
std::string shown(const std::string& value) {
  return "'" + (value.size() > 24 ? value.substr(0, 20) + "..." : value) + "'";
}

enum class Parsed { ok, not_a_number, out_of_range };

Parsed parse_int(const std::string& text, int64_t& out) {
  std::string_view s = text;
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec == std::errc::result_out_of_range) return Parsed::out_of_range;
  return ec == std::errc() && end == s.data() + s.size() && !s.empty() ? Parsed::ok : Parsed::not_a_number;
}

Parsed parse_double(const std::string& text, double& out) {
  std::string_view s = text;
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec == std::errc::result_out_of_range) return Parsed::out_of_range;
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return Parsed::not_a_number;
  return std::isfinite(out) ? Parsed::ok : Parsed::out_of_range;
}

std::string range_text(int64_t min, std::optional<int64_t> max) {
  if (!max) return fmt::format(">= {}", min);
  if (*max == min + 1) return fmt::format("{} or {}", min, *max);
  if (*max == min + 2) return fmt::format("{}, {} or {}", min, min + 1, *max);
  return fmt::format("from {} to {}", min, *max);
}

// Optimal string alignment distance (Levenshtein with transpositions: "trian" -> "train" is 1).
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

std::string strip_dashes(const std::string& s) {
  size_t i = s.find_first_not_of('-');
  return i == std::string::npos ? "" : s.substr(i);
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best = closest(word, candidates);
  return best.empty() ? "" : fmt::format("; did you mean '{}'?", best);
}

bool looks_like_number(const std::string& s) {
  double v = 0;
  return parse_double(s, v) != Parsed::not_a_number;
}

// The flags of a command: "--epochs", "-e", ... (help included).
std::vector<std::string> flags_of(const CLI::App& command) {
  std::vector<std::string> flags;
  for (const CLI::Option* o : command.get_options()) {
    for (const std::string& l : o->get_lnames()) flags.push_back("--" + l);
    for (const std::string& s : o->get_snames()) flags.push_back("-" + s);
  }
  return flags;
}

const CLI::Option* find_flag(const CLI::App& command, const std::string& flag) {
  for (const CLI::Option* o : command.get_options()) {
    if (o->check_name(flag)) return o;
  }
  return nullptr;
}

}  // namespace

std::string command_name(const CLI::App& command) {
  const CLI::App* parent = command.get_parent();
  return parent ? command_name(*parent) + " " + command.get_name() : command.get_name();
}

std::string count(int64_t n, const std::string& singular, const std::string& plural) {
  return fmt::format("{} {}", n, n == 1 ? singular : plural.empty() ? singular + "s" : plural);
}

std::string closest(const std::string& word, const std::vector<std::string>& candidates) {
  const std::string w = strip_dashes(word);
  std::string best;
  size_t best_distance = std::max<size_t>(1, w.size() / 3) + 1;
  for (const std::string& c : candidates) {
    const std::string cw = strip_dashes(c);
    if (cw.size() < 2 && w.size() > 2) continue;  // "-e" is no suggestion for "--epoch"
    size_t d = edit_distance(w, cw);
    if (w.size() >= 2 && cw.rfind(w, 0) == 0) d = std::min<size_t>(d, 1);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

CLI::Option* whole_number(CLI::Option* option, int64_t min, std::optional<int64_t> max) {
  const std::string flag = option->get_name();
  const std::string expect = "a whole number " + range_text(min, max);
  option->type_name("INT");
  option->description(fmt::format("{} ({})", option->get_description(), expect));
  return option->check(CLI::Validator(
      [flag, min, max, expect](std::string& value) -> std::string {
        int64_t n = 0;
        switch (parse_int(value, n)) {
          case Parsed::ok: break;
          case Parsed::out_of_range:
            throw UsageError(fmt::format("{}: {} is too large; give {}", flag, shown(value), expect));
          case Parsed::not_a_number: {
            double d = 0;
            if (parse_double(value, d) == Parsed::ok) {
              throw UsageError(fmt::format("{} must be {}, got {}", flag, expect, value));
            }
            throw UsageError(fmt::format("{}: {} is not a number; give {}", flag, shown(value), expect));
          }
        }
        if (n < min || (max && n > *max)) {
          throw UsageError(fmt::format("{} must be {}, got {}", flag, range_text(min, max), n));
        }
        return "";
      },
      ""));
}

CLI::Option* number_above(CLI::Option* option, double above) {
  const std::string flag = option->get_name();
  option->type_name("NUMBER");
  option->description(fmt::format("{} (a number > {})", option->get_description(), above));
  return option->check(CLI::Validator(
      [flag, above](std::string& value) -> std::string {
        double d = 0;
        switch (parse_double(value, d)) {
          case Parsed::ok: break;
          case Parsed::out_of_range:
            throw UsageError(fmt::format("{}: {} is out of range; give a finite number > {}", flag,
                                         shown(value), above));
          case Parsed::not_a_number:
            throw UsageError(fmt::format("{}: {} is not a number; give a number > {}, e.g. {} 0.001",
                                         flag, shown(value), above, flag));
        }
        if (!(d > above)) throw UsageError(fmt::format("{} must be > {}, got {}", flag, above, value));
        return "";
      },
      ""));
}

CLI::Option* one_of(CLI::Option* option, const std::vector<std::string>& choices,
                    const std::string& what) {
  const std::string flag = option->get_name();
  option->type_name(fmt::format("{{{}}}", fmt::join(choices, ",")));
  return option->check(CLI::Validator(
      [flag, choices, what](std::string& value) -> std::string {
        if (std::find(choices.begin(), choices.end(), value) != choices.end()) return "";
        throw UsageError(fmt::format("{}: {} is not {}{} (choose one of {})", flag, shown(value),
                                     what, did_you_mean(value, choices), fmt::join(choices, ", ")));
      },
      ""));
}

CLI::Option* existing_file(CLI::Option* option) {
  const std::string flag = option->get_name();
  return option->check(CLI::Validator(
      [flag](std::string& value) -> std::string {
        std::error_code ec;
        if (std::filesystem::is_regular_file(value, ec)) return "";
        const bool dir = std::filesystem::is_directory(value, ec);
        const bool exists = std::filesystem::exists(value, ec);  // a FIFO, a device, a socket
        // "--load: no such file 'x'"; a positional argument by its name: "no such model file 'x'".
        const std::string what = flag.rfind('-', 0) == 0 ? flag + ": " : "";
        const std::string kind = flag.rfind('-', 0) == 0 ? "file" : flag + " file";
        throw UsageError(dir      ? fmt::format("{}'{}' is a directory, not a {}", what, value, kind)
                         : exists ? fmt::format("{}'{}' is not a regular file (a {} must be one)", what, value, kind)
                                  : fmt::format("{}no such {} '{}'", what, kind, value));
      },
      ""));
}

CLI::Option* existing_directory(CLI::Option* option) {
  const std::string flag = option->get_name();
  return option->check(CLI::Validator(
      [flag](std::string& value) -> std::string {
        std::error_code ec;
        if (std::filesystem::is_directory(value, ec)) return "";
        throw UsageError(fmt::format("{}: no such directory '{}'", flag, value));
      },
      ""));
}

CLI::Option* device_name(CLI::Option* option) {
  const std::string flag = option->get_name();
  option->type_name("{cpu,cuda,cuda:N}");
  return option->check(CLI::Validator(
      [flag](std::string& value) -> std::string {
        int64_t index = 0;
        if (value == "cpu" || value == "cuda" ||
            (value.rfind("cuda:", 0) == 0 && parse_int(value.substr(5), index) == Parsed::ok &&
             index >= 0)) {
          return "";
        }
        std::string hint = value == "gpu" || value.rfind("gpu:", 0) == 0 ? "; did you mean 'cuda'?"
                                                                         : did_you_mean(value, {"cpu", "cuda"});
        throw UsageError(fmt::format("{}: {} is not a device{} (use cpu, cuda for the first GPU, or "
                                     "cuda:N)",
                                     flag, shown(value), hint));
      },
      ""));
}

std::optional<Diagnosis> diagnose(const CLI::App& app, const std::vector<std::string>& args) {
  const CLI::App* command = &app;
  std::vector<std::string> commands;
  for (const CLI::App* sub : app.get_subcommands({})) commands.push_back(sub->get_name());
  const CLI::Option* waiting = nullptr;  // an option whose value comes next
  std::string waiting_flag;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (waiting) {
      waiting = nullptr;
      continue;
    }
    if (arg == "--") break;
    if (arg.size() > 1 && arg[0] == '-' && !looks_like_number(arg)) {
      std::string flag = arg.substr(0, arg.find('='));
      if (flag.size() > 2 && flag[1] != '-') flag = flag.substr(0, 2);  // "-e3": "-e" with 3
      const CLI::Option* option = find_flag(*command, flag);
      if (!option) {
        if (command == &app) {
          for (const CLI::App* sub : app.get_subcommands({})) {
            const CLI::Option* theirs = find_flag(*sub, flag);
            if (!theirs) continue;
            std::string example = arg;  // with its value, when it takes one
            if (theirs->get_type_size() > 0 && arg.find('=') == std::string::npos && i + 1 < args.size()) {
              example += " " + args[i + 1];
            }
            return Diagnosis{fmt::format("{} is an option of '{}'; give it after the command, "
                                         "e.g. {} {}",
                                         flag, command_name(*sub), command_name(*sub), example),
                             sub};
          }
        }
        std::string hint = did_you_mean(flag, flags_of(*command));
        return Diagnosis{fmt::format("unknown option '{}'{}", flag,
                                     hint.empty() ? fmt::format(" ('{} --help' lists the options)",
                                                                command_name(*command))
                                                  : hint),
                         command};
      }
      if (option->get_type_size() > 0 && arg.find('=') == std::string::npos &&
          !(flag.size() == 2 && arg.size() > 2)) {
        waiting = option;
        waiting_flag = flag;
      }
      continue;
    }
    if (command == &app) {
      if (std::find(commands.begin(), commands.end(), arg) == commands.end()) {
        std::string hint = did_you_mean(arg, commands);
        return Diagnosis{fmt::format("unknown command {}{} (the commands: {})", shown(arg), hint,
                                     fmt::join(commands, ", ")),
                         &app};
      }
      command = app.get_subcommand(arg);
      continue;
    }
    if (command->get_options([](const CLI::Option* o) { return o->get_positional(); }).empty()) {
      return Diagnosis{fmt::format("unexpected argument {} ('{}' takes options only)", shown(arg),
                                   command_name(*command)),
                       command};
    }
  }
  if (waiting) {
    return Diagnosis{fmt::format("{} needs a value ({})", waiting_flag, waiting->get_type_name()),
                     command};
  }
  if (command == &app && args.empty()) {
    return Diagnosis{fmt::format("give a command: {}", fmt::join(commands, ", ")), &app};
  }
  return std::nullopt;
}

}  // namespace tg::cli
