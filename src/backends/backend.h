// The narrow contract every backend implements: say which nodes it supports, lower a planned
// graph into a program, and run that program.
#pragma once
#include <memory>
#include <span>
#include <vector>

#include "ir/graph.h"
#include "tg/tensor_data.h"

namespace tg::backends {

/// A graph ready for lowering: dead code removed, every type static, a schedule, and the buffer
/// plan (which values die after which step).
struct PlannedGraph {
  std::shared_ptr<const ir::Graph> graph;
  std::vector<int> schedule;                              ///< node ids in execution order
  std::vector<int> feed_nodes;                            ///< placeholder node per feed, feed order
  std::vector<ir::ValueRef> targets;                      ///< results, in target order
  std::vector<std::vector<ir::ValueRef>> release_after;   ///< per schedule step
  ComputePrecision precision = ComputePrecision::f32;     ///< from CompileOptions
};

/// A lowered, immutable program. run is thread-safe.
class Program {
 public:
  virtual ~Program() = default;
  /// Runs with one value per feed (already validated; on any device: the program moves them to
  /// its own) and returns the targets.
  virtual std::vector<TensorData> run(std::span<const TensorData> feeds) const = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual Device device() const = 0;
  /// True when this backend can run `node` with its current types.
  virtual bool supports(const ir::Node& node) const = 0;
  virtual std::unique_ptr<Program> lower(std::shared_ptr<const PlannedGraph> plan) const = 0;
  /// True when compile should run the elementwise fusion pass for this backend (TG_FUSION=0/1
  /// overrides).
  virtual bool fuses_elementwise() const { return false; }
};

/// The backend for `device`; raises tg::Error(unsupported) when the build has none.
const Backend& backend_for(Device device);

}  // namespace tg::backends
