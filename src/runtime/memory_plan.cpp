// The static memory plan (memory_plan.h): lifetimes over the schedule, then offsets.
//
// A value's storage is its root: a view (reshape, stop_gradient, an assignment's value, a slice of
// one contiguous block) shares its input's root, so a root lives from the step that defines it to
// the last step that reads it or any of its views; targets and assigned values live to the end of
// the run. A target that starts inside its root (a slice's block) gets a slot of its own. Outputs of
// single-output nodes the backend computes in place take the root of an input whose life ends
// there (not one another input reads part of, through a slice view). Offsets are then given
// greedily by size (largest first, each at the lowest offset where it overlaps no root alive at
// the same time): the "greedy by size" strategy of TFLite's arena
// planner (Pisarchyk and Lee, "Efficient Memory Management for Deep Neural Net Inference", 2020).
#include "runtime/memory_plan.h"

#include <algorithm>
#include <map>

#include "backends/backend.h"
#include "ops/slice.h"

namespace tg::runtime {
namespace {

int64_t align(int64_t bytes) { return (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment; }

int64_t bytes_of(const TensorType& t) {
  return is_static(t.shape) ? num_elements(t.shape) * static_cast<int64_t>(dtype_size(t.dtype)) : -1;
}

struct Root {
  int64_t bytes = 0;
  int start = 0;  ///< first step it is written
  int end = 0;    ///< last step it is read
  bool planned = false;
  bool feed = false;
  int64_t offset = MemoryPlan::kUnplanned;
};

class Planner {
 public:
  Planner(const ir::Graph& g, const std::vector<int>& schedule, const MemoryPlanOptions& options)
      : g_(g), schedule_(schedule), options_(options) {
    root_of_.resize(static_cast<size_t>(g.size()));
    for (const ir::Node& n : g.nodes()) root_of_[n.id].assign(n.outputs.size(), -1);
    at_.resize(static_cast<size_t>(g.size()));
    for (const ir::Node& n : g.nodes()) at_[n.id].assign(n.outputs.size(), 0);
  }

  MemoryPlan plan(const std::vector<int>& feeds, const std::vector<ir::ValueRef>& targets) {
    const int end_of_run = static_cast<int>(schedule_.size());
    for (size_t step = 0; step < schedule_.size(); ++step) define(g_.node(schedule_[step]), static_cast<int>(step), feeds);
    for (size_t step = 0; step < schedule_.size(); ++step) {
      const ir::Node& n = g_.node(schedule_[step]);
      for (const ir::ValueRef& in : n.inputs) use(in, static_cast<int>(step));
      if (n.kind == ir::OpKind::assign_variable) use({n.id, 0}, end_of_run);  // the commit reads it
    }
    for (const ir::ValueRef& t : targets) use(t, end_of_run);
    // A control-flow node's results may be its inputs themselves (a loop that runs zero times,
    // a branch that returns a parameter): its inputs live as long as its outputs.
    for (size_t step = schedule_.size(); step-- > 0;) {
      const ir::Node& n = g_.node(schedule_[step]);
      // all_reduce and broadcast may run on a stream of their own (NCCL on CUDA, overlapping the
      // kernels after them until a reader of their output joins it): their inputs, which the
      // collective reads meanwhile, live as long as their outputs, so no later kernel writes there.
      const bool async = n.kind == ir::OpKind::all_reduce || n.kind == ir::OpKind::broadcast;
      if (n.regions.empty() && !async) continue;
      int end = static_cast<int>(step);
      for (int r : root_of_[n.id]) end = std::max(end, r >= 0 ? roots_[r].end : end);
      for (const ir::ValueRef& in : n.inputs) use(in, end);
    }
    place_in_place();
    // Targets whose value is not (or not always) written in the arena by the run get a slot of
    // their own at the end; the others are read where they are.
    std::vector<int> target_root;
    for (const ir::ValueRef& t : targets) {
      int r = root_of_[t.node][t.index];
      if (r < 0 || !roots_[r].planned || roots_[r].feed || at_[t.node][t.index] != 0) {
        const int64_t bytes = bytes_of(g_.type(t));
        r = bytes >= 0 ? new_root(t, bytes, end_of_run, true) : -1;
      }
      target_root.push_back(r);
    }
    MemoryPlan plan;
    assign_offsets(plan);
    for (int r : target_root) plan.target_offset.push_back(r >= 0 && roots_[r].planned ? roots_[r].offset : MemoryPlan::kUnplanned);
    plan.offset.resize(static_cast<size_t>(g_.size()));
    for (const ir::Node& n : g_.nodes()) {
      plan.offset[n.id].assign(n.outputs.size(), MemoryPlan::kUnplanned);
      for (size_t i = 0; i < n.outputs.size(); ++i) {
        const int r = root_of_[n.id][i];
        if (r < 0 || !roots_[r].planned) continue;
        // Outputs the kernel writes (in place or not), and an assignment's own staging slot;
        // views and feeds get none (the run binds them).
        const bool own_slot = n.kind == ir::OpKind::assign_variable && defined_by_[r] == ir::ValueRef{n.id, 0};
        if (writes_planned_outputs(n) || own_slot) plan.offset[n.id][i] = roots_[r].offset;
      }
    }
    for (int f : feeds) {
      int r = root_of_[f][0];
      plan.input_offset.push_back(r >= 0 && roots_[r].planned ? roots_[r].offset : MemoryPlan::kUnplanned);
    }
    plan.release_after = plan_releases(g_, schedule_, targets);
    return plan;
  }

 private:
  int new_root(ir::ValueRef v, int64_t bytes, int step, bool planned) {
    roots_.push_back(Root{bytes, step, step, planned && bytes > 0, false, MemoryPlan::kUnplanned});
    defined_by_.push_back(v);
    return static_cast<int>(roots_.size()) - 1;
  }

  void define(const ir::Node& n, int step, const std::vector<int>& feeds) {
    if (n.kind == ir::OpKind::placeholder) {
      const bool fed = std::find(feeds.begin(), feeds.end(), n.id) != feeds.end();
      // An input slot is written before the run starts, wherever the placeholder is scheduled
      // (a model's labels come after its layers): it lives from the first step.
      int r = new_root({n.id, 0}, bytes_of(n.outputs[0]), 0, fed && options_.input_slots);
      roots_[r].feed = true;
      root_of_[n.id][0] = r;
      return;
    }
    const int v = view_input(n);
    if (v >= 0) {
      const ir::ValueRef in = n.inputs[static_cast<size_t>(v)];
      const int r = root_of_[in.node][in.index];
      if (n.kind == ir::OpKind::assign_variable && (r < 0 || !roots_[r].planned)) {
        // The value is not in the arena (a variable, constant, feed read in place): the run
        // copies it into a slot of its own, so the commit never reads a buffer another
        // assignment of the same run may write.
        root_of_[n.id][0] = new_root({n.id, 0}, bytes_of(n.outputs[0]), step, true);
      } else {
        root_of_[n.id][0] = r;
        // Where in the root the view starts (bytes): a slice's block is further in.
        at_[n.id][0] = at_[in.node][in.index] + (n.kind == ir::OpKind::slice ? *ops::slice_view_offset(n) : 0);
      }
      return;
    }
    const bool planned = writes_planned_outputs(n);
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      root_of_[n.id][i] = new_root({n.id, static_cast<int>(i)}, bytes_of(n.outputs[i]), step, planned);
    }
  }

  void use(ir::ValueRef v, int step) {
    int r = root_of_[v.node][v.index];
    if (r >= 0) roots_[r].end = std::max(roots_[r].end, step);
  }

  // Outputs computed in place: they take the root of an input read last there.
  void place_in_place() {
    if (!options_.in_place) return;
    for (size_t step = 0; step < schedule_.size(); ++step) {
      const ir::Node& n = g_.node(schedule_[step]);
      if (n.outputs.size() != 1 || !writes_planned_outputs(n)) continue;
      const int out = root_of_[n.id][0];
      if (out < 0 || !roots_[out].planned) continue;
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        const ir::ValueRef in = n.inputs[k];
        const int r = root_of_[in.node][in.index];
        if (r < 0 || r == out || !roots_[r].planned || roots_[r].feed || at_[in.node][in.index] != 0) continue;
        if (roots_[r].end != static_cast<int>(step) || roots_[r].bytes != roots_[out].bytes) continue;
        if (!options_.in_place(n, static_cast<int>(k), g_.type(in))) continue;
        // Another input reading part of that root (a slice view, broadcast) would read elements
        // the kernel has already overwritten; the same elements at the same index are fine.
        bool apart = true;
        for (size_t j = 0; j < n.inputs.size(); ++j) {
          const ir::ValueRef o = n.inputs[j];
          if (j != k && root_of_[o.node][o.index] == r &&
              (at_[o.node][o.index] != 0 || g_.type(o).shape != g_.type(in).shape)) {
            apart = false;
          }
        }
        if (!apart) continue;
        roots_[r].end = roots_[out].end;
        roots_[out].planned = false;
        for (auto& outs : root_of_) {
          for (int& x : outs) {
            if (x == out) x = r;
          }
        }
        in_place_++;
        break;
      }
    }
  }

  void assign_offsets(MemoryPlan& plan) {
    std::vector<int> order;
    for (size_t r = 0; r < roots_.size(); ++r) {
      if (roots_[r].planned) {
        order.push_back(static_cast<int>(r));
        plan.planned_bytes += align(roots_[r].bytes);
      }
    }
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return roots_[a].bytes > roots_[b].bytes; });
    std::vector<int> placed;
    std::vector<std::pair<int64_t, int64_t>> busy;  // [offset, offset + size) of roots alive at once
    for (int r : order) {
      Root& x = roots_[r];
      busy.clear();
      for (int p : placed) {
        const Root& y = roots_[p];
        if (y.start <= x.end && x.start <= y.end) busy.emplace_back(y.offset, y.offset + align(y.bytes));
      }
      std::sort(busy.begin(), busy.end());
      int64_t at = 0;
      for (const auto& [lo, hi] : busy) {
        if (lo - at >= align(x.bytes)) break;
        at = std::max(at, hi);
      }
      x.offset = at;
      plan.arena_bytes = std::max(plan.arena_bytes, at + align(x.bytes));
      placed.push_back(r);
    }
    plan.in_place = in_place_;
  }

  const ir::Graph& g_;
  const std::vector<int>& schedule_;
  const MemoryPlanOptions& options_;
  std::vector<Root> roots_;
  std::vector<ir::ValueRef> defined_by_;      ///< per root: the value that defines it
  std::vector<std::vector<int>> root_of_;     ///< per node, per output
  std::vector<std::vector<int64_t>> at_;      ///< per node, per output: the value's byte offset in its root
  int in_place_ = 0;
};

}  // namespace

std::vector<std::vector<ir::ValueRef>> plan_releases(const ir::Graph& g, const std::vector<int>& schedule,
                                                     const std::vector<ir::ValueRef>& keep) {
  std::map<ir::ValueRef, int> last_use;
  for (size_t step = 0; step < schedule.size(); ++step) {
    const ir::Node& node = g.node(schedule[step]);
    for (int i = 0; i < static_cast<int>(node.outputs.size()); ++i) {
      last_use.try_emplace(ir::ValueRef{node.id, i}, static_cast<int>(step));
    }
    for (const auto& v : node.inputs) last_use[v] = static_cast<int>(step);
  }
  for (const auto& k : keep) last_use.erase(k);
  std::vector<std::vector<ir::ValueRef>> release(schedule.size());
  for (const auto& [v, step] : last_use) release[static_cast<size_t>(step)].push_back(v);
  return release;
}

int view_input(const ir::Node& node) {
  switch (node.kind) {
    case ir::OpKind::reshape:
    case ir::OpKind::stop_gradient: return 0;
    case ir::OpKind::slice: return ops::slice_view_offset(node) ? 0 : -1;
    case ir::OpKind::assign_variable: return 1;
    default: return -1;
  }
}

bool writes_planned_outputs(const ir::Node& node) {
  if (backends::runs_in_runtime(node.kind) || node.kind == ir::OpKind::constant || view_input(node) >= 0 ||
      !node.regions.empty()) {
    return false;
  }
  for (const TensorType& t : node.outputs) {
    if (!is_static(t.shape)) return false;
  }
  return true;
}

MemoryPlan plan_memory(const ir::Graph& g, const std::vector<int>& schedule, const std::vector<int>& feeds,
                       const std::vector<ir::ValueRef>& targets, const MemoryPlanOptions& options) {
  return Planner(g, schedule, options).plan(feeds, targets);
}

}  // namespace tg::runtime
