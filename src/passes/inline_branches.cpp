// Constant-predicate if_else inlining: an if_else whose predicate is a constant (a placeholder the
// caller bound to a value at compile time, e.g. a model's is_training) is replaced by the body of
// the branch it takes. The branch's nodes join the outer graph in the if_else's place: parameters
// read the values the if_else bound them to, the if_else's results become the branch's results,
// the if_else's control inputs order every inlined node, and a control edge on the if_else becomes
// edges on the branch's result producers and side-effect nodes. Later passes then see across the
// former region boundary (fusion of batch norm's apply with the relu after it, one copy of values
// the forward and backward branches both compute, see passes::eliminate_common_subexpressions).
#include <algorithm>

#include "ir/regions.h"
#include "passes/passes.h"
#include "passes/splice.h"

namespace tg::passes {
namespace {

/// The branch (0 then, 1 else) a constant-predicate if_else takes, or -1.
int taken_branch(const ir::Graph& g, const ir::Node& n) {
  if (n.kind != ir::OpKind::if_else || n.inputs.empty() || n.regions.size() != 2) return -1;
  const ir::Node& p = g.node(n.inputs[0].node);
  if (p.kind != ir::OpKind::constant) return -1;
  const TensorData& v = std::get<ir::ConstantAttrs>(p.attrs).value;
  if (v.dtype() != DType::bool_ || v.num_elements() != 1) return -1;
  return v.element_as_double(0) != 0 ? 0 : 1;
}

void inline_branch(ir::Graph& g, int target, int branch, std::vector<ir::ValueRef>& roots,
                   std::vector<int>& root_ops, std::vector<int>& keep) {
  const ir::Node ifn = g.node(target);  // a copy: the node list is rebuilt below
  const ir::Region& region = ifn.regions[static_cast<size_t>(branch)];
  const ir::Graph& body = *region.body;
  Splice splice(g, target);

  // The branch: parameters bound to the if_else's inputs, other nodes appended.
  Splice::Branch b = splice.bind_branch(ifn, static_cast<size_t>(branch));
  auto inner = [&](ir::ValueRef v) { return b.inner(v); };
  std::vector<int> order_after;  // the if_else's control inputs, remapped
  for (int c : ifn.control_inputs) order_after.push_back(splice.outer_node(c));
  std::vector<int> effects;  // inlined side-effect nodes
  for (const ir::Node& bn : body.nodes()) {
    if (b.is_param(bn.id)) continue;
    ir::Node node = bn;
    for (ir::ValueRef& in : node.inputs) in = inner(in);
    for (int& c : node.control_inputs) {
      c = b.is_param(c) ? b.param_value[static_cast<size_t>(c)].node : b.body_remap[static_cast<size_t>(c)];
    }
    for (int c : order_after) {
      if (std::find(node.control_inputs.begin(), node.control_inputs.end(), c) == node.control_inputs.end()) {
        node.control_inputs.push_back(c);
      }
    }
    const bool effect = ir::has_side_effects(node);
    b.body_remap[static_cast<size_t>(bn.id)] = splice.append(std::move(node));
    if (effect) effects.push_back(b.body_remap[static_cast<size_t>(bn.id)]);
  }
  std::vector<ir::ValueRef> results;
  for (const ir::ValueRef& r : region.results) results.push_back(inner(r));
  std::vector<int> done = effects;  // what a control edge on the if_else waits for
  for (const ir::ValueRef& r : results) {
    if (std::find(done.begin(), done.end(), r.node) == done.end()) done.push_back(r.node);
  }

  splice.finish(results, done, roots, root_ops, keep);
}

}  // namespace

bool inline_constant_branches(ir::Graph& g, std::vector<ir::ValueRef>& roots, std::vector<int>& root_ops,
                              std::vector<int>& keep) {
  bool changed = false;
  for (bool again = true; again;) {
    again = false;
    for (const ir::Node& node : g.nodes()) {
      const int branch = taken_branch(g, node);
      if (branch < 0) continue;
      inline_branch(g, node.id, branch, roots, root_ops, keep);
      changed = again = true;
      break;
    }
  }
  if (changed) eliminate_dead_code(g, roots, root_ops, keep);
  return changed;
}

}  // namespace tg::passes
