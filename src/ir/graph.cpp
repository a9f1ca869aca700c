#include "ir/graph.h"

#include <algorithm>

namespace tg::ir {

int Graph::add_node(OpKind kind, std::vector<ValueRef> inputs, Attrs attrs,
                    std::vector<TensorType> outputs, std::string name) {
  Node n;
  n.id = size();
  n.kind = kind;
  n.attrs = std::move(attrs);
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  n.name = std::move(name);
  for (const auto& scope : control_scopes_) {
    for (int op : scope) {
      if (std::find(n.control_inputs.begin(), n.control_inputs.end(), op) == n.control_inputs.end())
        n.control_inputs.push_back(op);
    }
  }
  nodes_.push_back(std::move(n));
  return nodes_.back().id;
}

}  // namespace tg::ir
