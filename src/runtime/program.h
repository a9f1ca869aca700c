// A compiled program: the optimized graph lowered for one backend, with its static memory plan
// (runtime/program.cpp), and the runtime that runs it (runtime/executor.cpp, run_state.cpp,
// run_results.cpp): arenas per concurrent caller, in-place transactional variables, CUDA graph
// capture and replay, interpreted control flow.
#pragma once
#include <atomic>
#include <condition_variable>
#include <memory>
#include <map>
#include <mutex>
#include <string>
#include <span>
#include <unordered_map>
#include <vector>

#include "backends/backend.h"
#include "backends/control_recording.h"
#include "ir/graph.h"
#include "runtime/memory_plan.h"
#include "tg/graph.h"

namespace tg::runtime {

/// True for nodes whose kernels may find bad input on the device (and report it in the run's
/// device error record): gathers and scatters (indices), integer divisions (zero divisors).
bool may_fail_on_device(const ir::Node& n);

/// A graph ready for lowering (compile's output): dead code removed, every type static except
/// where control flow makes it dynamic, nodes in execution order.
struct PlannedGraph {
  std::shared_ptr<const ir::Graph> graph;
  std::vector<int> schedule;              ///< node ids in execution order
  std::vector<int> feed_nodes;            ///< placeholder node per feed, feed order
  std::vector<ir::ValueRef> targets;      ///< results, in target order
  std::vector<int> target_ops;            ///< the target operations kept (side effects)
  ComputePrecision precision = ComputePrecision::f32;
  bool deterministic = false;  ///< CompileOptions::deterministic or TG_DETERMINISTIC=1
  bool first_run_kernels = false;  ///< LoadOptions::first_run_kernels (loaded executables only)
};

/// How to run one graph: the program's top level or a region body.
struct GraphPlan {
  const ir::Graph* graph = nullptr;
  std::vector<int> schedule;                              ///< node ids in execution order
  std::vector<backends::Kernel> kernels;                  ///< per step; null where the runtime runs it
  std::vector<char> dynamic;                              ///< per step: shapes known only at run time
  std::vector<std::vector<ir::ValueRef>> release_after;   ///< per step
  std::vector<int> feed_index;                            ///< per node: its feed (parameter), or -1
  std::vector<ir::ValueRef> results;
};

struct Instance;  // an arena and what is recorded with it (run_state.h)

/// The arena executables of one arena group share (CompileOptions::arena_group): one at a time
/// runs in it (`mu`); it only grows, and each growth is a new generation (recorded runs of an
/// older one record again).
struct SharedArena {
  std::mutex mu;
  std::shared_ptr<void> memory;
  size_t bytes = 0;
  uint64_t generation = 0;
  ~SharedArena();
};

/// What the runtime keeps with a graph (ir::Graph::runtime_state, under its runtime_mutex):
/// Graph::run's executables, keyed by signature, and the shared arenas of its arena groups, keyed
/// by device and group.
struct GraphState {
  std::map<std::string, Executable> executables;
  std::map<std::string, std::shared_ptr<SharedArena>> arenas;
};
/// The graph's state, made on first use. The caller holds g.runtime_mutex().
GraphState& graph_state(ir::Graph& g);

class Program {
 public:
  /// Lowers `plan` for `backend`. `memory_budget` as CompileOptions::memory_budget_bytes;
  /// `shared`: the arena group's arena (CompileOptions::arena_group), or null.
  Program(std::shared_ptr<const PlannedGraph> plan, const backends::Backend& backend, size_t memory_budget,
          std::shared_ptr<SharedArena> shared = nullptr);
  ~Program();
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  /// Runs with one value per feed (already checked against the feed types; on any device).
  /// Thread-safe. Errors as Executable::run.
  std::vector<TensorData> run(std::span<const TensorData> feeds, const RunOptions& options) const;

  const MemoryPlan& memory() const { return memory_; }
  /// Arena bytes of one run: the plan's, plus the scratch kernels declared so far.
  size_t arena_bytes() const;
  int arena_count() const;
  /// True when runs after the first replay a recorded run (CUDA graph).
  bool recordable() const { return recordable_; }
  /// CompileOptions::memory_budget_bytes.
  size_t memory_budget() const { return budget_; }
  const std::shared_ptr<const PlannedGraph>& plan() const { return plan_; }
  /// The generated kernels the runs so far compiled or took from a cache (saved executables).
  std::vector<backends::CodeObject> code_objects() const;
  /// tg::set_deferred_device_errors: replays (CUDA graph launches) of a program with device
  /// checks do not wait for the device; a check that failed is raised by a later run of the same
  /// arena, before it queues anything, or by check_deferred_errors. Recordings made before a
  /// change of this setting are recorded again.
  void set_deferred_errors(bool deferred) const { defer_errors_.store(deferred); }
  bool deferred_errors() const { return defer_errors_.load(); }
  /// Waits for the device and raises the first deferred error of the arenas not in use now (the
  /// others raise theirs at their next run). Nothing to do without deferred errors. With `wait`
  /// false, only errors the device has already posted to host memory are raised (a look at
  /// that memory per arena; it waits only to read a posted record).
  void check_deferred_errors(bool wait = true) const;

 private:
  friend class Executor;
  friend class RunState;

  void plan_direct_writes();
  void add_code(std::vector<backends::CodeObject> code) const;
  std::unique_ptr<Instance> acquire() const;
  void release(std::unique_ptr<Instance> inst) const;
  std::unique_ptr<Instance> make_instance() const;
  void bind_arena(Instance& inst, std::shared_ptr<void> memory) const;
  void add_region_plans(const ir::Graph& g);
  /// Deferred device errors: raises the error a replay of `inst` posted (zeroing the record
  /// first, so the arena runs again afterwards). wait: waits for the device and reads the record
  /// itself (needed before the recording's formatters are dropped or the record is zeroed);
  /// else only looks at the mailbox (no wait: an error still in flight is raised later).
  void settle_deferred(Instance& inst, bool wait) const;
  /// Why the program's control flow cannot be recorded (conditional nodes), or empty.
  std::string control_fallback_reason() const;

  std::shared_ptr<const PlannedGraph> plan_;
  const backends::Backend& backend_;
  const backends::ControlRecorder* recorder_ = nullptr;  ///< conditional nodes, where the backend has them
  Device device_;
  GraphPlan top_;
  std::unordered_map<const ir::Graph*, GraphPlan> regions_;
  MemoryPlan memory_;
  std::vector<int> var_slots_;   ///< the variable store slots the program reads or writes
  std::vector<int> var_index_;   ///< per store slot: index in var_slots_, or -1
  bool assigns_ = false;         ///< some node (regions included) assigns a variable
  /// Recorded runs only: outputs their kernel writes straight into a variable's buffer instead
  /// of the arena (the commit then has nothing to copy for them): per node id, per output, the
  /// program variable index, or -1. See plan_direct_writes.
  std::vector<std::vector<int>> direct_;
  /// Runs that walk the nodes (not recorded): outputs whose kernel writes straight into the
  /// buffer handed to the caller as a result, instead of the arena (results() copies nothing for
  /// them): per node id, per output, the target index, or -1. A top-level output with a kernel
  /// (not a view) that is a planned target, its first occurrence among the targets.
  std::vector<std::vector<int>> fresh_target_;
  bool recordable_ = false;
  size_t budget_ = 0;
  std::shared_ptr<SharedArena> shared_;

  mutable std::atomic<size_t> scratch_need_{0};  ///< most scratch one kernel asked for
  mutable std::atomic<bool> warmed_{false};      ///< a run completed (algorithms chosen, kernels built)
  mutable std::atomic<int64_t> runs_{0};
  mutable std::atomic<bool> defer_errors_{false};  ///< set_deferred_errors

  mutable std::mutex pool_mu_;
  mutable std::condition_variable pool_cv_;
  mutable std::vector<std::unique_ptr<Instance>> free_;
  mutable int instances_ = 0;
  mutable size_t held_bytes_ = 0;

  mutable std::mutex code_mu_;
  mutable std::vector<backends::CodeObject> code_;
};

}  // namespace tg::runtime
