#include "ops/control.h"
#include "ops/registry.h"
#include "passes/passes.h"

namespace tg::passes {

bool infer_types(ir::Graph& g) {
  bool changed = false;
  for (ir::Node& node : g.nodes()) {
    std::vector<TensorType> in;
    in.reserve(node.inputs.size());
    for (const auto& v : node.inputs) in.push_back(g.type(v));
    // Nodes with regions get copies of their bodies inferred for these input types.
    std::vector<TensorType> out =
        node.regions.empty() ? ops::infer_types(node, in) : ops::infer_node_types(node, in);
    if (out != node.outputs) {
      node.outputs = std::move(out);
      changed = true;
    }
  }
  return changed;
}

}  // namespace tg::passes
