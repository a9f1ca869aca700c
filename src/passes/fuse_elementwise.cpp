// Elementwise fusion: chains of elementwise nodes (unary, binary, ternary, cast families) whose
// outputs all have one shape become one fused_elementwise node, evaluated element by element in
// one kernel (inputs read once, intermediates kept in registers, only values used outside the
// chain written). DESIGN.md §2 "fusion".
//
// Grouping, in schedule (id) order: a fusible node joins the group of its latest-produced fusible
// input of the same shape when every consumer outside that group (data or control edges) of the
// group's members comes after the node; otherwise it starts a group. The fused node takes the
// place of the group's last member, so every value it reads is produced earlier and every reader
// of its outputs comes later; it takes the union of the members' control inputs (all earlier).
// Groups of one node stay as they are. Nodes with dynamic shapes are not fused. Region bodies are
// fused the same way (on copies).
#include <algorithm>
#include <map>

#include "passes/passes.h"

namespace tg::passes {
namespace {

constexpr size_t kMaxSteps = 96;
constexpr size_t kMaxInputs = 12;

// A cast from a 16-bit float to a wider type: passes::autocast's widened reads of values stored in
// 16 bits. It starts its own group (its readers join it) instead of joining its input's group,
// where the widened value would be written out for the readers.
bool widens_16bit_float(const ir::Graph& g, const ir::Node& n) {
  if (n.kind != ir::OpKind::cast || n.inputs.size() != 1) return false;
  const DType from = g.type(n.inputs[0]).dtype;
  return (from == DType::bf16 || from == DType::f16) && dtype_size(n.outputs[0].dtype) > 2;
}

}  // namespace

bool is_fusible_elementwise(const ir::Node& n) {
  const ir::OpFamily f = ir::op_info(n.kind).family;
  if (f != ir::OpFamily::unary && f != ir::OpFamily::binary && f != ir::OpFamily::ternary &&
      f != ir::OpFamily::cast) {
    return false;
  }
  if (!ir::has_trait(n.kind, ir::kElementwise) || !n.regions.empty()) return false;
  return n.outputs.size() == 1 && is_known(n.outputs[0].shape);  // symbols: equal when the same
}

namespace {

struct Group {
  std::vector<int> members;  // ids, increasing
  Shape shape;
};

}  // namespace

namespace {
bool fuse_graph(ir::Graph& g, std::vector<ir::ValueRef>& roots, std::vector<int>& root_ops, std::vector<int>& keep);
}  // namespace

bool fuse_elementwise(ir::Graph& g, std::vector<ir::ValueRef>& roots, std::vector<int>& root_ops,
                      std::vector<int>& keep) {
  // Region bodies first (each on its own copy: bodies may be shared with the user's graph), then
  // this graph.
  bool changed = run_on_region_bodies(g, fuse_elementwise);
  return fuse_graph(g, roots, root_ops, keep) || changed;
}

namespace {

bool fuse_graph(ir::Graph& g, std::vector<ir::ValueRef>& roots, std::vector<int>& root_ops,
                std::vector<int>& keep) {
  const int n = g.size();
  // Readers of each node (data and control edges), and whether a root reads it.
  std::vector<std::vector<int>> readers(static_cast<size_t>(n));
  for (const ir::Node& node : g.nodes()) {
    for (const ir::ValueRef& in : node.inputs) readers[in.node].push_back(node.id);
    for (int c : node.control_inputs) readers[c].push_back(node.id);
  }
  std::vector<char> is_root(static_cast<size_t>(n), 0);
  for (const ir::ValueRef& r : roots) is_root[r.node] = 1;
  for (int o : root_ops) is_root[o] = 1;

  std::vector<int> group_of(static_cast<size_t>(n), -1);
  std::vector<Group> groups;
  auto can_join = [&](const Group& gr, int id) {
    if (gr.members.size() >= kMaxSteps) return false;
    for (int m : gr.members) {
      for (int r : readers[m]) {
        if (group_of[r] != group_of[gr.members[0]] && r != id && r < id) return false;
      }
    }
    return true;
  };
  for (const ir::Node& node : g.nodes()) {
    if (!is_fusible_elementwise(node)) continue;
    int best = -1, best_producer = -1;
    const bool may_join_producer = !widens_16bit_float(g, node);
    for (const ir::ValueRef& in : node.inputs) {
      if (!may_join_producer) break;
      int gi = group_of[in.node];
      if (gi >= 0 && groups[gi].shape == node.outputs[0].shape && in.node > best_producer) {
        best = gi;
        best_producer = in.node;
      }
    }
    if (best < 0 || !can_join(groups[best], node.id)) {
      // No producer's group: a sibling's (an earlier node of this shape reading one of the same
      // values), so values read by several chains are loaded once.
      best = -1;
      for (const ir::ValueRef& in : node.inputs) {
        for (int r : readers[in.node]) {
          const int gi = r < node.id ? group_of[r] : -1;
          if (gi >= 0 && gi != best && groups[gi].shape == node.outputs[0].shape && can_join(groups[gi], node.id)) {
            best = gi;
            break;
          }
        }
        if (best >= 0) break;
      }
    }
    if (best >= 0) {
      groups[best].members.push_back(node.id);
      group_of[node.id] = best;
    } else {
      group_of[node.id] = static_cast<int>(groups.size());
      groups.push_back({{node.id}, node.outputs[0].shape});
    }
  }

  // Build each fused node (inputs, program, outputs); drop groups that cannot be fused.
  struct Fused {
    std::vector<ir::ValueRef> inputs;
    ir::FusedAttrs attrs;
    std::vector<TensorType> outputs;
    std::vector<int> output_member;  // member node per output
  };
  std::map<int, Fused> fused_at;  // last member id -> fused node
  bool changed = false;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    Group& gr = groups[gi];
    if (gr.members.size() < 2) {
      group_of[gr.members[0]] = -1;
      continue;
    }
    Fused f;
    f.attrs.shape = gr.shape;
    std::map<std::pair<int, int>, int> value_of;  // (node, index) -> program value
    std::vector<std::pair<int, int>> outside;
    for (int m : gr.members) {
      for (const ir::ValueRef& in : g.node(m).inputs) {
        if (group_of[in.node] == static_cast<int>(gi)) continue;
        auto key = std::make_pair(in.node, in.index);
        if (!value_of.count(key)) {
          value_of[key] = static_cast<int>(f.inputs.size());
          f.inputs.push_back(in);
        }
      }
    }
    if (f.inputs.size() > kMaxInputs) {
      for (int m : gr.members) group_of[m] = -1;
      continue;
    }
    const int num_inputs = static_cast<int>(f.inputs.size());
    for (size_t k = 0; k < gr.members.size(); ++k) {
      const ir::Node& m = g.node(gr.members[k]);
      ir::FusedStep step;
      step.kind = m.kind;
      step.dtype = m.outputs[0].dtype;
      for (const ir::ValueRef& in : m.inputs) step.args.push_back(value_of.at({in.node, in.index}));
      value_of[{m.id, 0}] = num_inputs + static_cast<int>(k);
      f.attrs.steps.push_back(std::move(step));
      bool used_outside = is_root[m.id] != 0;
      for (int r : readers[m.id]) used_outside = used_outside || group_of[r] != static_cast<int>(gi);
      if (used_outside) {
        f.attrs.outputs.push_back(num_inputs + static_cast<int>(k));
        f.outputs.push_back(m.outputs[0]);
        f.output_member.push_back(m.id);
      }
    }
    fused_at[gr.members.back()] = std::move(f);
    changed = true;
  }
  if (!changed) return false;

  // Rebuild the node list with each fused node at its group's last member.
  std::vector<int> remap(static_cast<size_t>(n), -1);
  std::map<int, std::pair<int, int>> member_value;  // member id -> (new node, output index)
  std::deque<ir::Node> out;
  auto map_value = [&](ir::ValueRef v) {
    if (group_of[v.node] >= 0) {
      auto [node, index] = member_value.at(v.node);
      return ir::ValueRef{node, index};
    }
    return ir::ValueRef{remap[v.node], v.index};
  };
  for (int id = 0; id < n; ++id) {
    if (group_of[id] >= 0) {
      auto it = fused_at.find(id);
      if (it == fused_at.end()) continue;  // an earlier member: emitted with the last one
      Fused& f = it->second;
      ir::Node node;
      node.id = static_cast<int>(out.size());
      node.kind = ir::OpKind::fused_elementwise;
      for (const ir::ValueRef& in : f.inputs) node.inputs.push_back(map_value(in));
      // The members' control inputs (all run before the last member, where this node goes).
      for (int m : groups[group_of[id]].members) {
        for (int c : g.node(m).control_inputs) {
          if (group_of[c] == group_of[id]) continue;
          int rc = remap[c];
          if (std::find(node.control_inputs.begin(), node.control_inputs.end(), rc) == node.control_inputs.end()) {
            node.control_inputs.push_back(rc);
          }
        }
      }
      node.outputs = f.outputs;
      node.attrs = std::move(f.attrs);
      node.name = g.node(id).name;
      for (size_t k = 0; k < f.output_member.size(); ++k) {
        member_value[f.output_member[k]] = {node.id, static_cast<int>(k)};
      }
      const int new_id = node.id;
      for (int m : groups[group_of[id]].members) remap[m] = new_id;
      out.push_back(std::move(node));
      continue;
    }
    ir::Node node = std::move(g.node(id));
    node.id = static_cast<int>(out.size());
    remap[id] = node.id;
    for (ir::ValueRef& in : node.inputs) in = map_value(in);
    for (int& c : node.control_inputs) c = remap[c];
    out.push_back(std::move(node));
  }
  g.nodes() = std::move(out);
  for (ir::ValueRef& r : roots) r = map_value(r);
  for (int& o : root_ops) o = remap[o];
  for (int& k : keep) k = remap[k];
  return true;
}

}  // namespace
}  // namespace tg::passes
