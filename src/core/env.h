// Every TG_* environment variable the library reads, in one place.
#pragma once
#include <optional>
#include <string>

namespace tg::env {

/// TG_DEVICE: "cpu" or "cuda" overrides Device::default_device(); unset: nullopt.
std::optional<std::string> device_override();

}  // namespace tg::env
