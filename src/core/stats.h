// Process-wide runtime counters behind tg::runtime_stats() (include/tg/graph.h). Every layer
// counts here (compiles in the runtime, kernel compiles and autotuning in the CUDA backend).
#pragma once
#include <cstdint>

namespace tg::stats {

enum class Counter {
  compiles,
  graph_launches,
  graph_captures,
  capture_fallbacks,
  interpreted_runs,
  runs,
  run_host_ns,
  host_waits,
  kernel_compiles,
  kernel_cache_rejects,
  autotune_runs,
  arena_allocations,
  input_copy_bytes,
  result_copy_bytes,
  control_fallbacks,
  executable_loads,
  executable_load_recompiles,
  kernel_preloads,
  arena_bytes,  ///< a level, not a count: add() with a negative delta when an arena goes
  kCount
};

/// Adds `delta` to counter `c` (relaxed atomics: cheap on the hot path).
void add(Counter c, int64_t delta = 1);
int64_t get(Counter c);

}  // namespace tg::stats
