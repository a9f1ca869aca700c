// Replacing one node of a graph by new nodes (passes that expand an if_else in place:
// inline_branches.cpp, select_branches.cpp). Nodes before the target keep their ids; new nodes are
// appended after them; finish() appends the nodes after the target, whose readers of the
// target's output k read results[k] and whose control edges on the target wait for `done`.
#pragma once
#include <algorithm>
#include <deque>
#include <vector>

#include "ir/graph.h"
#include "ir/regions.h"

namespace tg::passes {

class Splice {
 public:
  /// Moves g's nodes before `target` into the new node list (g's node `target` and later stay).
  Splice(ir::Graph& g, int target) : g_(g), target_(target), remap_(static_cast<size_t>(g.size()), -1) {
    for (int id = 0; id < target; ++id) {
      ir::Node node = std::move(g.node(id));
      node.id = static_cast<int>(out_.size());
      remap_[static_cast<size_t>(id)] = node.id;
      for (ir::ValueRef& in : node.inputs) in = outer(in);
      for (int& c : node.control_inputs) c = remap_[static_cast<size_t>(c)];
      out_.push_back(std::move(node));
    }
  }

  /// A value of a node before the target, in the new numbering.
  ir::ValueRef outer(ir::ValueRef v) const { return {remap_[static_cast<size_t>(v.node)], v.index}; }
  int outer_node(int id) const { return remap_[static_cast<size_t>(id)]; }
  /// Appends `node` (its inputs already in the new numbering); returns its id.
  int append(ir::Node node) {
    node.id = static_cast<int>(out_.size());
    out_.push_back(std::move(node));
    return out_.back().id;
  }
  const ir::Node& node(int id) const { return out_[static_cast<size_t>(id)]; }

  /// An if_else branch being copied in: its parameters stand for the if_else's inputs (in the new
  /// numbering); other body nodes map to where they were appended (set body_remap[id]).
  struct Branch {
    std::vector<ir::ValueRef> param_value;  ///< body node -> bound value, {-1, 0} when no parameter
    std::vector<int> body_remap;            ///< body node -> new node
    bool is_param(int id) const { return param_value[static_cast<size_t>(id)].node >= 0; }
    ir::ValueRef inner(ir::ValueRef v) const {
      const ir::ValueRef pv = param_value[static_cast<size_t>(v.node)];
      if (pv.node >= 0) return ir::ValueRef{pv.node, pv.index + v.index};
      return ir::ValueRef{body_remap[static_cast<size_t>(v.node)], v.index};
    }
  };
  /// Branch `branch` of if_else `ifn` (a node before the splice's target is read through outer()).
  Branch bind_branch(const ir::Node& ifn, size_t branch) const {
    const ir::Region& region = ifn.regions[branch];
    const size_t n = static_cast<size_t>(region.body->size());
    Branch b{std::vector<ir::ValueRef>(n, ir::ValueRef{-1, 0}), std::vector<int>(n, -1)};
    for (size_t p = 0; p < region.params.size(); ++p) {
      const int src = ir::param_source(ifn, branch, p);
      b.param_value[static_cast<size_t>(region.params[p])] = outer(ifn.inputs.at(static_cast<size_t>(src)));
    }
    return b;
  }

  /// Appends the nodes after the target and installs the new node list; remaps roots, root_ops
  /// and keep (none of which may be the target's node for values: they read `results`).
  void finish(const std::vector<ir::ValueRef>& results, const std::vector<int>& done, std::vector<ir::ValueRef>& roots,
              std::vector<int>& root_ops, std::vector<int>& keep) {
    const int n = g_.size();
    auto mapped = [&](ir::ValueRef v) { return v.node == target_ ? results.at(static_cast<size_t>(v.index)) : outer(v); };
    auto mapped_ops = [&](const std::vector<int>& ops) {
      std::vector<int> r;
      for (int c : ops) {
        const std::vector<int> to = c == target_ ? done : std::vector<int>{remap_[static_cast<size_t>(c)]};
        for (int t : to) {
          if (std::find(r.begin(), r.end(), t) == r.end()) r.push_back(t);
        }
      }
      return r;
    };
    for (int id = target_ + 1; id < n; ++id) {
      ir::Node node = std::move(g_.node(id));
      node.id = static_cast<int>(out_.size());
      remap_[static_cast<size_t>(id)] = node.id;
      for (ir::ValueRef& in : node.inputs) in = mapped(in);
      node.control_inputs = mapped_ops(node.control_inputs);
      out_.push_back(std::move(node));
    }
    g_.nodes() = std::move(out_);
    for (ir::ValueRef& r : roots) r = mapped(r);
    root_ops = mapped_ops(root_ops);
    for (int& k : keep) k = remap_[static_cast<size_t>(k)];
  }

 private:
  ir::Graph& g_;
  int target_;
  std::deque<ir::Node> out_;
  std::vector<int> remap_;  // old node -> new node (not the target)
};

}  // namespace tg::passes
