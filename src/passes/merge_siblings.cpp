// Sibling merging (passes.h: merge_siblings), after the fusion passes: two elementwise programs of
// one static shape, neither reading the other's results through any path, become one
// fused_elementwise node computing the outputs of both: one kernel instead of two. Horizontal
// fusion; an attention's query, key and value bias adds (three kernels -> one).
//
// In schedule (id) order, each candidate B is tried against the latest earlier candidate A of its
// shape (A may be a merge already). Candidates: fused_elementwise without row reductions or one
// fusible elementwise node (program_of), static shape of at most 2^20 elements (launch-bound
// kernels), no integer division, no control inputs, no node waiting on it through a control edge.
// Merged when B does not depend on A (data or control edges) and every reader of A comes after B,
// reshapes of A (views, no control edges) moved to just after B with their own reshapes; the
// merged program within fuse_elementwise's limits (96 steps, 12 inputs). The merged node takes B's
// place: its inputs come before it, A's and B's readers after it. Then dead-code elimination
// removes A.
#include <algorithm>
#include <map>
#include <set>

#include "ir/fused_rows.h"
#include "passes/passes.h"
#include "passes/program_builder.h"

namespace tg::passes {
namespace {

constexpr size_t kMaxSteps = 96;
constexpr size_t kMaxInputs = 12;
// Programs of at most this many elements: kernels whose launch, not their bytes, costs the most
// (batch-1 inference); larger ones keep their own kernels (and occupancy).
constexpr int64_t kMaxElements = int64_t{1} << 20;

struct Users {
  std::vector<std::vector<int>> data;     // node -> nodes reading one of its outputs
  std::vector<bool> control_waited;       // node -> some node has it as a control input
};

Users users_of(const ir::Graph& g) {
  const auto count = static_cast<size_t>(g.size());
  Users u{std::vector<std::vector<int>>(count), std::vector<bool>(count)};
  for (const ir::Node& n : g.nodes()) {
    for (const ir::ValueRef& v : n.inputs) {
      auto& r = u.data[static_cast<size_t>(v.node)];
      if (r.empty() || r.back() != n.id) r.push_back(n.id);
    }
    for (int c : n.control_inputs) u.control_waited[static_cast<size_t>(c)] = true;
  }
  return u;
}

std::optional<Prog> candidate(const ir::Node& n, const Users& u) {
  if (!n.control_inputs.empty() || !n.regions.empty() || u.control_waited[static_cast<size_t>(n.id)]) {
    return std::nullopt;
  }
  if (n.kind == ir::OpKind::fused_reduce) return std::nullopt;
  std::optional<Prog> p = program_of(n);
  if (!p || !is_static(p->attrs.shape) || num_elements(p->attrs.shape) > kMaxElements || has_int_division(p->attrs) ||
      ir::has_row_reductions(p->attrs)) {
    return std::nullopt;
  }
  for (const TensorType& t : n.outputs) {
    if (t.shape != p->attrs.shape) return std::nullopt;
  }
  return p;
}

/// Whether b reads a's results through any path of data or control edges (ids between them).
bool depends(const ir::Graph& g, int a, int b) {
  std::vector<int> stack{b};
  std::set<int> seen;
  while (!stack.empty()) {
    const int id = stack.back();
    stack.pop_back();
    const ir::Node& n = g.node(id);
    auto visit = [&](int src) {
      if (src == a) return true;
      if (src > a && seen.insert(src).second) stack.push_back(src);
      return false;
    };
    for (const ir::ValueRef& v : n.inputs) {
      if (visit(v.node)) return true;
    }
    for (int c : n.control_inputs) {
      if (visit(c)) return true;
    }
  }
  return false;
}

bool is_view(const ir::Node& n) {
  return n.kind == ir::OpKind::reshape && n.control_inputs.empty() && n.regions.empty();
}

/// The reshapes of a (transitively) before b, to move after b; false when a reader of a (not such a
/// reshape) comes before b or waits on one through a control edge.
bool views_to_move(const ir::Graph& g, const Users& u, int a, int b, std::vector<int>& moved) {
  std::vector<int> stack{a};
  while (!stack.empty()) {
    const int id = stack.back();
    stack.pop_back();
    for (int r : u.data[static_cast<size_t>(id)]) {
      if (r > b) continue;
      const ir::Node& n = g.node(r);
      if (!is_view(n) || u.control_waited[static_cast<size_t>(r)]) return false;
      moved.push_back(r);
      stack.push_back(r);
    }
  }
  std::sort(moved.begin(), moved.end());
  moved.erase(std::unique(moved.begin(), moved.end()), moved.end());
  return true;
}

std::optional<Prog> merged_program(const Prog& a, const Prog& b) {
  Builder bd;
  std::vector<int> outs;
  for (const Prog* p : {&a, &b}) {
    std::map<int, int> memo;
    auto leaf = [&](int i) { return bd.input(p->inputs[static_cast<size_t>(i)]); };
    for (int o : p->attrs.outputs) outs.push_back(bd.copy(*p, o, memo, leaf));
  }
  if (bd.num_steps() > kMaxSteps || bd.num_inputs() > kMaxInputs) return std::nullopt;
  return bd.finish(a.attrs, outs);
}

/// Puts the merged node at b's place (outputs: a's, then b's), points a's readers at it, moves
/// `moved` (reshapes of a) to just after it, and renumbers.
void merge(ir::Graph& g, int a, int b, Prog p, const std::vector<int>& moved, std::vector<ir::ValueRef>& roots,
           std::vector<int>& root_ops, std::vector<int>& keep) {
  const int na = static_cast<int>(g.node(a).outputs.size());
  std::vector<TensorType> outs = g.node(a).outputs;
  for (const TensorType& t : g.node(b).outputs) outs.push_back(t);
  auto remap_value = [&](ir::ValueRef& v) {
    if (v.node == b) v.index += na;
    else if (v.node == a) v.node = b;
  };
  for (ir::Node& n : g.nodes()) {
    if (n.id != b) for (ir::ValueRef& v : n.inputs) remap_value(v);
  }
  for (ir::ValueRef& v : roots) remap_value(v);
  ir::Node& m = g.node(b);
  m.kind = ir::OpKind::fused_elementwise;
  m.inputs = std::move(p.inputs);
  m.attrs = std::move(p.attrs);
  m.outputs = std::move(outs);
  if (moved.empty()) return;
  // New order: the moved reshapes right after b (their readers all come later).
  std::vector<int> order;
  order.reserve(static_cast<size_t>(g.size()));
  const std::set<int> move_set(moved.begin(), moved.end());
  for (int id = 0; id < g.size(); ++id) {
    if (move_set.count(id)) continue;
    order.push_back(id);
    if (id == b) order.insert(order.end(), moved.begin(), moved.end());
  }
  std::vector<int> to(static_cast<size_t>(g.size()));
  for (size_t i = 0; i < order.size(); ++i) to[static_cast<size_t>(order[i])] = static_cast<int>(i);
  std::deque<ir::Node> nodes;
  for (int id : order) {
    ir::Node n = std::move(g.node(id));
    n.id = to[static_cast<size_t>(id)];
    for (ir::ValueRef& v : n.inputs) v.node = to[static_cast<size_t>(v.node)];
    for (int& c : n.control_inputs) c = to[static_cast<size_t>(c)];
    nodes.push_back(std::move(n));
  }
  g.nodes() = std::move(nodes);
  for (ir::ValueRef& v : roots) v.node = to[static_cast<size_t>(v.node)];
  for (int& r : root_ops) r = to[static_cast<size_t>(r)];
  for (int& k : keep) k = to[static_cast<size_t>(k)];
}

/// One merge, the first found in order; false when none.
bool merge_one(ir::Graph& g, std::vector<ir::ValueRef>& roots, std::vector<int>& root_ops, std::vector<int>& keep) {
  const Users u = users_of(g);
  std::map<Shape, std::pair<int, Prog>> latest;  // shape -> the latest candidate
  for (const ir::Node& n : g.nodes()) {
    std::optional<Prog> pb = candidate(n, u);
    if (!pb) continue;
    auto it = latest.find(pb->attrs.shape);
    if (it != latest.end()) {
      const int a = it->second.first;
      std::vector<int> moved;
      if (!depends(g, a, n.id) && views_to_move(g, u, a, n.id, moved)) {
        if (std::optional<Prog> p = merged_program(it->second.second, *pb)) {
          merge(g, a, n.id, std::move(*p), moved, roots, root_ops, keep);
          eliminate_dead_code(g, roots, root_ops, keep);
          return true;
        }
      }
    }
    Shape key = pb->attrs.shape;
    latest.insert_or_assign(std::move(key), std::make_pair(n.id, std::move(*pb)));
  }
  return false;
}

}  // namespace

bool merge_siblings(ir::Graph& g, std::vector<ir::ValueRef>& roots, std::vector<int>& root_ops,
                    std::vector<int>& keep) {
  bool changed = false;
  while (merge_one(g, roots, root_ops, keep)) changed = true;
  return changed;
}

}  // namespace tg::passes
