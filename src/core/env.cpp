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

// Switches: on unless `name` is "0" (unset, empty or anything else is on).
bool unless_zero(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr || std::string_view(v) != "0";
}

// True when `name` is set to exactly `value`.
bool set_to(const char* name, std::string_view value) {
  const char* v = std::getenv(name);
  return v != nullptr && std::string_view(v) == value;
}

// Opt-in switches: on when `name` is set, not empty and not "0".
bool set_not_zero(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' && std::string_view(v) != "0";
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
  return unless_zero("TG_BRANCH_SELECT");
}

int64_t unroll_limit() {
  return whole_number("TG_UNROLL_LIMIT", 8192, 0, INT64_MAX);
}

bool cudnn_graph_enabled() {
  static const bool on = unless_zero("TG_CUDNN_GRAPH");
  return on;
}

bool profile() {
  static const bool on = set_not_zero("TG_PROFILE");
  return on;
}

bool trace() {
  static const bool on = set_not_zero("TG_TRACE");
  return on;
}

bool profile_shapes() {
  static const bool on = set_to("TG_PROFILE", "shapes");
  return on;
}

bool deterministic() {
  return set_to("TG_DETERMINISTIC", "1");
}

int specialization_cache_size() {
  return static_cast<int>(whole_number("TG_SPECIALIZATIONS", 16, 1, 4096));
}

bool dependent_launch_disabled() {
  static const bool off = set_to("TG_PDL", "0");
  return off;
}

bool code_sink_dedup() {
  static const bool dedup = unless_zero("TG_CODE_SINK_DEDUP");
  return dedup;
}

bool nccl_overlap() {
  static const bool enabled = unless_zero("TG_NCCL_OVERLAP");
  return enabled;
}

std::string preload_modules() {
  const char* v = std::getenv("TG_PRELOAD_MODULES");
  return v != nullptr ? v : "0";
}

bool prepare_choices() {
  return unless_zero("TG_PREPARE_CHOICES");
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
  return set_to("TG_PREFETCH_CONSTANTS", "1");
}

bool cudnn_plan_json() {
  return set_to("TG_CUDNN_PLAN_JSON", "1");
}

bool project_heads() {
  return unless_zero("TG_PROJECT_HEADS");
}

bool matmul_folds() {
  return unless_zero("TG_MATMUL_FOLDS");
}

bool merge_projections() {
  return unless_zero("TG_MERGE_PROJECTIONS");
}

bool merge_siblings() {
  return unless_zero("TG_MERGE_SIBLINGS");
}

bool matmul_weights_tn() {
  return set_to("TG_MATMUL_WEIGHTS_TN", "1");
}

std::string dump_graph_path() {
  const char* v = std::getenv("TG_DUMP_GRAPH");
  return v != nullptr ? v : "";
}

bool matmul_autotune() {
  return set_to("TG_MATMUL_AUTOTUNE", "1");
}

bool trust_stored_algos() {
  return unless_zero("TG_TRUST_STORED_ALGOS");
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
  return static_cast<int>(whole_number("TG_UPLOAD_STREAMS", 1, 1, 16));
}

bool staging_early() {
  return set_to("TG_STAGING_EARLY", "1");
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
