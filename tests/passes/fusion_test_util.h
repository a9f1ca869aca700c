// Helpers of the fusion pass tests: TG_FUSION set for a scope, counting op names in printed IR.
#pragma once
#include <cstdlib>
#include <optional>
#include <string>

namespace tg::testing {

/// Sets TG_FUSION to `value` until the end of the scope (the previous value restored).
class ScopedFusion {
 public:
  explicit ScopedFusion(const char* value) {
    if (const char* old = std::getenv("TG_FUSION")) old_ = std::string(old);
    setenv("TG_FUSION", value, 1);
  }
  ~ScopedFusion() {
    if (old_) setenv("TG_FUSION", old_->c_str(), 1);
    else unsetenv("TG_FUSION");
  }
  ScopedFusion(const ScopedFusion&) = delete;
  ScopedFusion& operator=(const ScopedFusion&) = delete;

 private:
  std::optional<std::string> old_;
};

/// Occurrences of `what` in `text`.
inline int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

}  // namespace tg::testing
