#include "core/env.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

#include "core/error_util.h"

namespace tg::env {
namespace {

// The whole number `name` holds, in [lo, hi]; `fallback` (which may lie outside the range, to
// stand for "unset") when unset or empty. A value that is not
// a whole number is reported once on stderr and gives `fallback` (it was read as 0 before:
// TG_SPECIALIZATIONS=abc silently became 1). A whole number outside [lo, hi], one beyond int64
// included, raises invalid_argument naming the variable, the value and the range (it was clamped
// without a word, or, beyond int64, called "not a whole number").
long long whole_number(const char* name, long long fallback, long long lo, long long hi) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  errno = 0;
  const long long n = std::strtoll(v, &end, 10);
  if (end != v && *end == '\0' && (errno == ERANGE || n < lo || n > hi)) {
    fail(ErrorCode::invalid_argument, "env", "{}={} is outside the range [{}, {}] it takes", name,
         v, lo, hi);
  }
  if (end == v || *end != '\0') {
    static std::mutex mu;
    static std::set<std::string> told;
    std::lock_guard lock(mu);
    if (told.insert(name).second) {
      if (fallback >= lo && fallback <= hi) {
        std::fprintf(stderr, "[tg] %s=%s is not a whole number; using %lld\n", name, v, fallback);
      } else {  // a fallback outside the range stands for "unset" (prepare_delay_ms)
        std::fprintf(stderr, "[tg] %s=%s is not a whole number; using the default\n", name, v);
      }
    }
    return fallback;
  }
  return n;
}

}  // namespace

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
  // 32: the select kernel's cap (cuda/kernels/control.h)
  return static_cast<int>(whole_number("TG_LOOP_UNROLL", 32, 1, 32));
}

int condition_streams() {
  return static_cast<int>(whole_number("TG_CONDITION_STREAMS", 6, 0, 8));
}

bool branch_select() {
  const char* v = std::getenv("TG_BRANCH_SELECT");
  return v == nullptr || std::string_view(v) != "0";
}

int64_t unroll_limit() {
  return whole_number("TG_UNROLL_LIMIT", 8192, 0, INT64_MAX);
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
  return static_cast<int>(whole_number("TG_SPECIALIZATIONS", 16, 1, 4096));
}

bool dependent_launch_disabled() {
  static const bool off = [] {
    const char* v = std::getenv("TG_PDL");
    return v != nullptr && std::string_view(v) == "0";
  }();
  return off;
}

bool code_sink_dedup() {
  static const bool dedup = [] {
    const char* v = std::getenv("TG_CODE_SINK_DEDUP");
    return v == nullptr || std::string_view(v) != "0";
  }();
  return dedup;
}

bool nccl_overlap() {
  static const bool enabled = [] {
    const char* v = std::getenv("TG_NCCL_OVERLAP");
    return v == nullptr || std::string_view(v) != "0";
  }();
  return enabled;
}

std::string preload_modules() {
  const char* v = std::getenv("TG_PRELOAD_MODULES");
  return v != nullptr ? v : "0";
}

bool prepare_choices() {
  const char* v = std::getenv("TG_PREPARE_CHOICES");
  return !(v != nullptr && std::string_view(v) == "0");
}

int prepare_threads() {
  return static_cast<int>(whole_number("TG_PREPARE_THREADS", 4, 1, 16));
}

std::optional<int> prepare_delay_ms() {
  const long long ms = whole_number("TG_PREPARE_DELAY_MS", -1, 0, INT32_MAX);
  if (ms < 0) return std::nullopt;
  return static_cast<int>(ms);
}

bool prefetch_constants() {
  const char* v = std::getenv("TG_PREFETCH_CONSTANTS");
  return v != nullptr && std::string_view(v) == "1";
}

bool cudnn_plan_json() {
  const char* v = std::getenv("TG_CUDNN_PLAN_JSON");
  return v != nullptr && std::string_view(v) == "1";
}

bool trust_stored_algos() {
  const char* v = std::getenv("TG_TRUST_STORED_ALGOS");
  return !(v != nullptr && std::string_view(v) == "0");
}

std::optional<bool> first_run_kernels_override() {
  const char* v = std::getenv("TG_FIRST_RUN_KERNELS");
  if (v == nullptr) return std::nullopt;
  return std::string_view(v) == "1";
}

std::string stream_upload() {
  const char* v = std::getenv("TG_STREAM_UPLOAD");
  return v != nullptr ? v : "1";
}

int upload_streams() {
  const char* v = std::getenv("TG_UPLOAD_STREAMS");
  if (v == nullptr || *v == '\0') return 1;
  return std::clamp(std::atoi(v), 1, 16);
}

bool staging_early() {
  const char* v = std::getenv("TG_STAGING_EARLY");
  return v != nullptr && std::string_view(v) == "1";
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
