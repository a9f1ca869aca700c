// Cold-start phase times (phase_times.h).
#include "core/phase_times.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace tg::phases {
namespace {

struct Total {
  const char* name;
  int64_t ns = 0;
  int64_t calls = 0;
};

struct Totals {
  std::mutex mu;
  std::vector<Total> totals;
  ~Totals() {
    std::lock_guard lock(mu);
    if (totals.empty()) return;
    std::string line = "[tg phases]";
    for (const Total& t : totals) {
      char buf[160];
      std::snprintf(buf, sizeof(buf), " %s=%.2fms(%lld)", t.name, static_cast<double>(t.ns) / 1e6,
                    static_cast<long long>(t.calls));
      line += buf;
    }
    std::fprintf(stderr, "%s\n", line.c_str());
  }
};

Totals& totals() {
  static Totals t;  // destroyed (and printed) at exit
  return t;
}

}  // namespace

bool enabled() {
  static const bool on = [] {
    const char* v = std::getenv("TG_PHASES");
    const bool set = v != nullptr && std::strcmp(v, "1") == 0;
    if (set) totals();  // constructed now, so destroyed after later statics
    return set;
  }();
  return on;
}

void add(const char* name, int64_t ns) {
  Totals& t = totals();
  std::lock_guard lock(t.mu);
  for (Total& x : t.totals) {
    if (std::strcmp(x.name, name) == 0) {
      x.ns += ns;
      ++x.calls;
      return;
    }
  }
  t.totals.push_back({name, ns, 1});
}

}  // namespace tg::phases
