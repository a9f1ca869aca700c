// Helpers shared by the ResNet-50 benchmark programs: command-line flags and the median.
#pragma once
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace tg::bench {

/// Walks argv: `while (r.next()) { if (r.is("--steps")) a.steps = std::stoll(r.value()); ... else r.unknown(); }`.
/// A flag without its value or an unknown flag prints a message and exits with status 2.
class Flags {
 public:
  Flags(int argc, char** argv) : argc_(argc), argv_(argv) {}
  bool next() {
    if (++i_ >= argc_) return false;
    key_ = argv_[i_];
    return true;
  }
  bool is(const char* flag) const { return key_ == flag; }
  std::string value() {
    if (i_ + 1 >= argc_) {
      std::fprintf(stderr, "missing value after %s\n", key_.c_str());
      std::exit(2);
    }
    return argv_[++i_];
  }
  [[noreturn]] void unknown() const {
    std::fprintf(stderr, "unknown argument %s\n", key_.c_str());
    std::exit(2);
  }

 private:
  int argc_;
  char** argv_;
  int i_ = 0;
  std::string key_;
};

/// Median of v (the mean of the two middle values for an even count); 0 for none.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace tg::bench
