// Cold-start phase times (TG_PHASES=1): where loading a saved executable and its first run spend
// wall time (file read, checksums, IR parse, library handle creation, cuDNN plan builds,
// autotuning, constant upload, ...). Each Scope adds its wall time to a named total; at process
// exit the totals are printed to stderr as one line "[tg phases] name=ms(count) ...", in first-use
// order. Off (one relaxed load per scope) unless TG_PHASES=1 is set when the process starts.
#pragma once
#include <chrono>
#include <cstdint>

namespace tg::phases {

/// Whether TG_PHASES=1 was set (read once).
bool enabled();
/// Adds `ns` nanoseconds (and one call) to the total named `name` (a string literal).
void add(const char* name, int64_t ns);

/// Times its own lifetime into the total `name` when enabled().
class Scope {
 public:
  explicit Scope(const char* name) : name_(enabled() ? name : nullptr) {
    if (name_) t0_ = std::chrono::steady_clock::now();
  }
  ~Scope() { stop(); }
  /// Ends the scope early (idempotent).
  void stop() {
    if (!name_) return;
    add(name_, std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0_).count());
    name_ = nullptr;
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  const char* name_;
  std::chrono::steady_clock::time_point t0_{};
};

}  // namespace tg::phases
