#include "passes/passes.h"

namespace tg::passes {

bool eliminate_dead_code(ir::Graph& g, std::vector<ir::ValueRef>& roots, std::vector<int>& root_ops,
                         std::vector<int>& keep) {
  const int n = g.size();
  std::vector<char> live(static_cast<size_t>(n), 0);
  std::vector<int> stack;
  for (const auto& v : roots) stack.push_back(v.node);
  for (int o : root_ops) stack.push_back(o);
  for (int k : keep) stack.push_back(k);
  while (!stack.empty()) {
    int id = stack.back();
    stack.pop_back();
    if (live[id]) continue;
    live[id] = 1;
    const ir::Node& node = g.node(id);
    for (const auto& in : node.inputs) stack.push_back(in.node);
    for (int c : node.control_inputs) stack.push_back(c);
  }
  std::vector<int> remap(static_cast<size_t>(n), -1);
  std::deque<ir::Node> kept;
  for (int id = 0; id < n; ++id) {
    if (!live[id]) continue;
    remap[id] = static_cast<int>(kept.size());
    ir::Node node = std::move(g.node(id));
    node.id = remap[id];
    for (auto& in : node.inputs) in.node = remap[in.node];
    for (int& c : node.control_inputs) c = remap[c];
    kept.push_back(std::move(node));
  }
  bool changed = static_cast<int>(kept.size()) != n;
  g.nodes() = std::move(kept);
  for (auto& v : roots) v.node = remap[v.node];
  for (int& o : root_ops) o = remap[o];
  for (int& k : keep) k = remap[k];
  return changed;
}

}  // namespace tg::passes
