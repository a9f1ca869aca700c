// Common-subexpression elimination: a node that repeats an earlier node (same op, attributes,
// inputs and outputs, no side effects, no regions) is replaced by it when the earlier node's
// control inputs are among its own; the control inputs the earlier node lacks move to the
// replaced node's readers (a target's go to the root ops), so every ordering stays and every side
// effect it kept alive still runs. This merges the statistics an inlined backward branch recomputes: its
// nodes are all ordered after the forward branch's side effects.
// Covers small host constants and fills (compared by exact value) and the op families whose
// attributes compare exactly through their printed form (elementwise ops, reductions, shape
// views, casts, start-of-run variable values); the rest is left alone.
#include <algorithm>
#include <map>
#include <string>
#include <tuple>

#include <fmt/format.h>

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
  if (n.kind == ir::OpKind::fill) {  // the printed form rounds; fmt's "{}" is exact (shortest round trip)
    return fmt::format("value={}", std::get<ir::FillAttrs>(n.attrs).value);
  }
  if (!small_constant(n)) return ir::attrs_to_string(n.attrs);
  const TensorData& v = std::get<ir::ConstantAttrs>(n.attrs).value;
  return v.type().to_string() + std::string(static_cast<const char*>(v.storage_ptr()), v.nbytes());
}

bool comparable(const ir::Node& n) {
  if (!n.regions.empty() || ir::has_trait(n.kind, ir::kSideEffect)) return false;
  if (small_constant(n) || (n.kind == ir::OpKind::fill && std::holds_alternative<ir::FillAttrs>(n.attrs))) return true;
  if (n.kind == ir::OpKind::placeholder || n.kind == ir::OpKind::constant) return false;
  return std::holds_alternative<ir::NoAttrs>(n.attrs) || std::holds_alternative<ReduceDesc>(n.attrs) ||
         std::holds_alternative<ir::CastAttrs>(n.attrs) || std::holds_alternative<ir::ReshapeAttrs>(n.attrs) ||
         std::holds_alternative<ir::BroadcastAttrs>(n.attrs) || std::holds_alternative<ir::TransposeAttrs>(n.attrs) ||
         (n.kind == ir::OpKind::variable && std::holds_alternative<ir::VariableAttrs>(n.attrs));
}

}  // namespace

bool eliminate_common_subexpressions(ir::Graph& g, std::vector<ir::ValueRef>& roots, std::vector<int>& root_ops,
                                     std::vector<int>& keep) {
  using Key = std::tuple<ir::OpKind, std::string, std::vector<ir::ValueRef>>;
  std::map<Key, std::vector<int>> seen;  // earlier nodes by key (their control inputs may differ)
  const size_t n_nodes = static_cast<size_t>(g.size());
  std::vector<int> same(n_nodes);
  std::vector<std::vector<int>> carried(n_nodes);  // a replaced node's control inputs its replacement lacks
  auto add_unique = [](std::vector<int>& to, const std::vector<int>& from) {
    for (int c : from) {
      if (std::find(to.begin(), to.end(), c) == to.end()) to.push_back(c);
    }
  };
  bool changed = false;
  for (ir::Node& n : g.nodes()) {
    same[static_cast<size_t>(n.id)] = n.id;
    // A reader of a replaced node keeps that node's ordering: its control inputs move to the reader.
    std::vector<int> inherited;
    for (ir::ValueRef& in : n.inputs) {
      add_unique(inherited, carried[static_cast<size_t>(in.node)]);
      in.node = same[static_cast<size_t>(in.node)];
    }
    for (int& c : n.control_inputs) {
      add_unique(inherited, carried[static_cast<size_t>(c)]);
      c = same[static_cast<size_t>(c)];
    }
    std::vector<int> controls;
    add_unique(controls, n.control_inputs);
    add_unique(controls, inherited);
    n.control_inputs = std::move(controls);
    if (!comparable(n)) continue;
    // A pure node's value does not depend on when it runs: an earlier equal node whose control
    // inputs are among this one's replaces it (one with others could run after this node's readers).
    std::vector<int>& earlier = seen[Key{n.kind, attrs_key(n), n.inputs}];
    auto covered = [&](int id) {
      const ir::Node& b = g.node(id);
      return b.outputs == n.outputs && std::all_of(b.control_inputs.begin(), b.control_inputs.end(), [&](int c) {
               return std::find(n.control_inputs.begin(), n.control_inputs.end(), c) != n.control_inputs.end();
             });
    };
    const auto it = std::find_if(earlier.begin(), earlier.end(), covered);
    if (it == earlier.end()) {
      earlier.push_back(n.id);
      continue;
    }
    const ir::Node& b = g.node(*it);
    for (int c : n.control_inputs) {
      if (std::find(b.control_inputs.begin(), b.control_inputs.end(), c) == b.control_inputs.end()) {
        carried[static_cast<size_t>(n.id)].push_back(c);
      }
    }
    same[static_cast<size_t>(n.id)] = *it;
    changed = true;
  }
  if (!changed) return false;
  // A replaced target or target op: the ops it was ordered after stay in the run.
  std::vector<int> kept_ops;
  for (ir::ValueRef& r : roots) {
    add_unique(kept_ops, carried[static_cast<size_t>(r.node)]);
    r.node = same[static_cast<size_t>(r.node)];
  }
  for (int& o : root_ops) {
    add_unique(kept_ops, carried[static_cast<size_t>(o)]);
    o = same[static_cast<size_t>(o)];
  }
  add_unique(root_ops, kept_ops);
  eliminate_dead_code(g, roots, root_ops, keep);
  return true;
}

}  // namespace tg::passes
