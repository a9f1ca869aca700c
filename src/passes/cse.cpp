// Common-subexpression elimination: a node that repeats an earlier node (same op, attributes,
// inputs and control inputs, one output or more, no side effects, no regions) is replaced by it.
// Covers the op families whose attributes compare exactly through their printed form (elementwise
// ops, reductions, shape views, casts, start-of-run variable values); constants, fills and the rest are left
// alone. After branch inlining this drops the forward statistics that autodiff's backward branch
// of batch norm computes again.
#include <map>
#include <string>
#include <tuple>

#include "passes/passes.h"

namespace tg::passes {
namespace {

constexpr size_t kMaxConstantBytes = 256;

/// A small host constant's exact identity: dtype, shape and bytes.
bool small_constant(const ir::Node& n) {
  if (n.kind != ir::OpKind::constant) return false;
  const TensorData& v = std::get<ir::ConstantAttrs>(n.attrs).value;
  return v.device().is_cpu() && v.nbytes() <= kMaxConstantBytes;
}

std::string attrs_key(const ir::Node& n) {
  if (!small_constant(n)) return ir::attrs_to_string(n.attrs);
  const TensorData& v = std::get<ir::ConstantAttrs>(n.attrs).value;
  return v.type().to_string() + std::string(static_cast<const char*>(v.storage_ptr()), v.nbytes());
}

bool comparable(const ir::Node& n) {
  if (!n.regions.empty() || ir::has_trait(n.kind, ir::kSideEffect)) return false;
  if (small_constant(n)) return true;
  if (n.kind == ir::OpKind::placeholder || n.kind == ir::OpKind::constant || n.kind == ir::OpKind::fill) return false;
  return std::holds_alternative<ir::NoAttrs>(n.attrs) || std::holds_alternative<ReduceDesc>(n.attrs) ||
         std::holds_alternative<ir::CastAttrs>(n.attrs) || std::holds_alternative<ir::ReshapeAttrs>(n.attrs) ||
         std::holds_alternative<ir::BroadcastAttrs>(n.attrs) || std::holds_alternative<ir::TransposeAttrs>(n.attrs) ||
         (n.kind == ir::OpKind::variable && std::holds_alternative<ir::VariableAttrs>(n.attrs));
}

}  // namespace

bool eliminate_common_subexpressions(ir::Graph& g, std::vector<ir::ValueRef>& roots, std::vector<int>& root_ops,
                                     std::vector<int>& keep) {
  using Key = std::tuple<ir::OpKind, std::string, std::vector<ir::ValueRef>, std::vector<int>>;
  std::map<Key, int> seen;
  std::vector<int> same(static_cast<size_t>(g.size()));
  bool changed = false;
  for (ir::Node& n : g.nodes()) {
    same[static_cast<size_t>(n.id)] = n.id;
    for (ir::ValueRef& in : n.inputs) in.node = same[static_cast<size_t>(in.node)];
    for (int& c : n.control_inputs) c = same[static_cast<size_t>(c)];
    if (!comparable(n)) continue;
    Key key{n.kind, attrs_key(n), n.inputs, n.control_inputs};
    auto [it, added] = seen.emplace(std::move(key), n.id);
    if (added || g.node(it->second).outputs != n.outputs) continue;
    same[static_cast<size_t>(n.id)] = it->second;
    changed = true;
  }
  if (!changed) return false;
  for (ir::ValueRef& r : roots) r.node = same[static_cast<size_t>(r.node)];
  for (int& o : root_ops) o = same[static_cast<size_t>(o)];
  eliminate_dead_code(g, roots, root_ops, keep);
  return true;
}

}  // namespace tg::passes
