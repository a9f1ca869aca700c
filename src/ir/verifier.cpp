#include <fmt/format.h>

#include "ir/graph.h"
#include "ir/regions.h"
#include "tg/error.h"

namespace tg::ir {
namespace {

[[noreturn]] void broken(const Node& n, const std::string& what) {
  throw Error(ErrorCode::internal,
              fmt::format("[verify] node %{} ({}): {}", n.id, op_name(n.kind), what));
}

// The region layout of ops.def's control rows (see ir/regions.h and ops/control.cpp).
void verify_control(const Node& n) {
  size_t want = n.kind == OpKind::for_loop ? 1 : 2;
  if (n.regions.size() != want)
    broken(n, fmt::format("has {} regions, expected {}", n.regions.size(), want));
  const auto* loop = std::get_if<LoopAttrs>(&n.attrs);
  if (n.kind != OpKind::if_else && (loop == nullptr || loop->num_carried < 1 ||
                                    loop->num_carried + (n.kind == OpKind::for_loop ? 1 : 0) >
                                        static_cast<int64_t>(n.inputs.size()))) {
    broken(n, "loop without LoopAttrs or with more loop values than inputs");
  }
  // Every region ends with one parameter per captured value; for_loop and while_loop's before
  // have a parameter per input.
  size_t inputs = n.inputs.size();
  size_t need = n.kind == OpKind::if_else ? inputs - 1 : inputs;
  if (n.regions[0].params.size() != need) {
    broken(n, fmt::format("region 0 has {} parameters, expected {}", n.regions[0].params.size(),
                          need));
  }
  if (n.kind == OpKind::if_else && n.regions[1].params.size() != need) {
    broken(n, fmt::format("region 1 has {} parameters, expected {}", n.regions[1].params.size(),
                          need));
  }
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
    if (is_control_flow(n.kind)) verify_control(n);
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
