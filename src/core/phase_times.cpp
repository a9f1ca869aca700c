// Cold-start phase times (phase_times.h).
#include "core/phase_times.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tg::phases {
namespace {

constexpr size_t kMaxEvents = 20000;

struct Total {
  const char* name;
  int64_t ns = 0;
  int64_t calls = 0;
  int64_t max_ns = 0;
};

struct Event {
  const char* name;
  std::chrono::steady_clock::time_point t0;
  int64_t ns;
  std::thread::id thread;
};

struct Totals {
  std::mutex mu;
  std::vector<Total> totals;
  std::vector<Event> events;
  ~Totals() {
    std::lock_guard lock(mu);
    if (!events.empty()) print_timeline();
    if (totals.empty()) return;
    std::string line = "[tg phases]";
    for (const Total& t : totals) {
      char buf[200];
      if (t.calls > 1) {
        std::snprintf(buf, sizeof(buf), " %s=%.2fms(%lld,max %.2f)", t.name, static_cast<double>(t.ns) / 1e6,
                      static_cast<long long>(t.calls), static_cast<double>(t.max_ns) / 1e6);
      } else {
        std::snprintf(buf, sizeof(buf), " %s=%.2fms(%lld)", t.name, static_cast<double>(t.ns) / 1e6,
                      static_cast<long long>(t.calls));
      }
      line += buf;
    }
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  void print_timeline() {
    std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.t0 < b.t0; });
    const auto origin = events.front().t0;
    std::vector<std::thread::id> threads;
    for (const Event& e : events) {
      auto it = std::find(threads.begin(), threads.end(), e.thread);
      const size_t t = static_cast<size_t>(it - threads.begin());
      if (it == threads.end()) threads.push_back(e.thread);
      std::fprintf(stderr, "[tg timeline] %9.3f +%8.3f t%zu %s\n",
                   std::chrono::duration<double, std::milli>(e.t0 - origin).count(), static_cast<double>(e.ns) / 1e6,
                   t, e.name);
    }
  }
};

Totals& totals() {
  static Totals t;  // destroyed (and printed) at exit
  return t;
}

int level() {
  static const int l = [] {
    const char* v = std::getenv("TG_PHASES");
    const int set = v == nullptr ? 0 : std::strcmp(v, "1") == 0 ? 1 : std::strcmp(v, "2") == 0 ? 2 : 0;
    if (set) totals();  // constructed now, so destroyed after later statics
    return set;
  }();
  return l;
}

}  // namespace

bool enabled() { return level() > 0; }
bool timeline() { return level() == 2; }

void add(const char* name, std::chrono::steady_clock::time_point t0, int64_t ns) {
  Totals& t = totals();
  std::lock_guard lock(t.mu);
  if (timeline() && t.events.size() < kMaxEvents) t.events.push_back({name, t0, ns, std::this_thread::get_id()});
  for (Total& x : t.totals) {
    if (std::strcmp(x.name, name) == 0) {
      x.ns += ns;
      ++x.calls;
      x.max_ns = std::max(x.max_ns, ns);
      return;
    }
  }
  t.totals.push_back({name, ns, 1, ns});
}

}  // namespace tg::phases
