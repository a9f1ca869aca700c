// Helpers shared by the ResNet-50 benchmark programs: command-line flags and the median.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <cstdlib>
#include <string>
#include <vector>

#include "tg/graph.h"

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

/// Runs `interpreter script args` (a peer in Python: PyTorch, JAX) and returns what it printed,
/// stdout and stderr together. `status`: its exit status (-1 when it could not start); when null,
/// a failure is reported on stderr with the command and its output.
inline std::string run_python(const std::string& script, const std::string& args, int* status = nullptr,
                              const std::string& interpreter = "python3") {
  const std::string cmd = interpreter + " " + script + " " + args + " 2>&1";
  std::FILE* p = popen(cmd.c_str(), "r");
  if (!p) {
    if (status) *status = -1;
    return "";
  }
  std::string out;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  const int rc = pclose(p);
  if (status) *status = rc;
  else if (rc != 0) std::fprintf(stderr, "peer failed: %s\n%s\n", cmd.c_str(), out.c_str());
  return out;
}

/// Median of v (the mean of the two middle values for an even count); 0 for none.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// Wall-clock time of a call (median, ms) with TensorGraph's host time per run (waits for the
/// device excluded) and CUDA graph launches per run over the timed calls.
struct Timing {
  double median_ms = 0;
  double host_us = 0;           ///< per run, waits excluded
  double launches_per_run = 0;  ///< CUDA graph launches
};

/// Times `call` (e.g. one run and its result read back) `iters` times after `warmup` calls.
inline Timing time_calls(const std::function<void()>& call, int64_t iters, int warmup = 20) {
  for (int i = 0; i < warmup; ++i) call();
  const tg::RuntimeStats before = tg::runtime_stats();
  std::vector<double> ms;
  for (int64_t i = 0; i < iters; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    call();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  const tg::RuntimeStats after = tg::runtime_stats();
  Timing t;
  t.median_ms = median(ms);
  const double runs = static_cast<double>(after.runs - before.runs);
  t.host_us = static_cast<double>(after.run_host_ns - before.run_host_ns) / 1e3 / std::max(runs, 1.0);
  t.launches_per_run = static_cast<double>(after.graph_launches - before.graph_launches) / std::max(runs, 1.0);
  return t;
}

}  // namespace tg::bench
