#include "ops/registry.h"
#include "passes/passes.h"

namespace tg::passes {

bool infer_types(ir::Graph& g) {
  bool changed = false;
  for (ir::Node& node : g.nodes()) {
    std::vector<TensorType> in;
    in.reserve(node.inputs.size());
    for (const auto& v : node.inputs) in.push_back(g.type(v));
    std::vector<TensorType> out = ops::infer_types(node, in);
    if (out != node.outputs) {
      node.outputs = std::move(out);
      changed = true;
    }
  }
  return changed;
}

}  // namespace tg::passes
