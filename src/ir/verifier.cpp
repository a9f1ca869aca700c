#include <fmt/format.h>

#include "ir/graph.h"
#include "tg/error.h"

namespace tg::ir {
namespace {

[[noreturn]] void broken(const Node& n, const std::string& what) {
  throw Error(ErrorCode::internal,
              fmt::format("[verify] node %{} ({}): {}", n.id, op_name(n.kind), what));
}

}  // namespace

void verify(const Graph& g) {
  int position = 0;
  for (const Node& n : g.nodes()) {
    if (static_cast<int>(n.kind) >= kNumOpKinds) {
      throw Error(ErrorCode::internal, fmt::format("[verify] node %{}: invalid op kind {}", n.id,
                                                   static_cast<int>(n.kind)));
    }
    if (n.id != position) broken(n, fmt::format("id differs from its position {}", position));
    ++position;
    const OpInfo& info = op_info(n.kind);
    if (info.arity >= 0 && static_cast<int>(n.inputs.size()) != info.arity) {
      broken(n, fmt::format("has {} inputs, ops.def says {}", n.inputs.size(), info.arity));
    }
    if (info.arity < 0 && n.inputs.empty()) broken(n, "variadic op without inputs");
    for (const ValueRef& v : n.inputs) {
      if (v.node < 0 || v.node >= n.id) broken(n, fmt::format("input %{} is not an earlier node", v.node));
      if (v.index < 0 || v.index >= static_cast<int>(g.node(v.node).outputs.size())) {
        broken(n, fmt::format("input %{}:{} does not exist", v.node, v.index));
      }
    }
    for (int c : n.control_inputs) {
      if (c < 0 || c >= n.id) broken(n, fmt::format("control input %{} is not an earlier node", c));
    }
    if (n.outputs.empty()) broken(n, "has no outputs");
    for (const Region& r : n.regions) {
      if (!r.body) broken(n, "region without a body");
      verify(*r.body);
      for (int p : r.params) {
        if (p < 0 || p >= r.body->size() || r.body->node(p).kind != OpKind::placeholder) {
          broken(n, fmt::format("region parameter %{} is not a placeholder of its body", p));
        }
      }
      for (const ValueRef& v : r.results) {
        if (v.node < 0 || v.node >= r.body->size() ||
            v.index < 0 || v.index >= static_cast<int>(r.body->node(v.node).outputs.size())) {
          broken(n, fmt::format("region result %{}:{} outside its body", v.node, v.index));
        }
      }
    }
  }
}

}  // namespace tg::ir
