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
  for (const Node& n : g.nodes()) {
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
      for (const ValueRef& v : r.results) {
        if (v.node < 0 || v.node >= r.body->size()) broken(n, "region result outside its body");
      }
    }
  }
}

}  // namespace tg::ir
