#include "core/env.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>

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

std::optional<bool> channels_last_override() {
  const char* s = std::getenv("TG_CHANNELS_LAST");  // read at every compile (tests switch it)
  if (s == nullptr || *s == '\0') return std::nullopt;
  return std::string(s) != "0";
}

std::optional<std::string> kernel_cache_dir() {
  if (const char* d = std::getenv("TG_KERNEL_CACHE_DIR"); d && *d) return std::string(d);
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/tg/kernels";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/tg/kernels";
  return std::nullopt;
}

bool cuda_graphs_enabled() {
  const char* v = std::getenv("TG_CUDA_GRAPHS");  // read at every compile (tests switch it)
  return v == nullptr || std::string(v) != "0";
}

bool dependent_launch() {
  static const bool on = [] {
    const char* v = std::getenv("TG_PDL");
    return v != nullptr && std::string(v) == "1";
  }();
  return on;
}

int loop_unroll() {
  const char* v = std::getenv("TG_LOOP_UNROLL");
  if (v == nullptr || *v == 0) return 32;
  const int k = std::atoi(v);
  return k < 1 ? 1 : k > 32 ? 32 : k;  // 32: the select kernel's cap (cuda/kernels/control.h)
}

int condition_streams() {
  const char* v = std::getenv("TG_CONDITION_STREAMS");
  if (v == nullptr || *v == 0) return 6;
  const int n = std::atoi(v);
  return n < 0 ? 0 : n > 8 ? 8 : n;
}

bool branch_select() {
  const char* v = std::getenv("TG_BRANCH_SELECT");
  return v == nullptr || std::string_view(v) != "0";
}

int64_t unroll_limit() {
  const char* v = std::getenv("TG_UNROLL_LIMIT");
  if (v == nullptr || *v == 0) return 8192;
  const long long n = std::atoll(v);
  return n < 0 ? 0 : n;
}

bool cudnn_graph_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("TG_CUDNN_GRAPH");
    return v == nullptr || std::string(v) != "0";
  }();
  return on;
}

bool profile() {
  static const bool on = [] {
    const char* v = std::getenv("TG_PROFILE");
    return v != nullptr && *v != '\0' && std::string(v) != "0";
  }();
  return on;
}

bool trace() {
  static const bool on = [] {
    const char* v = std::getenv("TG_TRACE");
    return v != nullptr && *v != '\0' && std::string(v) != "0";
  }();
  return on;
}

bool profile_shapes() {
  static const bool on = [] {
    const char* v = std::getenv("TG_PROFILE");
    return v != nullptr && std::string(v) == "shapes";
  }();
  return on;
}

bool deterministic() {
  const char* v = std::getenv("TG_DETERMINISTIC");
  return v && std::string(v) == "1";
}

int specialization_cache_size() {
  const char* s = std::getenv("TG_SPECIALIZATIONS");
  if (s == nullptr || *s == '\0') return 16;
  const long v = std::strtol(s, nullptr, 10);
  return static_cast<int>(std::clamp<long>(v, 1, 4096));
}

std::array<int, 10> stencil_tile_override() {
  std::array<int, 10> r{};
  const char* s = std::getenv("TG_STENCIL_TILE");
  if (s == nullptr) return r;
  for (size_t i = 0; i < r.size() && *s != '\0'; ++i) {
    if (*s == ',') {  // an empty field keeps the planner's choice
      ++s;
      continue;
    }
    char* end = nullptr;
    const long v = std::strtol(s, &end, 10);
    if (end == s) break;
    r[i] = v >= 0 && v <= 64 ? static_cast<int>(v) : 0;
    s = *end == ',' ? end + 1 : end;
  }
  return r;
}

}  // namespace tg::env
