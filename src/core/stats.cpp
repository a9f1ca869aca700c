#include "core/stats.h"

#include <array>
#include <atomic>

#include "tg/graph.h"

namespace tg {
namespace stats {
namespace {
std::array<std::atomic<int64_t>, static_cast<size_t>(Counter::kCount)>& counters() {
  static std::array<std::atomic<int64_t>, static_cast<size_t>(Counter::kCount)> c{};
  return c;
}
}  // namespace

void add(Counter c, int64_t delta) { counters()[static_cast<size_t>(c)].fetch_add(delta, std::memory_order_relaxed); }
int64_t get(Counter c) { return counters()[static_cast<size_t>(c)].load(std::memory_order_relaxed); }

}  // namespace stats

RuntimeStats runtime_stats() {
  using stats::Counter;
  using stats::get;
  RuntimeStats s;
  s.compiles = get(Counter::compiles);
  s.graph_launches = get(Counter::graph_launches);
  s.graph_captures = get(Counter::graph_captures);
  s.capture_fallbacks = get(Counter::capture_fallbacks);
  s.interpreted_runs = get(Counter::interpreted_runs);
  s.runs = get(Counter::runs);
  s.run_host_ns = get(Counter::run_host_ns);
  s.host_waits = get(Counter::host_waits);
  s.kernel_compiles = get(Counter::kernel_compiles);
  s.kernel_cache_rejects = get(Counter::kernel_cache_rejects);
  s.autotune_runs = get(Counter::autotune_runs);
  s.arena_allocations = get(Counter::arena_allocations);
  s.input_copy_bytes = get(Counter::input_copy_bytes);
  s.result_copy_bytes = get(Counter::result_copy_bytes);
  s.control_fallbacks = get(Counter::control_fallbacks);
  s.arena_bytes = get(Counter::arena_bytes);
  s.executable_loads = get(Counter::executable_loads);
  s.executable_load_recompiles = get(Counter::executable_load_recompiles);
  s.kernel_preloads = get(Counter::kernel_preloads);
  return s;
}

}  // namespace tg
