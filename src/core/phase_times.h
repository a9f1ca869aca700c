// Cold-start phase times (TG_PHASES=1): where loading a saved executable and its first run spend
// wall time (file read, checksums, IR parse, library handle creation, cuDNN plan builds,
// autotuning, constant upload, ...). Each Scope adds its wall time to a named total; at process
// exit the totals are printed to stderr as one line "[tg phases] name=ms(count) ...", in first-use
// order ("name=ms(count,max ms)" when a phase ran more than once: its longest call). With
// TG_PHASES=2 each scope is also kept as an event and printed at exit as a timeline, one line per
// event: "[tg timeline] <start ms> +<duration ms> t<thread> <name>", start relative to the first
// event, threads numbered in order of their first event (at most 20000 events are kept); the
// runtime then also times each step of an interpreted run (named by its op). Off (one relaxed load
// per scope) unless TG_PHASES is set to 1 or 2 when the process starts.
#pragma once
#include <chrono>
#include <cstdint>

namespace tg::phases {

/// Whether TG_PHASES=1 or 2 was set (read once).
bool enabled();
/// Whether TG_PHASES=2 was set: scopes are also kept as timeline events.
bool timeline();
/// Adds `ns` nanoseconds (and one call) to the total named `name` (a string that lives as long as
/// the process: a literal or an op name); with timeline(), also an event from `t0` lasting `ns`.
void add(const char* name, std::chrono::steady_clock::time_point t0, int64_t ns);

/// Times its own lifetime into the total `name` when enabled() (a null name: nothing).
class Scope {
 public:
  explicit Scope(const char* name) : name_(name != nullptr && enabled() ? name : nullptr) {
    if (name_) t0_ = std::chrono::steady_clock::now();
  }
  ~Scope() { stop(); }
  /// Ends the scope early (idempotent).
  void stop() {
    if (!name_) return;
    add(name_, t0_,
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0_).count());
    name_ = nullptr;
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  const char* name_;
  std::chrono::steady_clock::time_point t0_{};
};

}  // namespace tg::phases
