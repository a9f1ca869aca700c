// Running the built `tg` command as a subprocess (the CLI is a process: tests run it).
#pragma once
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "data/files.h"

namespace tg::testing {

/// The tg binary: $TG_CLI, else <build>/bin/tg next to <build>/tests/tg_tests.
inline std::string tg_binary() {
  if (const char* env = std::getenv("TG_CLI")) return env;
  namespace fs = std::filesystem;
  return (fs::read_symlink("/proc/self/exe").parent_path().parent_path() / "bin" / "tg").string();
}

struct CliResult {
  int status = -1;
  std::string out;
  std::string err;
};

/// Runs `tg <args>` through the shell (args are shell words), capturing stdout, stderr and the
/// exit status (-1 when it did not exit normally).
inline CliResult run_tg(const std::string& args) {
  TempDir dir;
  const std::string err_file = dir.file("stderr");
  CliResult r;
  const std::string command = "'" + tg_binary() + "' " + args + " 2>'" + err_file + "'";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return r;
  char buffer[4096];
  size_t n = 0;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) r.out.append(buffer, n);
  const int status = pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(err_file);
  std::stringstream ss;
  ss << in.rdbuf();
  r.err = ss.str();
  return r;
}

/// The last line of `text` (without its newline).
inline std::string last_line(const std::string& text) {
  std::string t = text;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  const size_t at = t.rfind('\n');
  return at == std::string::npos ? t : t.substr(at + 1);
}

/// 'path' quoted for the shell.
inline std::string quote(const std::string& path) { return "'" + path + "'"; }

}  // namespace tg::testing
