// Shared by the libFuzzer targets (fuzz/*.cpp): a scratch file for the readers that take a path,
// and the rule every target follows: a tg::Error is the expected answer to bad bytes; anything
// else (another exception, a crash, a sanitizer report, an allocation over -malloc_limit_mb) is
// a bug that libFuzzer reports.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <span>
#include <string>

#include "tg/error.h"

namespace tg::fuzz {

/// A file of this process under $TMPDIR (default /tmp) named `name`, rewritten with `bytes`.
inline std::string scratch_file(const std::string& name, std::span<const uint8_t> bytes) {
  static const std::string dir = [] {
    const char* t = std::getenv("TMPDIR");
    std::filesystem::path d = std::filesystem::path(t && *t ? t : "/tmp") /
                              ("tg-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d.string();
  }();
  std::string path = dir + "/" + name;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();
  if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) std::abort();
  std::fclose(f);
  return path;
}

/// Runs f(); a tg::Error is the reader's answer to bad input and is swallowed.
template <typename F>
void expect_ok_or_tg_error(F&& f) {
  try {
    f();
  } catch (const tg::Error&) {
  }
}

}  // namespace tg::fuzz
