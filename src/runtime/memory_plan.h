// The static memory plan of a program: every intermediate value of static shape gets an offset in
// one arena per run, from the values' lifetimes over the schedule (docs/design/0005).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "ir/graph.h"

namespace tg::runtime {

/// Offsets and sizes are multiples of this.
constexpr int64_t kArenaAlignment = 256;
/// `bytes` rounded up to a multiple of kArenaAlignment.
inline size_t align_up(size_t bytes) {
  const auto a = static_cast<size_t>(kArenaAlignment);
  return (bytes + a - 1) / a * a;
}

/// Where each value of a program lives during a run.
struct MemoryPlan {
  static constexpr int64_t kUnplanned = -1;
  /// Per node id, per output: the value's byte offset in the arena, or kUnplanned: a view of
  /// another value (view_input), a variable's buffer, a
  /// constant, a value control flow computes, or one whose shape is known only at run time.
  std::vector<std::vector<int64_t>> offset;
  /// Per feed (feed order): the offset of its input slot, where a run copies a feed it cannot
  /// read in place; kUnplanned when the plan has no input slots.
  std::vector<int64_t> input_offset;
  /// Per target (target order): where the run leaves the target's value for the copy to the
  /// caller, made after the commit of variables (a target that is a variable's value, or a feed
  /// read in place, is copied there first); kUnplanned for shapes known only at run time.
  std::vector<int64_t> target_offset;
  /// Per schedule step: the values whose last reader it is (the run drops its handles on them).
  std::vector<std::vector<ir::ValueRef>> release_after;
  int64_t arena_bytes = 0;    ///< the arena's size
  int64_t planned_bytes = 0;  ///< the planned values' sizes summed (what no reuse would take)
  int in_place = 0;           ///< outputs placed over the memory of a dead input
};

struct MemoryPlanOptions {
  /// Give every feed an input slot (backends that record runs: a replay reads fixed addresses).
  bool input_slots = false;
  /// Backend::writes_in_place: may output 0 of `node` take the memory of input `input`?
  std::function<bool(const ir::Node& node, int input, const TensorType& type)> in_place;
};

/// The plan for running `schedule` (node ids of `g` in order) with `feeds` (placeholder ids) and
/// `targets` (read after the run, so they live to its end). Values that assignments give to
/// variables live to the end too (the commit reads them).
MemoryPlan plan_memory(const ir::Graph& g, const std::vector<int>& schedule, const std::vector<int>& feeds,
                       const std::vector<ir::ValueRef>& targets, const MemoryPlanOptions& options);

/// For each step of `schedule`, the values whose last reader it is (values in `keep` are never
/// released; a value nobody reads is released where it is made).
std::vector<std::vector<ir::ValueRef>> plan_releases(const ir::Graph& g, const std::vector<int>& schedule,
                                                     const std::vector<ir::ValueRef>& keep);

/// For nodes whose output 0 is a view of one of their inputs (same storage): that input's index;
/// else -1. reshape and stop_gradient (input 0), a slice of one contiguous block
/// (ops::slice_view_offset; input 0, at that offset), assign_variable (input 1, its value).
int view_input(const ir::Node& node);

/// True when the runtime places the outputs of `node` in the arena before its kernel runs (the
/// kernel writes them): every node with a kernel except views and constants, when its output
/// shapes are static.
bool writes_planned_outputs(const ir::Node& node);

}  // namespace tg::runtime
