// Cheap branches as selects: an if_else whose two branches are a few elementwise ops (no side
// effects, nothing that can fail on the device, no regions) and whose predicate is a one-element
// bool becomes both branches inlined and one select per result:
//   if_else(p, then: f(x), else: g(x))  ->  select(reshape(p, []), f(x), g(x))
// Every element of a result is the taken branch's value computed by the same ops (a select never
// mixes the two), so values do not change; what changes is the cost on a GPU: the IF node of a
// recorded run costs ~9.5 us an execution on the H200 (CUDA 13.0, the control-flow benchmark's
// forif against forsel), far more than computing both sides of an elementwise branch, which
// elementwise fusion then folds into one kernel with the select and the predicate's small program.
// Run on backends that fuse, before type inference (which checks the rewritten nodes); region
// bodies too (an if_else in a loop body). TG_BRANCH_SELECT=0 keeps every if_else.
#include <algorithm>

#include "ir/regions.h"
#include "passes/passes.h"
#include "passes/splice.h"

namespace tg::passes {
namespace {

constexpr int kMaxBranchOps = 16;  // elementwise ops a branch may hold

bool int_division(const ir::Node& n) {
  const bool division = n.kind == ir::OpKind::div || n.kind == ir::OpKind::mod ||
                        n.kind == ir::OpKind::floor_mod || n.kind == ir::OpKind::floor_div;
  return division && !n.outputs.empty() && is_integer(n.outputs[0].dtype);
}

/// Whether every node of the branch is a parameter, a constant or a fusible elementwise op (at
/// most kMaxBranchOps, no control inputs, no integer division: its device check could fail on
/// the side not taken).
bool cheap_branch(const ir::Region& r) {
  int ops = 0;
  for (const ir::Node& n : r.body->nodes()) {
    if (n.kind == ir::OpKind::placeholder || n.kind == ir::OpKind::constant) continue;
    if (!is_fusible_elementwise(n) || !n.control_inputs.empty() || int_division(n)) return false;
    if (++ops > kMaxBranchOps) return false;
  }
  return true;
}

bool selectable(const ir::Graph& g, const ir::Node& n) {
  if (n.kind != ir::OpKind::if_else || n.regions.size() != 2 || n.inputs.empty()) return false;
  const TensorType& p = g.type(n.inputs[0]);
  if (p.dtype != DType::bool_ || !is_static(p.shape) || num_elements(p.shape) != 1) return false;
  for (const TensorType& t : n.outputs) {
    if (!is_static(t.shape)) return false;
  }
  for (const ir::Region& r : n.regions) {
    if (r.results.size() != n.outputs.size() || !cheap_branch(r)) return false;
  }
  return true;
}

void to_select(ir::Graph& g, int target, std::vector<ir::ValueRef>& roots, std::vector<int>& root_ops,
               std::vector<int>& keep) {
  const ir::Node ifn = g.node(target);  // a copy: the node list is rebuilt below
  Splice splice(g, target);
  auto outer = [&](ir::ValueRef v) { return splice.outer(v); };
  std::vector<int> order_after;  // the if_else's control inputs order everything it becomes
  for (int c : ifn.control_inputs) order_after.push_back(splice.outer_node(c));
  auto append = [&](ir::Node node) {
    for (int c : order_after) {
      if (std::find(node.control_inputs.begin(), node.control_inputs.end(), c) == node.control_inputs.end()) {
        node.control_inputs.push_back(c);
      }
    }
    return splice.append(std::move(node));
  };

  // Both branches: parameters bound to the if_else's inputs, other nodes appended.
  std::vector<ir::ValueRef> results[2];
  for (size_t branch = 0; branch < 2; ++branch) {
    const ir::Region& region = ifn.regions[branch];
    const ir::Graph& body = *region.body;
    Splice::Branch b = splice.bind_branch(ifn, branch);
    for (const ir::Node& bn : body.nodes()) {
      if (b.is_param(bn.id)) continue;
      ir::Node node = bn;
      for (ir::ValueRef& in : node.inputs) in = b.inner(in);
      b.body_remap[static_cast<size_t>(bn.id)] = append(std::move(node));
    }
    for (const ir::ValueRef& r : region.results) results[branch].push_back(b.inner(r));
  }

  // The predicate as a scalar (a [1, 1] predicate would broadcast the results to a higher rank).
  ir::ValueRef pred = outer(ifn.inputs[0]);
  if (!splice.node(pred.node).outputs[static_cast<size_t>(pred.index)].shape.empty()) {
    ir::Node r;
    r.kind = ir::OpKind::reshape;
    r.attrs = ir::ReshapeAttrs{Shape{}};
    r.inputs = {pred};
    r.outputs = {TensorType{Shape{}, DType::bool_}};
    pred = ir::ValueRef{append(std::move(r)), 0};
  }
  std::vector<ir::ValueRef> selects;
  std::vector<int> done;  // what a control edge on the if_else waits for
  for (size_t i = 0; i < ifn.outputs.size(); ++i) {
    ir::Node s;
    s.kind = ir::OpKind::select;
    s.inputs = {pred, results[0][i], results[1][i]};
    s.outputs = {ifn.outputs[i]};
    s.name = ifn.name;
    selects.push_back(ir::ValueRef{append(std::move(s)), 0});
    done.push_back(selects.back().node);
  }

  splice.finish(selects, done, roots, root_ops, keep);
}

}  // namespace

bool select_cheap_branches(ir::Graph& g, std::vector<ir::ValueRef>& roots, std::vector<int>& root_ops,
                           std::vector<int>& keep) {
  bool changed = run_on_region_bodies(g, select_cheap_branches);
  for (bool again = true; again;) {
    again = false;
    for (const ir::Node& node : g.nodes()) {
      if (!selectable(g, node)) continue;
      to_select(g, node.id, roots, root_ops, keep);
      changed = again = true;
      break;
    }
  }
  if (changed) eliminate_dead_code(g, roots, root_ops, keep);
  return changed;
}

}  // namespace tg::passes
