#include "ir/regions.h"

#include <algorithm>

namespace tg::ir {

bool has_side_effects(const Node& node) {
  if (has_trait(node.kind, kSideEffect)) return true;
  for (const Region& r : node.regions) {
    if (!r.body) continue;
    for (const Node& n : r.body->nodes()) {
      if (has_side_effects(n)) return true;
    }
  }
  return false;
}

void prune_region(Region& region, bool keep_side_effects) {
  Graph& g = *region.body;
  const int n = g.size();
  std::vector<char> live(static_cast<size_t>(n), 0);
  std::vector<int> stack(region.params.begin(), region.params.end());
  for (const ValueRef& v : region.results) stack.push_back(v.node);
  if (keep_side_effects) {
    for (const Node& node : g.nodes()) {
      if (has_side_effects(node)) stack.push_back(node.id);
    }
  }
  while (!stack.empty()) {
    int id = stack.back();
    stack.pop_back();
    if (live[id]) continue;
    live[id] = 1;
    const Node& node = g.node(id);
    for (const ValueRef& in : node.inputs) stack.push_back(in.node);
    for (int c : node.control_inputs) stack.push_back(c);
  }
  if (std::all_of(live.begin(), live.end(), [](char c) { return c != 0; })) return;
  std::vector<int> remap(static_cast<size_t>(n), -1);
  std::deque<Node> kept;
  for (int id = 0; id < n; ++id) {
    if (!live[id]) continue;
    remap[id] = static_cast<int>(kept.size());
    Node node = std::move(g.node(id));
    node.id = remap[id];
    for (ValueRef& in : node.inputs) in.node = remap[in.node];
    for (int& c : node.control_inputs) c = remap[c];
    kept.push_back(std::move(node));
  }
  g.nodes() = std::move(kept);
  for (int& p : region.params) p = remap[p];
  for (ValueRef& v : region.results) v.node = remap[v.node];
}

Region empty_region(const Graph& outer) {
  Region r;
  r.body = std::make_shared<Graph>(outer.variables());
  return r;
}

int add_region_param(Region& region, const TensorType& type, std::string name) {
  int id = region.body->add_node(OpKind::placeholder, {}, NoAttrs{}, {type}, std::move(name));
  region.params.push_back(id);
  return id;
}

int param_source(const Node& node, size_t region, size_t param) {
  const int p = static_cast<int>(param);
  const int inputs = static_cast<int>(node.inputs.size());
  const auto* loop = std::get_if<LoopAttrs>(&node.attrs);
  switch (node.kind) {
    case OpKind::if_else:
      return p + 1 < inputs ? p + 1 : -1;
    case OpKind::for_loop:
      return p >= 1 && p < inputs ? p : -1;
    case OpKind::while_loop: {
      if (region == 0) return p < inputs ? p : -1;
      if (loop == nullptr || region >= node.regions.size()) return -1;
      int params = static_cast<int>(node.regions[region].params.size());
      int captures = inputs - static_cast<int>(loop->num_carried);
      int first_capture = params - captures;
      return p >= first_capture && first_capture >= 0
                 ? static_cast<int>(loop->num_carried) + p - first_capture
                 : -1;
    }
    default:
      return -1;
  }
}

std::string region_name(OpKind kind, size_t index) {
  switch (kind) {
    case OpKind::if_else:
      return index == 0 ? "then" : "else";
    case OpKind::for_loop:
      return "body";
    case OpKind::while_loop:
      return index == 0 ? "before" : "after";
    default:
      return std::to_string(index);
  }
}

}  // namespace tg::ir
