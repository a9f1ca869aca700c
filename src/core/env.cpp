#include "core/env.h"

#include <cstdlib>

namespace tg::env {

std::optional<std::string> device_override() {
  const char* v = std::getenv("TG_DEVICE");
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

std::optional<bool> fusion_override() {
  const char* s = std::getenv("TG_FUSION");  // read at every compile (tests switch it)
  if (s == nullptr || *s == '\0') return std::nullopt;
  return std::string(s) != "0";
}

bool profile() {
  static const bool on = [] {
    const char* v = std::getenv("TG_PROFILE");
    return v != nullptr && *v != '\0' && std::string(v) != "0";
  }();
  return on;
}

}  // namespace tg::env
