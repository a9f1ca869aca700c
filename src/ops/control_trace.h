// Turns the C++ blocks of if_else / for_loop / while_loop into regions: a block builds its ops in
// the outer graph as usual; afterwards the nodes it appended are moved into a region body and
// every outer value they read becomes a captured value (an input of the control-flow node and a
// parameter of each region).
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "tg/graph.h"

namespace tg::ops {

class BlockTracer {
 public:
  /// What finish() returns.
  struct Traced {
    std::vector<ir::Region> regions;  ///< one per traced block, in order
    std::vector<ir::ValueRef>
        captures;  ///< outer values read by the blocks (each region's last params)
    std::vector<int> control_inputs;  ///< outer ops the blocks' nodes had as control inputs
  };
  using Block = std::function<std::vector<Tensor>(const std::vector<Tensor>& params)>;

  BlockTracer(std::shared_ptr<ir::Graph> graph, std::string_view op);
  /// Restores the outer graph when finish() was not reached (a block or a check threw).
  ~BlockTracer();
  BlockTracer(const BlockTracer&) = delete;
  BlockTracer& operator=(const BlockTracer&) = delete;

  /// Traces one block: appends one placeholder per parameter type, calls `block` with their
  /// tensors and records its results. Returns the results' types. Raises tg::Error naming the op
  /// and `name` for an empty result or one of another graph.
  std::vector<TensorType> trace(std::string name, const std::vector<TensorType>& param_types,
                                const std::vector<std::string>& param_names, const Block& block);
  /// Forgets every block traced so far (for a new attempt with other parameter types).
  void reset();
  /// Moves the traced blocks into regions and restores the outer graph's size. Raises
  /// tg::Error(invalid_argument) for a block that uses a tensor of another block or creates a
  /// placeholder.
  Traced finish();

 private:
  struct Block_ {
    std::string name;
    int begin = 0, end = 0;
    std::vector<int> params;
    std::vector<ir::ValueRef> results;
  };
  void collect_captures(Traced& t) const;
  ir::Region extract(const Block_& b, const Traced& t, std::vector<int>& controls) const;
  ir::ValueRef map_value(ir::ValueRef v, const Block_& b, const std::vector<int>& remap,
                         const std::vector<int>& capture_params, const Traced& t, int user) const;
  const Block_* block_of(int node) const;

  std::shared_ptr<ir::Graph> g_;
  std::string op_;
  int start_;
  bool done_ = false;
  std::vector<Block_> blocks_;
};

}  // namespace tg::ops
